"""Regenerating a file that exists: the file as it stands, the one instruction block,
what the regeneration changed, and the check at the write.

Repair, revision and the check after a design or plan write all ask a stage again for
a file that is already on disk. Each request carries the same three things, built
here once: the file as it stands (for a lesson, its Markdown body without the front
matter, which is what the content stage answers), what to change (the validator's
defects, or a reviewer's note) and the instruction block ``prompts/regenerate.md``
(apply it; keep every id, heading and sentence it does not touch; return the whole
file). A fix records what it changed: the share of lines kept, and a unified diff for
the run log (``.state/run-log.md``: it stays with the course, where a reviewer reads
what a run did, while a trace is per run and is not read by a person).
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from stay._display import plural
from stay.artefacts import LessonContent, dump, dump_yaml, to_data
from stay.pipeline._checks import defects_in
from stay.pipeline._produce import Again, Note, regenerate
from stay.pipeline._reader import RunReader
from stay.pipeline._reporter import Reporter
from stay.pipeline._run import RunConfig, Tally
from stay.stages import REGENERATE, Prompts
from stay.validate import Defect

CURRENT = "current_version"
DEFECTS = "defects_to_fix"
DIFF_LINES = 80
"""The most diff lines the run log keeps per fixed file: enough for the few hunks a
local fix makes, while a whole rewritten lesson (whose diff is two copies of it) is
cut, and its share of lines kept already says what happened."""


def as_it_stands(reader: RunReader, path: str) -> Note | None:
    """The file as it stands, read through the run's bounded reader (None if missing):
    a lesson's body without its front matter (the content stage answers the body; the
    front matter is derived from the plan), any other file as its YAML data."""
    if not reader.exists(path):
        return None
    artefact = reader.load(path)
    if isinstance(artefact, LessonContent):
        return Note(CURRENT, artefact.body, fenced(artefact.body, "markdown"))
    data = to_data(artefact)
    return Note(CURRENT, data, "```yaml\n" + dump_yaml(data) + "```")


def fenced(text: str, info: str) -> str:
    """``text`` in a code fence longer than any run of backticks in it, so a lesson's own
    code fences (in its body, or a diff's context lines) cannot close it early."""
    fence = "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))
    return f"{fence}{info}\n{text}{'' if text.endswith(chr(10)) else chr(10)}{fence}"


def regeneration_notes(prompts: Prompts, current: Note | None, ask: Note) -> tuple[Note, ...]:
    """What a request that regenerates a file adds to the stage's inputs, in this order:
    the file as it stands (``as_it_stands``), what to change (``ask``), then the
    instruction block. A file not on disk yet has no current version, so it gets neither
    that nor the block."""
    if current is None:
        return (ask,)
    text = prompts.template(REGENERATE).strip()
    return current, ask, Note(REGENERATE, text, text)


def defects_note(defects: Sequence[Defect], current: Note | None) -> Note:
    """The validator's defects as a request input: a line each for the model, and under
    it, quoted (``> ``), the sentence, paragraph or item it names in the file as it stands
    (``current``), so a model need not count paragraphs the contract's way to find it;
    their fields, and the quote, for a fake that answers from the inputs."""
    quotes = [d.quote(current.value) if current else "" for d in defects]
    lines = [f"- {d.code} {d.path} {d.subject}: {d.message}" + "".join(f"\n  > {line}" for line in q.splitlines())
             for d, q in zip(defects, quotes, strict=True)]
    fields = [{**d.as_dict(), "quote": q} if q else d.as_dict() for d, q in zip(defects, quotes, strict=True)]
    return Note(DEFECTS, fields, "\n".join(lines))


@dataclass(frozen=True)
class Change:
    """What one regeneration did to one file."""

    path: str
    kept: int
    """Lines of the file as it stood that are in the new one, in order (difflib's matching blocks)."""
    lines: int
    """Lines the file had before."""
    diff: str
    """The unified diff, at most ``DIFF_LINES`` lines (a last line says how many were cut)."""

    @classmethod
    def of(cls, path: str, before: str, after: str) -> Change:
        old, new = before.splitlines(), after.splitlines()
        kept = sum(block.size for block in difflib.SequenceMatcher(None, old, new, autojunk=False)
                   .get_matching_blocks())
        diff = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", n=1, lineterm=""))
        if len(diff) > DIFF_LINES:
            diff = [*diff[:DIFF_LINES], f"... {plural(len(diff) - DIFF_LINES, 'more diff line')}"]
        return cls(path, kept, len(old), "\n".join(diff))

    @property
    def share(self) -> float:
        """The share of the old file's lines kept (1.0 for an empty file)."""
        return self.kept / self.lines if self.lines else 1.0

    def describe(self) -> str:
        return f"{self.kept} of {plural(self.lines, 'line')} kept ({self.share:.0%})"

    def log_lines(self) -> list[str]:
        """The change as the run log shows it: one line, then the diff, fenced."""
        head = f"- fixed {self.path}: {self.describe()}"
        if not self.diff:
            return [head]
        return [head, "", *fenced(self.diff, "diff").splitlines(), ""]


@dataclass(frozen=True)
class Fixer:
    """What fixing a file's defects works through: asking its stage again (``again``),
    and the tally and reporter that record and say what each fix changed."""

    again: Again
    tally: Tally
    report: Reporter

    @property
    def config(self) -> RunConfig:
        return self.again.config


def fix(fixer: Fixer, path: str, defects: Sequence[Defect]) -> Change | None:
    """Ask ``path``'s stage again with the defects and the file as it stands, write its
    answer (this file only: a module's call answers all its plans) and record the change.
    None when the run was cancelled before the write."""
    reader = fixer.again.reader
    before = dump(reader.load(path))
    current = as_it_stands(reader, path)
    notes = regeneration_notes(fixer.config.prompts, current, defects_note(defects, current))
    if path not in regenerate(fixer.again, path, notes, only=(path,)):
        return None
    change = Change.of(path, before, dump(reader.load(path)))
    fixer.tally.add_change(change)
    fixer.report.say(f"  {path}: {change.describe()}")
    return change


def check_written(fixer: Fixer, cancelled: threading.Event, paths: Sequence[str]) -> tuple[Defect, ...]:
    """Validate at the write: the FAILs the rules find in ``paths`` (files this run just
    wrote) go back to their stage once, with the file, before any gate, as a schema
    misfit does in ``Run.produce``. What remains is recorded on the tally (and so in
    ``BuildResult.unresolved``) and returned."""
    if not paths or cancelled.is_set():
        return ()
    config, report, reject = fixer.config, fixer.report, fixer.again.model.reject_failed
    found = defects_in(config.root, config.settings, paths, fails_only=True)
    if found:
        reject(by_path(found), paths)
        for path, defects in by_path(found).items():
            codes = ", ".join(sorted({d.code for d in defects}))
            report.say(f"  {path}: {plural(len(defects), 'FAIL')} at the write ({codes}); asking once more "
                       "with the defects and the file")
            fix(fixer, path, defects)
        found = defects_in(config.root, config.settings, paths, fails_only=True)
        reject(by_path(found), paths)
        for path, defects in by_path(found).items():
            report.say(f"  {path}: {plural(len(defects), 'FAIL')} {'remains' if len(defects) == 1 else 'remain'} "
                       f"({', '.join(sorted({d.code for d in defects}))}); the gate lists them")
    fixer.tally.settle(paths, found)
    return found


def by_path(defects: Sequence[Defect]) -> dict[str, list[Defect]]:
    grouped: dict[str, list[Defect]] = {}
    for defect in defects:
        grouped.setdefault(defect.path, []).append(defect)
    return grouped
