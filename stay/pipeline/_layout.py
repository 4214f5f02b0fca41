"""Where everything of a course is: the one owner of paths and of term normalisation.

Every path the pipeline builds comes from a ``CourseLayout``, and a layout is only
made from a ``Curriculum``, whose type has already checked every id and slug that
becomes part of a path (``stay.artefacts``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from stay.artefacts import Curriculum, LessonEntry, LessonPlan, Module, module_dir
from stay.stages import Stage

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
        """norm(term) -> the lesson whose plan first introduces it, in lesson order.
        Worked out once for the same plans mapping: every quiz asks for it."""
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
        """Every lesson before ``place``, in lesson order."""
        earlier: list[LessonPlace] = []
        for candidate in self.lessons():
            if candidate.id == place.id:
                break
            earlier.append(candidate)
        return earlier
