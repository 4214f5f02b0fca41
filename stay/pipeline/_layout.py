"""Where a course's files are, what each stage reads of them (a stage says *what* it reads,
``stay.stages._stage``; this is the one place that knows where), reading them back as artefacts,
and the validator's checks on them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import takewhile
from pathlib import Path
from typing import Any, TypeVar

from stay.artefacts import (
    Artefact,
    Brief,
    CourseExample,
    CourseReader,
    Curriculum,
    LessonEntry,
    LessonPlan,
    Module,
    Outcomes,
    RunningExample,
    artefact_type,
    dump,
    module_dir,
)
from stay.errors import GraphError, PipelineError
from stay.settings import Settings
from stay.stages import (
    AllPlansInput,
    DataFilesInput,
    DefinitionsInput,
    EarlierLessonsInput,
    EarlierPlansInput,
    LessonOutcomesInput,
    ModuleIdInput,
    Source,
    Stage,
    lesson_file,
)
from stay.validate import CourseReport, Defect, Severity, validate_course

BRIEF = "brief"
"""The pseudo-artefact for the brief (held in course.yaml)."""
GLOSSARY = "glossary.yaml"
"""The one artefact no stage writes: merged from the plans after the wave."""
A = TypeVar("A", bound=Artefact)


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

    def path(self, name: str) -> str:
        """A file of this lesson, from a stage's output pattern (``{lesson}.md``), in its module's directory (the
        course reader's layout, shared with the scorers and viewer)."""
        return f"{module_dir(self.module)}/{name.format(lesson=self.lesson.id)}"


@dataclass(frozen=True)
class CourseLayout:
    """The paths of a course with this curriculum."""

    curriculum: Curriculum
    _introduced: list[tuple[Mapping[str, LessonPlan], dict[str, LessonPlace]]] = field(
        default_factory=list, repr=False, compare=False)
    """The last introducers worked out, with the plans they were worked out from."""

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
        found: dict[str, LessonPlace] = {}
        for place in self.lessons():
            plan = plans.get(place.id)
            for term in plan.new_terms if plan else []:
                found.setdefault(norm_term(term.term), place)
        self._introduced[:] = [(plans, found)]
        return found

    def before(self, place: LessonPlace) -> list[LessonPlace]:
        return list(takewhile(lambda candidate: candidate.id != place.id, self.lessons()))

    def before_module(self, module: Module) -> list[LessonPlace]:
        """Every lesson of the modules before ``module``."""
        return list(takewhile(lambda candidate: candidate.module.id != module.id, self.lessons()))


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

    def load_as(self, path: str, kind: type[A]) -> A:
        """``load``, of the kind its name makes it."""
        loaded = self.load(path)
        assert isinstance(loaded, kind)
        return loaded

    def curriculum(self) -> Curriculum | None:
        return self.load_as("curriculum.yaml", Curriculum) if self.exists("curriculum.yaml") else None

    @property
    def layout(self) -> CourseLayout:
        curriculum = self.curriculum()
        if curriculum is None:
            return CourseLayout(Curriculum(modules=[]))
        if self._layout is None or self._layout.curriculum is not curriculum:
            self._layout = CourseLayout(curriculum)
        return self._layout

    def plans(self) -> dict[str, LessonPlan]:
        """Every plan on disk, by lesson id (read again only after the run wrote one)."""
        if self._plans is None:
            layout = self.layout
            plans: dict[str, LessonPlan] = {}
            for place in layout.lessons():
                path = layout.plan_path(place)
                if self.exists(path):
                    plans[place.id] = self.load_as(path, LessonPlan)
            self._plans = plans
        return self._plans

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


Unit = LessonPlace | Module | None
"""What one call is about: a lesson, a module, or (None) the course."""
DATA_CHARS = 8_000
"""The most of a data file's text a request carries (``DataFilesInput``)."""


def input_paths(source: Source, unit: Unit, layout: CourseLayout, plans: Mapping[str, LessonPlan]) -> list[str]:
    """The artefacts ``source`` reads for ``unit``: the edges into what it makes."""
    if isinstance(source, type):
        file = lesson_file(source)
        return [BRIEF] if source is Brief else [CourseExample.FILE] if source is RunningExample \
            else [_place(unit).path(file)] if file else [str(source.FILE)]
    if isinstance(source, LessonOutcomesInput):
        return [Outcomes.FILE]
    if isinstance(source, ModuleIdInput):
        return []
    if isinstance(source, DefinitionsInput):
        plan, introducer = plans.get(_place(unit).id), layout.introducers(plans)
        if plan is None:
            return []
        terms = [norm_term(term) for term in _relied_on(plan)]
        return sorted({layout.plan_path(introducer[term]) for term in terms if term in introducer})
    if isinstance(source, EarlierLessonsInput):
        return [layout.plan_path(p) for p in layout.before(_place(unit))]
    if isinstance(source, EarlierPlansInput):
        return [layout.plan_path(p) for p in layout.before_module(_module(unit))]
    if isinstance(source, AllPlansInput):
        return layout.plan_paths()
    if isinstance(source, DataFilesInput):  # the files' text is example.yaml's; which are named, the lesson's
        return [CourseExample.FILE, *(_place(unit).path(str(kind.FILE)) for kind in source.named_in)]
    raise GraphError(f"no way to find an input of kind {type(source).__name__}")


def input_value(source: Source, unit: Unit, reader: RunReader) -> Any:
    layout = reader.layout
    if source is Brief:
        if reader.brief is None:
            raise PipelineError("this run has no brief to give the stage")
        return reader.brief
    if source is RunningExample:
        return reader.load_as(CourseExample.FILE, CourseExample).running()
    if isinstance(source, ModuleIdInput):
        return _module(unit).id
    if isinstance(source, DataFilesInput):
        return _data_files(source, _place(unit), reader)
    if isinstance(source, LessonOutcomesInput):
        return [o for o in reader.load_as(Outcomes.FILE, Outcomes).outcomes if o.lesson == _place(unit).id]
    if isinstance(source, type) and source is not LessonPlan:
        file = lesson_file(source)
        return reader.load(_place(unit).path(file) if file else str(source.FILE))
    plans = reader.plans()
    if source is LessonPlan:
        return _plan(plans, _place(unit))
    if isinstance(source, DefinitionsInput):
        return _definitions(_plan(plans, _place(unit)), layout, plans)
    if isinstance(source, EarlierLessonsInput):
        return [{"lesson": p.id, "title": plans[p.id].title, "new_terms": [t.term for t in plans[p.id].new_terms]}
                for p in layout.before(_place(unit)) if p.id in plans]
    if isinstance(source, EarlierPlansInput):
        return [plans[p.id] for p in layout.before_module(_module(unit)) if p.id in plans]
    if isinstance(source, AllPlansInput):
        return [_plan(plans, place) for place in layout.lessons()]
    raise GraphError(f"no way to find an input of kind {type(source).__name__}")


def stage_inputs(stage: Stage, unit: Unit, reader: RunReader) -> dict[str, Any]:
    """Every declared input of ``stage`` for ``unit``, by name, in declaration order."""
    return {name: input_value(source, unit, reader) for name, source in stage.inputs}


def direct_inputs(stage: Stage, unit: Unit, layout: CourseLayout, plans: Mapping[str, LessonPlan]) -> list[str]:
    """The artefacts an output of ``stage`` for ``unit`` is made from (sorted, unique)."""
    return sorted({path for _name, source in stage.inputs for path in input_paths(source, unit, layout, plans)})


def _data_files(source: DataFilesInput, place: LessonPlace, reader: RunReader) -> dict[str, str]:
    """path -> the text of each data file the lesson's files name, cut at ``DATA_CHARS``."""
    if not reader.exists(CourseExample.FILE):
        return {}
    example = reader.load_as(CourseExample.FILE, CourseExample)
    paths = [place.path(str(kind.FILE)) for kind in source.named_in]
    said = "".join(dump(reader.load(path)) for path in paths if reader.exists(path))
    return {file.path: file.text[:DATA_CHARS] for file in example.files if file.path in said}


def _relied_on(plan: LessonPlan) -> list[str]:
    """The terms a lesson's plan relies on: its prerequisites, then its revisits."""
    return [*plan.prerequisites, *plan.revisits]


def _definitions(plan: LessonPlan, layout: CourseLayout, plans: Mapping[str, LessonPlan]) -> list[dict[str, str]]:
    """Each of the plan's prerequisites and revisits, once, with the definition its introducing plan wrote."""
    introducer = layout.introducers(plans)
    found: dict[str, dict[str, str]] = {}
    for term in _relied_on(plan):
        place = introducer.get(norm_term(term))
        if place is None or norm_term(term) in found:
            continue
        entry = next(t for t in plans[place.id].new_terms if norm_term(t.term) == norm_term(term))
        found[norm_term(term)] = {"term": entry.term, "definition": entry.definition, "lesson": place.id}
    return list(found.values())


def _place(unit: Unit) -> LessonPlace:
    if not isinstance(unit, LessonPlace):
        raise GraphError("a lesson-scope input was asked for outside a lesson")
    return unit


def _module(unit: Unit) -> Module:
    if not isinstance(unit, Module):
        raise GraphError("a module-scope input was asked for outside a module")
    return unit


def _plan(plans: Mapping[str, LessonPlan], place: LessonPlace) -> LessonPlan:
    plan = plans.get(place.id)
    if plan is None:
        raise PipelineError(f"{place.path('{lesson}.plan.yaml')} is missing; plan the lesson first (stay build)")
    return plan
