"""What the pages say about a course's health: the ledger's statuses and gates, and the
validator's result, read through the public API; unreadable is described, never raised."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from stay.settings import Settings
from stay.validate import Defect, validate_course

NO_LEDGER = "no ledger (not built by stay; `stay adopt` to track it)"
LEDGER_FILE = ".state/hashes.json"
"""Where course-format.md puts the hash ledger; without it no status means anything."""


@dataclass(frozen=True)
class Ledger:
    tracked: bool
    note: str | None
    """Why there are no statuses (no ledger, or it cannot be read); None when there are."""
    statuses: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    """path -> (status, the inputs that made it so), as ``stay.status`` derives them."""
    gates: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(state for state, _why in self.statuses.values()).items()))

    def status_of(self, path: str) -> tuple[str, tuple[str, ...]] | None:
        return self.statuses.get(path)


@dataclass(frozen=True)
class Validation:
    ran: bool
    note: str | None
    fails: int = 0
    warns: int = 0
    strict_fails: int = 0
    strict_warns: int = 0
    checks: int = 0
    defects: tuple[Defect, ...] = ()

    def for_path(self, path: str) -> tuple[Defect, ...]:
        return tuple(d for d in self.defects if d.path == path)


def read_ledger(course: Path, settings: Settings | None = None) -> Ledger:
    """Statuses and gate verdicts from ``stay.pipeline.status`` and ``gate_status``."""
    if not (course / LEDGER_FILE).is_file():
        return Ledger(tracked=False, note=NO_LEDGER)
    from stay.pipeline import gate_status, status

    slug, courses_dir = course.name, course.parent
    try:
        found = status(slug, courses_dir=courses_dir, settings=settings)
        gates = gate_status(slug, courses_dir=courses_dir, settings=settings)
    except Exception as exc:  # a damaged ledger or course must show on the page, not end the render
        return Ledger(tracked=True, note=f"statuses cannot be derived: {_one_line(exc)}")
    statuses = {str(path): (str(state), tuple(str(w) for w in why)) for path, (state, why) in found.items()}
    return Ledger(tracked=True, note=None, statuses=dict(sorted(statuses.items())),
                  gates={str(k): str(v) for k, v in gates.items()})


def run_validator(course: Path, data_dir: Path | None = None) -> Validation:
    """The validator's counts, non-strict and strict, and its defects (non-strict)."""
    try:
        report = validate_course(course, data_dir=data_dir)
        strict = validate_course(course, strict=True, data_dir=data_dir)
    except Exception as exc:  # e.g. missing data files: say so where the result would be
        return Validation(ran=False, note=f"the validator could not run: {_one_line(exc)}")
    return Validation(ran=True, note=None, fails=report.fails, warns=report.warns, strict_fails=strict.fails,
                      strict_warns=strict.warns, checks=report.checks, defects=report.defects)


def badge_class(status: str) -> str:
    """A CSS class for any status string; unknown statuses still get a badge."""
    cleaned = re.sub(r"[^a-z0-9-]", "", status.lower())
    return f"status-{cleaned}" if cleaned in KNOWN_STATUSES else "status-other"


KNOWN_STATUSES = frozenset({"current", "stale", "edited", "orphaned", "missing", "damaged"})


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
