"""Reading a course for the viewer: its files, its ledger's statuses and gates, the validator's result
and what the review page shows. A course on disk is untrusted: each file becomes a ``Loaded`` holding
its artefact or a one-line problem, and unreadable is described, never raised. Paths are built only
from ids matching the contract's patterns. Nothing writes."""

from __future__ import annotations

import difflib
import os
import re
import shlex
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import stay.pipeline as pipeline
from stay._words import DEFAULT_COURSES
from stay.artefacts import (
    Assessment,
    Audience,
    CourseManifest,
    CourseReader,
    Curriculum,
    Exercises,
    Glossary,
    LessonContent,
    LessonEntry,
    LessonPlan,
    Loaded,
    Module,
    Outcomes,
    Project,
    Quiz,
    lesson_file,
)
from stay.briefs import check_curriculum_size
from stay.errors import PipelineError, StayError
from stay.pipeline import GateReview, capstone_outcomes, gate_review
from stay.settings import Settings
from stay.validate import Defect, HouseData, default_data_dir, packaged_data_dir, validate_course


@dataclass(frozen=True)
class LessonView:
    id: str
    title: str
    minutes: int
    summary: str
    module: str
    page: str
    problem: str | None
    plan: Loaded[LessonPlan]
    content: Loaded[LessonContent]
    exercises: Loaded[Exercises]
    quiz: Loaded[Quiz]

    def files(self) -> tuple[Loaded[Any], ...]:
        return (self.plan, self.content, self.exercises, self.quiz)


@dataclass(frozen=True)
class ModuleView:
    id: str
    title: str
    summary: str
    lessons: tuple[LessonView, ...]


@dataclass(frozen=True)
class CourseView:
    slug: str
    manifest: Loaded[CourseManifest]
    audience: Loaded[Audience]
    curriculum: Loaded[Curriculum]
    outcomes: Loaded[Outcomes]
    assessment: Loaded[Assessment]
    project: Loaded[Project]
    glossary: Loaded[Glossary]
    modules: tuple[ModuleView, ...]
    unlisted: tuple[str, ...] = field(default=())
    """Files under modules/ that no lesson of the curriculum names (sorted)."""

    @property
    def lessons(self) -> tuple[LessonView, ...]:
        return tuple(lesson for module in self.modules for lesson in module.lessons)

    @property
    def title(self) -> str:
        if self.manifest.model is not None:
            return self.manifest.model.title
        return self.slug

    def all_files(self) -> Iterator[Loaded[Any]]:
        yield from (self.manifest, self.audience, self.curriculum, self.outcomes, self.assessment, self.project,
                    self.glossary)
        for lesson in self.lessons:
            yield from lesson.files()


def load_course(root: Path, data_dir: Path | None = None) -> CourseView:
    """Everything the pages show, read once; damage is recorded, never raised."""
    files = CourseReader(root)
    curriculum = _within_house_style(files.read("curriculum.yaml", Curriculum), data_dir)
    modules: list[ModuleView] = []
    # The Curriculum type has checked every module id, slug and lesson id (format, no
    # path separators, no repeats): a curriculum that breaks them is shown as damaged,
    # and no path is built from it.
    for module in curriculum.model.modules if curriculum.model else []:
        lessons = tuple(_lesson(files, module, entry) for entry in module.lessons)
        modules.append(ModuleView(module.id, module.title, module.summary, lessons))
    listed = {f.path for m in modules for lesson in m.lessons for f in lesson.files()}
    return CourseView(
        slug=root.name,
        manifest=files.read("course.yaml", CourseManifest),
        audience=files.read("audience.yaml", Audience),
        curriculum=curriculum,
        outcomes=files.read("outcomes.yaml", Outcomes),
        assessment=files.read("assessment.yaml", Assessment),
        project=files.read("project.yaml", Project),
        glossary=files.read("glossary.yaml", Glossary),
        modules=tuple(modules),
        unlisted=tuple(sorted(set(_module_files(root)) - listed)),
    )


def _within_house_style(curriculum: Loaded[Curriculum], data_dir: Path | None) -> Loaded[Curriculum]:
    """The curriculum, or a damaged one when it holds more lessons than house style's largest
    course: every page lists every lesson, so the site grows with the square of its size."""
    if curriculum.model is None:
        return curriculum
    try:
        check_curriculum_size(curriculum.model, _house(data_dir), curriculum.path)
    except PipelineError as exc:
        return Loaded(curriculum.path, problem=str(exc))
    return curriculum


def _house(data_dir: Path | None) -> HouseData:
    try:
        return HouseData.load(data_dir if data_dir is not None else default_data_dir())
    except StayError:  # the validator says so on the status page
        return HouseData.load(packaged_data_dir())


def _lesson(files: CourseReader, module: Module, entry: LessonEntry) -> LessonView:
    problem = None
    if not entry.id.startswith(module.id + "-"):
        problem = f"lesson id '{entry.id}' does not start with its module's id '{module.id}'"
    return LessonView(
        entry.id, entry.title, entry.minutes, entry.summary, module.id, f"{entry.id}.html", problem,
        plan=files.read(lesson_file(module, entry.id, LessonPlan), LessonPlan),
        content=files.read(lesson_file(module, entry.id, LessonContent), LessonContent),
        exercises=files.read(lesson_file(module, entry.id, Exercises), Exercises),
        quiz=files.read(lesson_file(module, entry.id, Quiz), Quiz),
    )


def _module_files(root: Path) -> Iterator[str]:
    modules = root / "modules"
    if not modules.is_dir() or modules.is_symlink():
        return
    for directory in sorted(modules.iterdir()):
        if directory.is_dir() and not directory.is_symlink():
            for file in sorted(directory.iterdir()):
                if file.is_file() and not file.name.startswith("."):
                    yield f"modules/{directory.name}/{file.name}"


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


@dataclass(frozen=True)
class Validation:
    ran: bool
    note: str | None
    fails: int = 0
    warns: int = 0
    checks: int = 0
    defects: tuple[Defect, ...] = ()

    @property
    def strict_fails(self) -> int:
        """``validate --strict``'s FAILs: strict makes every WARN a FAIL and changes nothing else, so it leaves
        no WARN (tests/validate/test_rules.py holds it)."""
        return self.fails + self.warns


def read_ledger(course: Path, settings: Settings | None = None) -> Ledger:
    if not (course / LEDGER_FILE).is_file():
        return Ledger(tracked=False, note=NO_LEDGER)
    slug, courses_dir = course.name, course.parent
    try:
        found = pipeline.status(slug, courses_dir=courses_dir, settings=settings)
        gates = pipeline.gate_status(slug, courses_dir=courses_dir, settings=settings)
    except Exception as exc:  # a damaged ledger or course must show on the page, not end the render
        return Ledger(tracked=True, note=f"statuses cannot be derived: {_one_line(exc)}")
    statuses = {str(path): (str(state), tuple(str(w) for w in why)) for path, (state, why) in found.items()}
    return Ledger(tracked=True, note=None, statuses=dict(sorted(statuses.items())),
                  gates={str(k): str(v) for k, v in gates.items()})


def run_validator(course: Path, data_dir: Path | None = None) -> Validation:
    """The validator's counts and its defects (non-strict; ``strict_fails`` is derived from them)."""
    try:
        report = validate_course(course, data_dir=data_dir)
    except Exception as exc:  # e.g. missing data files: say so where the result would be
        return Validation(ran=False, note=f"the validator could not run: {_one_line(exc)}")
    return Validation(ran=True, note=None, fails=report.fails, warns=report.warns, checks=report.checks,
                      defects=report.defects)


def badge_class(status: str) -> str:
    """A CSS class for any status string; unknown statuses still get a badge."""
    cleaned = re.sub(r"[^a-z0-9-]", "", status.lower())
    return f"status-{cleaned}" if cleaned in KNOWN_STATUSES else "status-other"


KNOWN_STATUSES = frozenset({"current", "stale", "edited", "orphaned", "missing", "damaged"})


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
    """The commands that answer the gate: approve, decline, and one revise per file the gate's phase wrote."""
    assert data.gate is not None
    approve, note = ("approve", root.name, data.gate), ("--note", repr("..."))
    return {
        "approve": (_command(root, approve),),
        "decline": (_command(root, (*approve, "--decline", *note)),),
        "revise": tuple(_command(root, ("revise", root.name, target, *note)) for target in data.targets),
    }


def _command(root: Path, words: tuple[str, ...]) -> str:
    """``stay WORDS`` as a person would paste it (``repr("...")`` stands for the note), with the course's
    --courses-dir, or none when it is the default (the same directory)."""
    shown = (NOTE if word == repr("...") else shlex.quote(word) for word in words)
    try:
        default = root.parent.resolve() == Path(DEFAULT_COURSES).resolve()
    except OSError:
        default = False
    where = "" if default else f" --courses-dir {shlex.quote(os.fspath(root.parent))}"
    return f"stay {' '.join(shown)}{where}"
