"""How a stage's declared inputs are found in a course: the files each reads (the artefact
graph's edges) and their values. A stage says *what* it reads; this is the one place that knows where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from stay.artefacts import Artefact, Brief, CourseExample, LessonPlan, Module, Outcomes, RunningExample, dump
from stay.errors import GraphError, PipelineError
from stay.pipeline._layout import BRIEF, CourseLayout, LessonPlace, norm_term
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

Unit = LessonPlace | Module | None  # None: the course
DATA_CHARS = 8_000  # the most of a data file's text a request carries


class Reader(Protocol):
    @property
    def brief(self) -> Brief | None: ...

    @property
    def layout(self) -> CourseLayout: ...

    def load(self, path: str) -> Artefact: ...

    def exists(self, path: str) -> bool: ...

    def plans(self) -> dict[str, LessonPlan]: ...


def input_paths(source: Source, unit: Unit, layout: CourseLayout, plans: Mapping[str, LessonPlan]) -> list[str]:
    if isinstance(source, type):
        file = lesson_file(source)
        return [BRIEF] if source is Brief else [CourseExample.FILE] if source is RunningExample \
            else [_place(unit).path(file)] if file else [str(source.FILE)]
    if isinstance(source, LessonOutcomesInput):
        return [Outcomes.FILE]
    if isinstance(source, ModuleIdInput):
        return []
    if isinstance(source, DefinitionsInput):
        plan = plans.get(_place(unit).id)
        return sorted({layout.plan_path(p) for p in layout.introducing(_relied_on(plan), plans)}) if plan else []
    if isinstance(source, EarlierLessonsInput):
        return [layout.plan_path(p) for p in layout.before(_place(unit))]
    if isinstance(source, EarlierPlansInput):
        return [layout.plan_path(p) for p in _earlier(layout, _module(unit))]
    if isinstance(source, AllPlansInput):
        return layout.plan_paths()
    if isinstance(source, DataFilesInput):  # the files' text is example.yaml's; which are named, the lesson's
        return [CourseExample.FILE, *(_place(unit).path(str(kind.FILE)) for kind in source.named_in)]
    raise GraphError(f"no way to find an input of kind {type(source).__name__}")


def input_value(source: Source, unit: Unit, reader: Reader) -> Any:
    layout = reader.layout
    if source is Brief:
        if reader.brief is None:
            raise PipelineError("this run has no brief to give the stage")
        return reader.brief
    if source is RunningExample:
        example = reader.load(CourseExample.FILE)
        assert isinstance(example, CourseExample)
        return example.running()
    if isinstance(source, ModuleIdInput):
        return _module(unit).id
    if isinstance(source, DataFilesInput):
        return _data_files(source, _place(unit), reader)
    if isinstance(source, LessonOutcomesInput):
        outcomes = reader.load(Outcomes.FILE)
        assert isinstance(outcomes, Outcomes)
        return [o for o in outcomes.outcomes if o.lesson == _place(unit).id]
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
        return [plans[p.id] for p in _earlier(layout, _module(unit)) if p.id in plans]
    if isinstance(source, AllPlansInput):
        return [_plan(plans, place) for place in layout.lessons()]
    raise GraphError(f"no way to find an input of kind {type(source).__name__}")


def stage_inputs(stage: Stage, unit: Unit, reader: Reader) -> dict[str, Any]:
    return {name: input_value(source, unit, reader) for name, source in stage.inputs}


def direct_inputs(stage: Stage, unit: Unit, layout: CourseLayout, plans: Mapping[str, LessonPlan]) -> list[str]:
    return sorted({path for _name, source in stage.inputs for path in input_paths(source, unit, layout, plans)})


def _data_files(source: DataFilesInput, place: LessonPlace, reader: Reader) -> dict[str, str]:
    if not reader.exists(CourseExample.FILE):
        return {}
    example = reader.load(CourseExample.FILE)
    assert isinstance(example, CourseExample)
    paths = [place.path(str(kind.FILE)) for kind in source.named_in]
    said = "".join(dump(reader.load(path)) for path in paths if reader.exists(path))
    return {file.path: file.text[:DATA_CHARS] for file in example.files if file.path in said}


def _relied_on(plan: LessonPlan) -> list[str]:
    return [*plan.prerequisites, *plan.revisits]


def _definitions(plan: LessonPlan, layout: CourseLayout, plans: Mapping[str, LessonPlan]) -> list[dict[str, str]]:
    """A term no plan introduces is left out (the validator's trm002/trm003)."""
    introducer = layout.introducers(plans)
    found: dict[str, dict[str, str]] = {}
    for term in _relied_on(plan):
        place = introducer.get(norm_term(term))
        if place is None or norm_term(term) in found:
            continue
        entry = next(t for t in plans[place.id].new_terms if norm_term(t.term) == norm_term(term))
        found[norm_term(term)] = {"term": entry.term, "definition": entry.definition, "lesson": place.id}
    return list(found.values())


def _earlier(layout: CourseLayout, module: Module) -> list[LessonPlace]:
    earlier: list[LessonPlace] = []
    for candidate in layout.curriculum.modules:
        if candidate.id == module.id:
            return earlier
        earlier += layout.lessons_of(candidate)
    return earlier


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
