"""Dispatch from a course file to the stage that writes it: the one place a request is
made and its answer written, for the design nodes, the wave, repair and revision.

Which stage writes a file, and for which lesson or module, is on the artefact graph's
node (derived from the stage declarations), so there is no table of suffixes here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stay.artefacts import Artefact, Module
from stay.errors import PipelineError
from stay.pipeline._gateway import ModelGateway, with_note
from stay.pipeline._inputs import Unit, stage_inputs
from stay.pipeline._reader import RunReader
from stay.pipeline._run import RunConfig, Writer
from stay.pipeline._state import CourseState
from stay.requests import ModelAnswer, ModelRequest
from stay.stages import Stage


@dataclass(frozen=True)
class Note:
    """Something added to a request: the validator's defects, a reviewer's guidance."""

    name: str
    value: object
    text: str


@dataclass(frozen=True)
class Job:
    """One call of a stage: its request, and how its answer becomes its files."""

    stage: Stage
    unit: Unit
    paths: tuple[str, ...]
    """The files the answer becomes, in the order ``parse`` returns them."""
    request: ModelRequest
    parse: Callable[[ModelAnswer], list[Artefact]]


def job(config: RunConfig, reader: RunReader, stage: Stage, unit: Unit, notes: tuple[Note, ...] = ()) -> Job:
    """The call of ``stage`` for ``unit`` (a lesson, a module, or the course)."""
    layout = reader.layout
    if isinstance(unit, Module):
        paths = tuple(place.path(stage.output) for place in layout.lessons_of(unit))
    elif unit is not None:
        paths = (unit.path(stage.output),)
    else:
        paths = (stage.output,)
    artefact = paths[0] if len(paths) == 1 else f"{paths[0].rsplit('/', 1)[0]}/*{stage.output.split('}', 1)[1]}"
    inputs = stage_inputs(stage, unit, reader)
    request = stage.request(inputs, config.prompts, artefact)
    for note in notes:
        request = with_note(request, note.name, note.value, note.text)
    return Job(stage, unit, paths, request, lambda answer: stage.artefacts(answer, inputs, artefact, config.limits))


def owner(config: RunConfig, reader: RunReader, ledger: CourseState, path: str) -> tuple[Stage, Unit]:
    """The stage that writes ``path``, and the lesson or module it writes it for."""
    graph = ledger.graph
    if path not in graph or graph.nodes[path].get("stage") not in {s.name for s in config.stages}:
        raise PipelineError(f"{path} is written by no stage of this course")
    stage = config.stage(graph.nodes[path]["stage"])
    lesson = graph.nodes[path].get("unit")
    if stage.scope == "course" or lesson is None:
        return stage, None
    place = reader.layout.lesson(lesson)
    if place is None:
        raise PipelineError(f"{path}: lesson {lesson} is not in the curriculum")
    return stage, (place.module if stage.scope == "module" else place)


@dataclass(frozen=True)
class Again:
    """What asking a stage again for a file on disk works through (repair, revision, the
    check at the write): the request is made from the config and the reader, the file's
    stage found in the ledger's graph, the answer asked through the model gateway and
    written by the writer."""

    config: RunConfig
    reader: RunReader
    ledger: CourseState
    model: ModelGateway
    writer: Writer


def regenerate(again: Again, path: str, notes: tuple[Note, ...] = (), *, only: tuple[str, ...] = ()) -> list[str]:
    """Ask ``path``'s stage again (with ``notes``) and write what it answers: every file
    of the call, or of them only those in ``only``. Returns the paths written."""
    stage, unit = owner(again.config, again.reader, again.ledger, path)
    made = job(again.config, again.reader, stage, unit, notes)
    artefacts = again.model.produce(made.request, made.parse)
    keep = set(only) or set(made.paths)
    chosen = {target: artefact for target, artefact in zip(made.paths, artefacts, strict=True) if target in keep}
    return list(chosen) if again.writer.write(chosen) else []
