"""A reviewer's thread on one file: ``stay revise ... --show`` proposals and ``--keep``.

``--show`` asks the stage for a revision as ``revise`` does, but the answer is kept as a
proposal in ``.state/proposals/`` (one JSON file per course file, written atomically,
never through a link) and shown as a unified diff; the course file is not touched.
``--keep`` writes the proposal as a revise would, with no model call, if the file still
has the bytes the proposal was made against (else it is stale, and refused).

Notes on one file make a thread, and each new revision of it (shown, kept or a plain
``revise``) is given the thread so far: the earlier notes in order, each marked kept or
set aside. The thread is derived, never a second record: its kept notes are the ledger
entry's ``revision.thread`` (recorded with the file, like every note), its set-aside
notes are in the open proposal. A thread is about one line of versions of the file, so
its kept notes end when the ledger entry stops describing the file through revisions: a
rebuild or an adoption records the file without a revision, a hand edit changes its hash,
and an approval of a gate covering it accepts its bytes as they are. An open proposal made
against other bytes is stale and is not part of the thread either.

The thread is bounded (``THREAD_NOTES``, ``THREAD_CHARS``): a few rounds of back and
forth is what a reviewer redirects with, and each earlier note is already in the file's
current version or was set aside; a long history would only crowd out the file itself.
"""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, ValidationError

from stay._bounds import Damaged, load_stored_json, read_stored
from stay._words import course_hint
from stay.artefacts import write_text_atomic
from stay.errors import EnvironmentProblem
from stay.pipeline._ledger import STATE
from stay.pipeline._state import CourseState

PROPOSALS = f"{STATE}/proposals"
THREAD_NOTES = 6
"""The most earlier notes a revision is given: a few rounds of back and forth."""
THREAD_CHARS = 3000
"""The most characters of earlier notes a revision is given (the oldest go first)."""
THREAD = "reviewer_thread"
"""The request input that carries the thread, before the new note."""


def note_sha(note: str) -> str:
    return hashlib.sha256(note.encode("utf-8")).hexdigest()[:16]


class ThreadNote(BaseModel):
    """One earlier note on a file, and what became of its revision."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    note: str
    sha: str
    outcome: Literal["kept", "set aside"]


class Proposal(BaseModel):
    """A shown revision not written: its text, the note it answers, the hash of the file
    it was made against, and the notes set aside before it on the same version."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    base: str | None
    note: str
    text: str
    set_aside: tuple[ThreadNote, ...] = ()

    def replaced(self) -> list[ThreadNote]:
        """The notes set aside once a new revision replaces this proposal: its own, last."""
        return [*self.set_aside, ThreadNote(note=self.note, sha=note_sha(self.note), outcome="set aside")]


def bounded(thread: list[ThreadNote]) -> list[ThreadNote]:
    """The last ``THREAD_NOTES`` notes, fewer if their text passes ``THREAD_CHARS``."""
    kept: list[ThreadNote] = []
    used = 0
    for item in reversed(thread[-THREAD_NOTES:]):
        used += len(item.note)
        if kept and used > THREAD_CHARS:
            break
        kept.append(item)
    return kept[::-1]


def proposal_file(root: Path, path: str) -> Path:
    # one flat directory, the course path quoted: no course path can name a place outside it
    return root / PROPOSALS / f"{quote(path, safe='')}.json"


def _refuse_links(root: Path, file: Path) -> None:
    """Refuse a link where stay keeps its proposals: nothing is written, or read, through one."""
    for place in (root / STATE, root / PROPOSALS, file):
        if place.is_symlink():
            raise EnvironmentProblem(f"{place} is a symbolic link; stay keeps its proposals in the course's own "
                                     f"{PROPOSALS}/: remove the link and run the command again")


def read_proposal(root: Path, path: str) -> Proposal | None:
    file = proposal_file(root, path)
    _refuse_links(root, file)
    if not file.exists():
        return None
    try:
        return Proposal.model_validate(load_stored_json(file))
    except (Damaged, OSError, ValidationError):
        again = course_hint(root.parent, "revise", root.name, path, "--note", "...", "--show")
        raise EnvironmentProblem(f"{file} is damaged; delete it and show a new proposal with {again}",
                                 path=file) from None


def write_proposal(root: Path, proposal: Proposal) -> Path:
    file = proposal_file(root, proposal.path)
    _refuse_links(root, file)
    file.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(file, proposal.model_dump_json(indent=2) + "\n")
    return file


def drop_proposal(root: Path, path: str) -> None:
    file = proposal_file(root, path)
    _refuse_links(root, file)
    file.unlink(missing_ok=True)


def open_proposal(course: CourseState, path: str) -> Proposal | None:
    """The proposal for ``path`` if it was made against the file as it is now, else None."""
    proposal = read_proposal(course.root, path)
    if proposal is None or proposal.base != course.current_hash(path):
        return None
    return proposal


def kept_notes(course: CourseState, path: str) -> list[ThreadNote]:
    """The thread's kept notes: the ledger entry's, while it describes the file (its hash
    is the file's, and it records a revision) and no approval has accepted these bytes
    since (a gate that covers the file approved with its hash as it is now)."""
    entry = course.ledger().get(path, {})
    revision = entry.get("revision")
    current = course.current_hash(path)
    if not isinstance(revision, dict) or entry.get("hash") != current:
        return []
    if any(answer.get("approved") and answer.get("covered", {}).get(path) == current
           for answer in course.gates().values() if isinstance(answer.get("covered"), dict)):
        return []
    recorded: Any = revision.get("thread")
    if not isinstance(recorded, list):  # a revision recorded before threads: its one note
        recorded = [{"note": revision.get("note", ""), "sha": revision.get("sha", ""), "outcome": "kept"}]
    try:
        return [ThreadNote.model_validate(item) for item in recorded]
    except ValidationError:
        return []


def thread_so_far(course: CourseState, path: str) -> list[ThreadNote]:
    """What a new revision of ``path`` is given: kept notes, then the open proposal's set-aside
    notes and its own (set aside too, by the revision now asked for), bounded."""
    thread = kept_notes(course, path)
    proposal = open_proposal(course, path)
    if proposal is not None:
        thread += proposal.replaced()
    return bounded(thread)


def recorded_thread(earlier: list[ThreadNote], note: str) -> list[dict[str, str]]:
    """The ledger's ``revision.thread`` for a file written with ``note`` after ``earlier``."""
    return [t.model_dump() for t in bounded([*earlier, ThreadNote(note=note, sha=note_sha(note), outcome="kept")])]


def thread_text(thread: list[ThreadNote]) -> str:
    lines = [f"{n}. ({item.outcome}) {' '.join(item.note.split())}" for n, item in enumerate(thread, 1)]
    return ("Earlier notes on this file, oldest first, and whether the revision each asked for was kept or set "
            "aside; the new note below is the one to act on:\n" + "\n".join(lines))


def diff_of(path: str, before: str, after: str) -> str:
    """The unified diff of a proposal against the file (file names a/ and b/)."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{path}", f"b/{path}"))


def current_text(course: CourseState, path: str) -> str:
    """The file as it is now, through the bounded reader: a link, a special file or one over
    the bound reads as nothing (the course's own checks report those), never as a traceback."""
    try:
        return read_stored(course.root / path).decode("utf-8", "replace")
    except (Damaged, OSError):
        return ""
