"""What an author decided that still waits where they look: the covered files a gate's
answer could not keep for a later diff (the answer's ``not_kept`` in ``.state/gates.json``),
and the proposals ``stay revise --show`` left in ``.state/proposals/`` that nobody has kept
or replaced yet.

Both are read from ``.state/``, which a hand or a checkout can change, so both are
untrusted: a name is used only when it is a file of the course (a node of its graph), a
proposal is read through ``_thread``'s bounded reader, which refuses a link, and every
recorded text is cut to one bounded line before anyone is shown it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from stay.errors import EnvironmentProblem
from stay.pipeline._course_graph import artefact_paths
from stay.pipeline._ledger import STATE
from stay.pipeline._state import CourseState
from stay.pipeline._thread import PROPOSALS, current_text, proposal_file, read_proposal

LINE_CHARS = 200
"""The most characters of a recorded reason or of a note's first line that are shown:
enough for a sentence, never a page."""


def one_line(text: str, limit: int = LINE_CHARS) -> str:
    """``text`` as one line of at most ``limit`` characters (an ellipsis says it was cut)."""
    words = " ".join(text.split())
    return words if len(words) <= limit else words[:limit - 1] + "…"


def first_line(text: str, limit: int = LINE_CHARS) -> str:
    """The first line of ``text`` that holds anything, bounded as ``one_line``."""
    return one_line(next((line for line in text.splitlines() if line.strip()), ""), limit)


def not_kept(entry: object, files: Collection[str]) -> tuple[tuple[str, str], ...]:
    """An answer's ``not_kept``, as (file, why) for each name in it that is one of ``files``,
    in name order; anything else the ledger holds there is never shown."""
    recorded = entry.get("not_kept") if isinstance(entry, dict) else None
    if not isinstance(recorded, dict):
        return ()
    return tuple((path, one_line(why)) for path, why in sorted(recorded.items(), key=lambda item: str(item[0]))
                 if path in files and isinstance(why, str))


def not_kept_lines(gate: str, reasons: Collection[tuple[str, str]]) -> list[str]:
    """One line per file the answer at ``gate`` could not keep, saying what that costs."""
    return [f"{path}: not kept for the {gate} gate's review page, so a later change to it shows no diff: {why}"
            for path, why in reasons]


@dataclass(frozen=True)
class Waiting:
    """A proposal waiting in ``.state/proposals/`` for one file of the course."""

    path: str
    note: str = ""
    """The first line of the note it answers, bounded."""
    stale: bool = False
    """The file changed since the proposal was shown: ``--keep`` refuses it."""
    problem: str = ""
    """Why it cannot be read (damaged, a link); then nothing else is known."""
    proposed: str | None = field(default=None, repr=False)
    """The proposal's text, when it can be kept."""
    current: str | None = field(default=None, repr=False)
    """The file's text now, when the proposal can be kept (what it would replace)."""

    @property
    def anew(self) -> bool:
        """Only a new proposal goes on from here: this one is stale, or its file cannot be
        used (damaged, for another file); not when the whole folder is refused (a link)."""
        return self.stale or (bool(self.problem) and self.path != PROPOSALS)

    def words(self, slug: str) -> tuple[str, ...]:
        """The command that goes on from here: keep it, or show a new one (``anew``)."""
        if self.anew:
            return "revise", slug, self.path, "--note", repr("..."), "--show"
        return "revise", slug, self.path, "--keep"

    def line(self, slug: str, hint: Callable[..., str]) -> str:
        """What ``stay status`` says of it, the command in the caller's form (``hint``)."""
        if self.problem:
            if self.anew:
                return f"{self.path}: {self.problem}, then show a new one with {hint(*self.words(slug))}"
            return f"{self.path}: {self.problem}"
        said = f"{self.path}: shown with the note {self.note!r}"
        if self.stale:
            return f"{said}, but stale (the file changed since): show a new one with {hint(*self.words(slug))}"
        return f"{said}; keep it with {hint(*self.words(slug))}"


def waiting_proposals(state: CourseState) -> tuple[Waiting, ...]:
    """Every proposal waiting for a file of the course, in the graph's file order. Only the
    proposal file named for a course file is ever read: any other file there is not."""
    root = state.root
    for place in (root / STATE, root / PROPOSALS):
        if place.is_symlink():
            return (Waiting(PROPOSALS, problem=f"{place.relative_to(root).as_posix()} is a symbolic link: stay "
                                               f"reads no proposal through it; remove the link"),)
    if not (root / PROPOSALS).is_dir():
        return ()
    found = []
    for path in artefact_paths(state.graph):
        file = proposal_file(root, path)
        if not (file.exists() or file.is_symlink()):
            continue
        try:
            proposal = read_proposal(root, path)
        except EnvironmentProblem:  # its own words carry a path and a hint too long for a line
            found.append(Waiting(path, problem=f"{file.relative_to(root).as_posix()} is damaged: delete it"))
            continue
        if proposal is None:
            continue
        if proposal.path != path:
            found.append(Waiting(path, problem=f"{file.relative_to(root).as_posix()} is for another file: delete it"))
        elif proposal.base != state.current_hash(path):
            found.append(Waiting(path, first_line(proposal.note), stale=True))
        else:
            found.append(Waiting(path, first_line(proposal.note), proposed=proposal.text,
                                 current=current_text(state, path)))
    return tuple(found)
