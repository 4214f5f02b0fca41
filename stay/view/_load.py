"""Reading a course for the viewer: every file as what it is, or as why it is not.

A course on disk is untrusted input. Nothing here raises for a bad file: each file
becomes a ``Loaded`` that holds either its artefact or a one-line problem (missing,
not UTF-8, not YAML, a field that does not fit, a link that leaves the course), and
the pages show the problem where the content would be. Paths are only ever built
from ids that match the contract's patterns; an id that does not is shown, never
followed. Nothing here writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml
from pydantic import BaseModel

from stay._bounds import MAX_DEPTH, MAX_FILE_BYTES, TooLarge, read_bounded, yaml_shape
from stay.artefacts import (
    ArtefactLoadError,
    Assessment,
    Audience,
    CourseManifest,
    Curriculum,
    Exercises,
    Glossary,
    LessonContent,
    LessonPlan,
    Outcomes,
    Project,
    Quiz,
    validate_as,
)
from stay.briefs import check_curriculum_size
from stay.errors import PipelineError, StayError
from stay.validate import (
    HouseData,
    default_data_dir,
    packaged_data_dir,
    safe_load,  # the validator's parser: libyaml speed, no C-stack overflow
)

M = TypeVar("M", bound=BaseModel)


_FRONT_MATTER = re.compile(r"---\n(.*?\n)?---(?:\n|$)", re.DOTALL)


@dataclass(frozen=True)
class Loaded(Generic[M]):
    """One course file: its artefact, or the one-line reason there is none."""

    path: str
    """Relative to the course directory, '/'-separated."""
    model: M | None = None
    problem: str | None = None
    missing: bool = False

    @property
    def ok(self) -> bool:
        return self.model is not None


@dataclass(frozen=True)
class LessonView:
    id: str
    title: str
    minutes: int
    summary: str
    module: str
    page: str | None
    """The lesson's page in the site, or None when its id cannot safely name a file."""
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
    slug: str
    title: str
    summary: str
    dir: str | None
    """``modules/<id>-<slug>``, or None when the id or slug breaks its pattern."""
    problem: str | None
    lessons: tuple[LessonView, ...]


@dataclass(frozen=True)
class CourseView:
    root: Path
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

    def top_files(self) -> tuple[Loaded[Any], ...]:
        return (self.manifest, self.audience, self.curriculum, self.outcomes, self.assessment,
                self.project, self.glossary)

    def all_files(self) -> Iterator[Loaded[Any]]:
        yield from self.top_files()
        for lesson in self.lessons:
            yield from lesson.files()


def read_artefact(root: Path, relative: str, model: type[M]) -> Loaded[M]:
    """One file as ``model``, or why not; never raises for anything the file holds."""
    path = root / relative
    try:
        resolved = path.resolve()
        if not resolved.is_relative_to(root.resolve()):
            return Loaded(relative, problem="a link that leaves the course directory; not followed")
        if not path.exists():
            return Loaded(relative, problem="missing", missing=True)
        if not path.is_file():
            return Loaded(relative, problem="not a regular file")
        data = read_bounded(path)
    except TooLarge:
        return Loaded(relative, problem=f"too large to show (over {MAX_FILE_BYTES // 2**20} MB, the limit on a "
                                        "course file)")
    except OSError as exc:
        return Loaded(relative, problem=f"cannot be read ({exc.strerror or type(exc).__name__})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Loaded(relative, problem="not UTF-8 text")
    try:
        return Loaded(relative, model=_parse(model, text, relative))
    except ArtefactLoadError as exc:
        return Loaded(relative, problem=str(exc))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return Loaded(relative, problem=f"{relative}: not valid YAML{where}")
    except RecursionError:
        return Loaded(relative, problem=f"{relative}: nested too deeply to read")


def _load_yaml(text: str, where: str) -> Any:
    """``safe_load`` after the guard every reader uses: no anchors or aliases, no deep nesting."""
    shape = yaml_shape(text)
    if shape == "aliases":
        raise ArtefactLoadError(f"{where}: uses YAML anchors or aliases (& and *); not expanded")
    if shape == "deep":
        raise ArtefactLoadError(f"{where}: nests deeper than {MAX_DEPTH} levels; not read")
    return safe_load(text)


def _parse(model: type[M], text: str, where: str) -> M:
    if model is LessonContent:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        match = _FRONT_MATTER.match(text)
        if match is None:
            raise ArtefactLoadError(f"{where}: front matter is missing (a '---' block with lesson and title)")
        front = _load_yaml(match.group(1) or "", where)
        if not isinstance(front, dict):
            raise ArtefactLoadError(f"{where}: front matter must be a mapping with lesson and title")
        return validate_as(model, {**front, "body": text[match.end():]}, where)
    return validate_as(model, _load_yaml(text, where), where)


def load_course(root: Path) -> CourseView:
    """Everything the pages show, read once; damage is recorded, never raised."""
    curriculum = _within_house_style(read_artefact(root, "curriculum.yaml", Curriculum))
    modules: list[ModuleView] = []
    seen_lessons: set[str] = set()
    # The Curriculum type has checked every module id, slug and lesson id (format, no
    # path separators, no repeats): a curriculum that breaks them is shown as damaged,
    # and no path is built from it.
    for module in curriculum.model.modules if curriculum.model else []:
        problem = None
        directory: str | None = f"modules/{module.id}-{module.slug}"
        lessons = []
        for entry in module.lessons:
            lessons.append(_lesson(root, module.id, directory, entry.id, entry.title, entry.minutes, entry.summary,
                                   seen_lessons))
            seen_lessons.add(entry.id)
        modules.append(ModuleView(module.id, module.slug, module.title, module.summary, directory, problem,
                                  tuple(lessons)))
    listed = {f.path for m in modules for lesson in m.lessons for f in lesson.files()}
    return CourseView(
        root=root, slug=root.name,
        manifest=read_artefact(root, "course.yaml", CourseManifest),
        audience=read_artefact(root, "audience.yaml", Audience),
        curriculum=curriculum,
        outcomes=read_artefact(root, "outcomes.yaml", Outcomes),
        assessment=read_artefact(root, "assessment.yaml", Assessment),
        project=read_artefact(root, "project.yaml", Project),
        glossary=read_artefact(root, "glossary.yaml", Glossary),
        modules=tuple(modules),
        unlisted=tuple(sorted(set(_module_files(root)) - listed)),
    )


def _within_house_style(curriculum: Loaded[Curriculum]) -> Loaded[Curriculum]:
    """The curriculum, or a damaged one when it holds more lessons than house style's
    largest course: every page lists every lesson, so the site grows with the square of
    the curriculum, and nothing is read or rendered for one no build could write."""
    if curriculum.model is None:
        return curriculum
    try:
        check_curriculum_size(curriculum.model, _house(), curriculum.path)
    except PipelineError as exc:
        return Loaded(curriculum.path, problem=str(exc))
    return curriculum


def _house() -> HouseData:
    try:
        return HouseData.load(default_data_dir())
    except StayError:  # the validator says so on the status page
        return HouseData.load(packaged_data_dir())


def _lesson(root: Path, module_id: str, directory: str | None, lesson_id: str, title: str, minutes: int,
            summary: str, seen: set[str]) -> LessonView:
    problem = None
    page: str | None = f"{lesson_id}.html"
    if not lesson_id.startswith(module_id + "-"):
        problem = f"lesson id '{lesson_id}' does not start with its module's id '{module_id}'"
    if directory is None:
        reason = problem or "its module's directory cannot be named safely"
        files = [Loaded[Any](f"(not read: {reason})", problem=reason) for _ in range(4)]
        return LessonView(lesson_id, title, minutes, summary, module_id, page, problem, *files)
    base = f"{directory}/{lesson_id}"
    return LessonView(
        lesson_id, title, minutes, summary, module_id, page, problem,
        plan=read_artefact(root, f"{base}.plan.yaml", LessonPlan),
        content=read_artefact(root, f"{base}.md", LessonContent),
        exercises=read_artefact(root, f"{base}.exercises.yaml", Exercises),
        quiz=read_artefact(root, f"{base}.quiz.yaml", Quiz),
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
