"""The review page: what a reviewer must judge at the gate a course waits at (the gate from
the ledger, the validator's defects in its files, diffs against the earlier text the course
keeps and against waiting proposals), and the commands that answer it, as a person would paste
them. A diff line is marked ``+``/``-`` in its text as well as its colour."""

from __future__ import annotations

import difflib
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from stay._words import DEFAULT_COURSES
from stay.pipeline import GateReview, capstone_outcomes, gate_review
from stay.settings import Settings
from stay.validate import Defect
from stay.view._load import CourseView
from stay.view._status import LEDGER_FILE, Validation, _one_line

PAGE = ("review.html", "Review")
"""The page's file and its label in the nav (shown there only while a gate or a proposal waits)."""

NOTE = '"..."'
"""What the printed commands hold where the reviewer writes their note."""


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """add, del, hunk (an @@ line), file (a ---/+++ line) or same."""
    text: str


@dataclass(frozen=True)
class Review:
    """Everything the review page shows; ``gate`` None: nothing awaits review."""

    gate: str | None
    note: str | None
    """Why the ledger cannot say (not tracked, or unreadable); None when it can."""
    data: GateReview | None
    defects: tuple[Defect, ...]
    diffs: dict[str, tuple[DiffLine, ...]]
    """path -> its diff against the copy kept from the last answer, for those that have one."""
    commands: dict[str, tuple[str, ...]]
    """approve, decline, revise -> the commands to copy."""
    capstone: tuple[str, ...]
    proposed: dict[str, tuple[DiffLine, ...]] = field(default_factory=dict)
    """path -> the diff a waiting proposal would make to it, for those that can be kept."""
    go_on: dict[str, str] = field(default_factory=dict)
    """path -> the command that goes on from its waiting proposal (keep it, or show anew)."""

    @property
    def pending(self) -> bool:
        return self.gate is not None and self.data is not None and not self.data.missing


def tracked(root: Path) -> bool:
    """Whether stay keeps a ledger for the course: only then has it gates to review."""
    return (root / LEDGER_FILE).is_file()


def review_page(root: Path, course: CourseView, validation: Validation, settings: Settings | None = None) -> Review:
    """What the review page shows for the course at ``root``; reads, never writes."""
    capstone = tuple(capstone_outcomes(course.assessment.model)) if course.assessment.model else ()
    try:
        data = gate_review(root.name, courses_dir=root.parent, settings=settings)
    except Exception as exc:  # a damaged ledger or course must show on the page, not end the render
        return Review(None, f"the gates cannot be read: {_one_line(exc)}", None, (), {}, {}, capstone)
    # a waiting proposal is diffed as _waiting read it: only one that can be kept has texts
    proposed = {w.path: diff_lines(w.path, w.current, w.proposed, ("now", "as proposed"))
                for w in data.proposals if w.current is not None and w.proposed is not None}
    go_on = {w.path: _command(root, w.words(root.name)) for w in data.proposals
             if w.anew or not w.problem}
    if data.gate is None:
        return Review(None, None, data, (), {}, {}, capstone, proposed, go_on)
    covered = set(data.covered)
    defects = tuple(d for d in validation.defects if d.path in covered)
    diffs = {change.path: diff_lines(change.path, change.earlier, change.text or "")
             for change in data.changes if change.earlier is not None}
    return Review(data.gate, None, data, defects, diffs, commands(root, data), capstone, proposed, go_on)


def diff_lines(path: str, earlier: str, now: str,
               labels: tuple[str, str] = ("at the last answer", "now")) -> tuple[DiffLine, ...]:
    lines = difflib.unified_diff(earlier.splitlines(), now.splitlines(), f"{path} ({labels[0]})",
                                 f"{path} ({labels[1]})", lineterm="")
    return tuple(DiffLine(_kind(line), line) for line in lines)


def _kind(line: str) -> str:
    if line.startswith(("---", "+++")):
        return "file"
    return {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")


def commands(root: Path, data: GateReview) -> dict[str, tuple[str, ...]]:
    """The commands that answer the gate, as they parse: approve, decline, and one revise per
    file the gate's phase wrote, each with the page's --courses-dir."""
    assert data.gate is not None
    slug, where = shlex.quote(root.name), _courses_flag(root.parent)
    approve = f"stay approve {slug} {data.gate}"
    return {
        "approve": (approve + where,),
        "decline": (f"{approve} --decline --note {NOTE}{where}",),
        "revise": tuple(f"stay revise {slug} {shlex.quote(target)} --note {NOTE}{where}" for target in data.targets),
    }


def _command(root: Path, words: tuple[str, ...]) -> str:
    """``stay WORDS`` as a person would paste it, with the course's --courses-dir."""
    shown = (NOTE if word == repr("...") else shlex.quote(word) for word in words)
    return f"stay {' '.join(shown)}{_courses_flag(root.parent)}"


def _courses_flag(courses: Path) -> str:
    """`` --courses-dir DIR``, or nothing when DIR is the default (the same directory)."""
    try:
        default = courses.resolve() == Path(DEFAULT_COURSES).resolve()
    except OSError:
        default = False
    return "" if default else f" --courses-dir {shlex.quote(os.fspath(courses))}"
