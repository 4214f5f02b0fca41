"""What a reviewer at a gate needs from the ledger, read and never written: the gate a
course waits at, the files it covers, the files ``stay revise`` takes there, what
changed since the last answer at that gate (and which files it could not keep), and the
proposals ``stay revise --show`` left waiting (``_waiting``).

The ledger keeps the digest of every covered file at each answer (``.state/gates.json``),
and each answer keeps those bytes under their digest in ``.state/answered/`` (``_answered``).
A change is shown as a diff against that copy, or, for an answer given before the store
existed, against a copy set aside under ``.state/retired/`` (a forced revision of a
hand-edited file, an orphan retired); either only when its bytes have exactly the digest
recorded at the last answer, so no history is invented. Otherwise the page says the text
is not kept.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from stay._bounds import Damaged, read_stored
from stay.pipeline import _answered as answered
from stay.pipeline._commands import open_course_named
from stay.pipeline._course_graph import DERIVED
from stay.pipeline._gate_decl import GATES
from stay.pipeline._layout import GLOSSARY
from stay.pipeline._ledger import RETIRED, digest
from stay.pipeline._state import CourseState
from stay.pipeline._waiting import Waiting, not_kept, waiting_proposals
from stay.settings import Settings


@dataclass(frozen=True)
class Answer:
    """The last answer recorded at a gate."""

    approved: bool
    at: str
    by: str
    note: str


@dataclass(frozen=True)
class Change:
    """A covered file whose bytes differ from those the last answer recorded."""

    path: str
    was: str | None
    """Its digest at the last answer (None: the gate did not cover it then)."""
    now: str | None
    """Its digest now (None: it is gone)."""
    earlier: str | None = None
    """The text it had at the last answer, when a copy with that digest is kept."""
    kept_in: str | None = None
    """Where that copy is, relative to the course."""
    text: str | None = None
    """Its text now (None when it is gone, or there is nothing to compare it with)."""


@dataclass(frozen=True)
class GateReview:
    """The gate a course waits at (``gate`` None: every gate's approval holds)."""

    gate: str | None
    why: str = ""
    """Why its approval does not hold, as ``stay status`` says it."""
    missing: tuple[str, ...] = ()
    """Covered files not written yet: the course has not reached the gate."""
    covered: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    """The files of the gate's own phase, each a TARGET ``stay revise`` takes."""
    previous: Answer | None = None
    changes: tuple[Change, ...] = ()
    not_kept: tuple[tuple[str, str], ...] = ()
    """The covered files the last answer could not keep (so no diff), each with why."""
    proposals: tuple[Waiting, ...] = ()
    """The proposals ``stay revise --show`` left waiting, whatever the gate."""


def gate_review(slug: str, *, courses_dir: str | os.PathLike[str] = "courses",
                settings: Settings | None = None) -> GateReview:
    """The first gate, in the order a course passes them, whose approval does not hold,
    and what a reviewer there must judge. Reads the course and its ledger; writes nothing."""
    state = open_course_named(slug, courses_dir, settings)
    state.hash_once()  # one snapshot of the course: each file hashed once
    for gate in GATES:
        holds, why = state.approval(gate.name)
        if holds:
            continue
        covered = tuple(state.covered(gate.name))
        graph = state.graph
        targets = tuple(path for path in covered if graph.nodes[path].get("phase") == gate.closes
                        and graph.nodes[path].get("stage") not in (None, DERIVED)
                        and path not in (GLOSSARY, "course.yaml"))
        missing = tuple(path for path in covered if state.current_hash(path) is None)
        entry = state.gates().get(gate.name)
        previous = changes = None
        if entry is not None:
            previous = Answer(bool(entry.get("approved")), str(entry.get("at", "")), str(entry.get("by", "")),
                              str(entry.get("note") or ""))
            recorded = entry.get("covered", {})
            changes = _changes(state, covered, recorded if isinstance(recorded, dict) else {})
        return GateReview(gate.name, why, missing, covered, targets, previous, tuple(changes or ()),
                          not_kept(entry, covered), waiting_proposals(state))
    return GateReview(None, proposals=waiting_proposals(state))


def _changes(state: CourseState, covered: tuple[str, ...], recorded: dict[str, object]) -> list[Change]:
    found = []
    # gates.json is read from disk: a recorded name that is not a file of this course's
    # graph (an absolute path, a "..") is never hashed, read or shown
    dropped = sorted(path for path in set(recorded) - set(covered) if path in state.graph)
    for path in [*covered, *dropped]:
        was = recorded.get(path)
        was = was if isinstance(was, str) else None
        now = state.current_hash(path)
        if was == now:
            continue
        kept = earlier = text = None
        blob = answered.kept(state.root, was) if was is not None else None
        if blob is not None:  # the bytes checked against their digest, used as read
            kept, earlier = f"{answered.ANSWERED}/{was}", blob.decode("utf-8", "replace")
        elif was is not None:
            kept = _kept_copy(state.root, path, was)
            earlier = _text(state.root / kept) if kept is not None else None
        if earlier is not None:
            text = _text(state.root / path) if now is not None else ""
        found.append(Change(path, was, now, earlier, kept, text))
    return found


def _kept_copy(root: Path, path: str, wanted: str) -> str | None:
    """A copy of ``path`` under .state/retired/ whose bytes have the digest ``wanted``."""
    retired = root / RETIRED
    if not retired.is_dir() or retired.is_symlink():
        return None
    for run in sorted(retired.iterdir()):
        if run.is_symlink():  # never read through a link, even one that stays inside
            continue
        candidate = run / path
        if candidate.is_file() and not candidate.is_symlink():
            try:
                if digest(read_stored(candidate)) == wanted:
                    return candidate.relative_to(root).as_posix()
            except (Damaged, OSError):
                continue
    return None


def _text(path: Path) -> str | None:
    try:
        return read_stored(path).decode("utf-8", "replace")
    except (Damaged, OSError):
        return None
