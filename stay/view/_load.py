"""Reading a course for the viewer. A course on disk is untrusted: each file becomes a
``Loaded`` holding its artefact or a one-line problem, shown where the content would be,
never raised. Paths are built only from ids matching the contract's patterns. Nothing writes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from stay.artefacts import (
    Assessment,
    Audience,
    CourseManifest,
    CourseReader,
    Curriculum,
    Exercises,
    Glossary,
    LessonContent,
    LessonPlan,
    Loaded,
    Module,
    Outcomes,
    Project,
    Quiz,
    lesson_file,
    module_dir,
)
from stay.briefs import check_curriculum_size
from stay.errors import PipelineError, StayError
from stay.validate import HouseData, default_data_dir, packaged_data_dir

M = TypeVar("M", bound=BaseModel)

__all__ = ["CourseView", "LessonView", "Loaded", "ModuleView", "load_course", "read_artefact"]


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
    return CourseReader(root).read(relative, model)


def load_course(root: Path, data_dir: Path | None = None) -> CourseView:
    """Everything the pages show, read once; damage is recorded, never raised. ``data_dir``: the
    house style the course is held to (None: the validator's default)."""
    files = CourseReader(root)
    curriculum = _within_house_style(files.read("curriculum.yaml", Curriculum), data_dir)
    modules: list[ModuleView] = []
    # The Curriculum type has checked every module id, slug and lesson id (format, no
    # path separators, no repeats): a curriculum that breaks them is shown as damaged,
    # and no path is built from it.
    for module in curriculum.model.modules if curriculum.model else []:
        lessons = []
        for entry in module.lessons:
            lessons.append(_lesson(files, module, entry.id, entry.title, entry.minutes, entry.summary))
        modules.append(ModuleView(module.id, module.slug, module.title, module.summary, module_dir(module), None,
                                  tuple(lessons)))
    listed = {f.path for m in modules for lesson in m.lessons for f in lesson.files()}
    return CourseView(
        root=root, slug=root.name,
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


def _lesson(files: CourseReader, module: Module, lesson_id: str, title: str, minutes: int,
            summary: str) -> LessonView:
    problem = None
    if not lesson_id.startswith(module.id + "-"):
        problem = f"lesson id '{lesson_id}' does not start with its module's id '{module.id}'"
    return LessonView(
        lesson_id, title, minutes, summary, module.id, f"{lesson_id}.html", problem,
        plan=files.read(lesson_file(module, lesson_id, LessonPlan), LessonPlan),
        content=files.read(lesson_file(module, lesson_id, LessonContent), LessonContent),
        exercises=files.read(lesson_file(module, lesson_id, Exercises), Exercises),
        quiz=files.read(lesson_file(module, lesson_id, Quiz), Quiz),
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
