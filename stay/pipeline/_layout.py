"""Where a course's files are, reading them back as artefacts, and the validator's checks on them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from stay.artefacts import (
    Artefact,
    Brief,
    CourseReader,
    Curriculum,
    LessonEntry,
    LessonPlan,
    Module,
    artefact_type,
    module_dir,
)
from stay.settings import Settings
from stay.stages import Stage
from stay.validate import CourseReport, Defect, Severity, validate_course

BRIEF = "brief"
"""The pseudo-artefact for the brief (held in course.yaml)."""
GLOSSARY = "glossary.yaml"
"""The one artefact no stage writes: merged from the plans after the wave."""


def norm_term(term: str) -> str:
    """A term as the validator compares terms: casefolded, whitespace runs to one space."""
    return " ".join(term.casefold().split())


@dataclass(frozen=True)
class LessonPlace:
    """One lesson of the curriculum, with its module."""

    module: Module
    lesson: LessonEntry

    @property
    def id(self) -> str:
        return self.lesson.id

    @property
    def directory(self) -> str:
        return module_dir(self.module)  # the course reader's layout, shared with the scorers and viewer

    def path(self, name: str) -> str:
        """A file of this lesson, from a stage's output pattern (``{lesson}.md``)."""
        return f"{self.directory}/{name.format(lesson=self.lesson.id)}"


@dataclass(frozen=True)
class CourseLayout:
    """The paths of a course with this curriculum."""

    curriculum: Curriculum
    _introduced: list[tuple[Mapping[str, LessonPlan], dict[str, LessonPlace]]] = field(
        default_factory=list, repr=False, compare=False)
    """The last introducers worked out, with the plans they were worked out from."""

    @classmethod
    def empty(cls) -> CourseLayout:
        return cls(Curriculum(modules=[]))

    def lessons(self) -> Iterator[LessonPlace]:
        """Every lesson, in lesson order (modules in list order, lessons in list order)."""
        for module in self.curriculum.modules:
            for lesson in module.lessons:
                yield LessonPlace(module, lesson)

    def lessons_of(self, module: Module) -> list[LessonPlace]:
        return [LessonPlace(module, lesson) for lesson in module.lessons]

    def lesson(self, lesson_id: str) -> LessonPlace | None:
        return next((place for place in self.lessons() if place.id == lesson_id), None)

    def plan_path(self, place: LessonPlace) -> str:
        return place.path("{lesson}.plan.yaml")

    def plan_paths(self) -> list[str]:
        return [self.plan_path(place) for place in self.lessons()]

    def outputs(self, stage: Stage) -> list[tuple[str, LessonPlace | None]]:
        """Every file ``stage`` writes in this course, with its lesson (None for course scope)."""
        if stage.scope == "course":
            return [(stage.output, None)]
        return [(place.path(stage.output), place) for place in self.lessons()]

    def introducers(self, plans: Mapping[str, LessonPlan]) -> dict[str, LessonPlace]:
        """norm(term) -> the lesson whose plan first introduces it; worked out once per plans mapping."""
        if self._introduced and self._introduced[0][0] is plans:
            return self._introduced[0][1]
        found = self._introducers(plans)
        self._introduced[:] = [(plans, found)]
        return found

    def _introducers(self, plans: Mapping[str, LessonPlan]) -> dict[str, LessonPlace]:
        found: dict[str, LessonPlace] = {}
        for place in self.lessons():
            plan = plans.get(place.id)
            for term in plan.new_terms if plan else []:
                found.setdefault(norm_term(term.term), place)
        return found

    def introducing(self, terms: list[str], plans: Mapping[str, LessonPlan]) -> list[LessonPlace]:
        """The lessons whose plans introduce ``terms``, first seen first."""
        introducer = self.introducers(plans)
        found: list[LessonPlace] = []
        for term in terms:
            place = introducer.get(norm_term(term))
            if place is not None and place not in found:
                found.append(place)
        return found

    def before(self, place: LessonPlace) -> list[LessonPlace]:
        earlier: list[LessonPlace] = []
        for candidate in self.lessons():
            if candidate.id == place.id:
                break
            earlier.append(candidate)
        return earlier


@dataclass
class RunReader:
    root: Path
    brief: Brief | None = None
    """The brief the run was given (a new course's, or course.yaml's)."""
    _files: CourseReader | None = field(default=None, repr=False)
    """The shared course reader (its parse cache), made on first read."""
    _plans: dict[str, LessonPlan] | None = field(default=None, repr=False)
    """Every plan, as last read; dropped whenever the run writes a plan or the curriculum."""
    _layout: CourseLayout | None = field(default=None, repr=False)

    def exists(self, path: str) -> bool:
        return (self.root / path).is_file()

    def load(self, path: str) -> Artefact:
        """A course file as its artefact, parsed again only when its bytes changed."""
        if self._files is None:
            self._files = CourseReader(self.root)
        loaded: Artefact = self._files.load(path, artefact_type(path))
        return loaded

    def curriculum(self) -> Curriculum | None:
        if not self.exists("curriculum.yaml"):
            return None
        loaded = self.load("curriculum.yaml")
        assert isinstance(loaded, Curriculum)
        return loaded

    @property
    def layout(self) -> CourseLayout:
        curriculum = self.curriculum()
        if curriculum is None:
            return CourseLayout.empty()
        if self._layout is None or self._layout.curriculum is not curriculum:
            self._layout = CourseLayout(curriculum)
        return self._layout

    def plans(self) -> dict[str, LessonPlan]:
        """Every plan on disk, by lesson id (read again only after the run wrote one)."""
        if self._plans is not None:
            return self._plans
        found: dict[str, LessonPlan] = {}
        for place in self.layout.lessons():
            path = place.path("{lesson}.plan.yaml")
            if self.exists(path):
                plan = self.load(path)
                assert isinstance(plan, LessonPlan)
                found[place.id] = plan
        self._plans = found
        return found

    def wrote(self, paths: Iterable[str]) -> None:
        """The run wrote ``paths``: the plans are read again if one is a plan or the curriculum."""
        if any(path.endswith(".plan.yaml") or path == "curriculum.yaml" for path in paths):
            self._plans = None


def course_report(root: Path, settings: Settings) -> CourseReport:
    """The validator's report on a course, against the house style ``settings`` choose."""
    return validate_course(root, data_dir=settings.resolved_data_dir())


def defects_in(root: Path, settings: Settings, paths: Iterable[str], *,
               fails_only: bool = False) -> tuple[Defect, ...]:
    """The defects the validator finds in ``paths``, in report order: the whole course is validated (cross-file
    rules need it); ``fails_only`` keeps FAILs."""
    wanted = set(paths)
    report = course_report(root, settings)
    return tuple(d for d in report.defects
                 if d.path in wanted and (not fails_only or d.severity == Severity.FAIL))
