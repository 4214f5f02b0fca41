"""One declaration per stage (``Stage``), from which the pipeline derives its nodes, edges and
handlers. A stage stays pure: no I/O, clock or randomness."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from stay.artefacts import DEFAULT_LIMITS, Artefact, Brief, DurationLimits, RunningExample, to_data
from stay.errors import GraphError
from stay.requests import ModelAnswer, ModelRequest, OfflineAnswer, Role
from stay.stages._offline import answer_offline
from stay.stages._prompt import Prompts, build_request, parse_answer, written_path

Phase = Literal["design", "plan", "wave", "review"]
Scope = Literal["course", "module", "lesson"]  # a module's call answers for all its lessons


# An input is named by the artefact kind it reads, or by one of these views (stay.pipeline._layout
# finds each in a course).


@dataclass(frozen=True)
class LessonOutcomesInput:
    """This lesson's outcomes."""


@dataclass(frozen=True)
class EarlierLessonsInput:
    """Each earlier lesson's title and new terms, nothing more, so a long course's request stays bounded."""


@dataclass(frozen=True)
class DefinitionsInput:
    """Each of this plan's ``prerequisites`` and ``revisits`` with the definition its introducing plan gave."""


@dataclass(frozen=True)
class ModuleIdInput:
    """This module's id: no file, so no edge."""


@dataclass(frozen=True)
class EarlierPlansInput:
    """The plans of every module before this one (module scope)."""


@dataclass(frozen=True)
class AllPlansInput:
    """Every lesson plan of the course, in lesson order."""


@dataclass(frozen=True)
class DataFilesInput:
    """Each data file this lesson's files of the kinds ``named_in`` name, cut at 8,000 characters."""

    named_in: tuple[type[Artefact], ...]


View = (LessonOutcomesInput | EarlierLessonsInput | DefinitionsInput | ModuleIdInput | EarlierPlansInput
        | AllPlansInput | DataFilesInput)
Source = type[Artefact] | View

SCOPED: Mapping[type, tuple[Scope, ...]] = {
    LessonOutcomesInput: ("lesson",), EarlierLessonsInput: ("lesson",), DefinitionsInput: ("lesson",),
    ModuleIdInput: ("module",), EarlierPlansInput: ("module",), DataFilesInput: ("lesson",),
}


def lesson_file(source: Source) -> str | None:
    return source.FILE if isinstance(source, type) and "{lesson}" in (source.FILE or "") else None


def _source_problem(name: str, source: Source, scope: Scope) -> str | None:
    if isinstance(source, type):
        if source not in (Brief, RunningExample) and source.FILE is None:
            return f"input {name!r} ({source.__name__}) is no course file; name a kind with a FILE"
        return f"input {name!r} ({source.__name__}) is a lesson's file: it needs scope lesson, not {scope}" \
            if lesson_file(source) and scope != "lesson" else None
    scopes = SCOPED.get(type(source))
    if scopes is not None and scope not in scopes:
        return f"input {name!r} ({type(source).__name__}) needs scope {scopes[0]}, not {scope}"
    return None


Make = Callable[[Any, Mapping[str, Any]], Artefact | Sequence[Artefact]]
Check = Callable[[Sequence[Artefact], Mapping[str, Any], DurationLimits], None]
"""A stage's own check of what it made: an ``AnswerError`` asks for the answer again."""


def same(answer: Any, _inputs: Mapping[str, Any]) -> Artefact:
    made: Artefact = answer
    return made


@dataclass(frozen=True)
class Stage:
    name: str
    role: Role
    phase: Phase
    scope: Scope
    answer: type[BaseModel]  # the structured answer asked of the model
    inputs: tuple[tuple[str, Source], ...]  # in the order the request shows them
    needs: tuple[str, ...]
    """Its reference floor: a prompts directory whose front matter no longer reaches one is refused."""
    offline: OfflineAnswer
    """Pure, and complete enough that the course passes the validator with --strict."""
    makes: type[Artefact] | None = None  # the kind it writes, when the answer is another shape
    shared: tuple[str, ...] = ()  # inputs every call in one run shares: sent first, and cached
    make: Make = same  # answer (and typed inputs) -> its artefact, or a module's in lesson order
    check: Check | None = None
    """Run before anything is written: later calls scale with what it made, so a misfit is refused early."""
    template: str = ""  # default: its name
    node: str = ""  # default: from phase and scope
    doc: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        problems = []
        names = [name for name, _source in self.inputs]
        if len(set(names)) != len(names):
            problems.append("an input name is used twice")
        for name in self.shared:
            if name not in names:
                problems.append(f"shared input {name!r} is not one of its inputs")
        problems += [found for name, source in self.inputs if (found := _source_problem(name, source, self.scope))]
        kind = self.makes or self.answer
        file = kind.FILE if issubclass(kind, Artefact) else None
        if file is None:
            problems.append(f"{kind.__name__} is no course file (an Artefact with a FILE); name the kind it "
                            "makes (makes=...)")
        elif self.scope == "course" and "{lesson}" in file:
            problems.append("a course-scope output names no lesson")
        elif self.scope != "course" and "{lesson}" not in file:
            problems.append("a module- or lesson-scope output must contain {lesson}")
        if self.phase == "plan" and self.scope == "lesson":
            problems.append("planning runs per module or per course, before the wave")
        if problems:
            raise GraphError(f"stage {self.name}: " + "; ".join(problems))

    @property
    def kind(self) -> type[Artefact]:
        kind = self.makes or self.answer
        assert issubclass(kind, Artefact)
        return kind

    @property
    def output(self) -> str:
        file = self.kind.FILE
        assert file is not None
        return file

    def answer_offline(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return answer_offline(self.name, self.offline, inputs)

    @property
    def written(self) -> str:
        return written_path(self.scope, self.output)

    @property
    def prompt(self) -> str:
        return self.template or self.name

    @property
    def node_name(self) -> str:
        if self.node:
            return self.node
        if self.phase == "wave":
            return "write_lesson" if self.scope == "lesson" else f"write_{self.name}"
        return self.name if self.scope == "course" else f"{self.name}_modules"

    def request(self, inputs: Mapping[str, Any], prompts: Prompts, artefact: str) -> ModelRequest:
        data = {name: _plain(inputs[name]) for name, _source in self.inputs}
        return build_request(stage=self.name, template=self.prompt, role=self.role,
                             references=prompts.reference_set(self), prompts=prompts, artefact=artefact,
                             output=self.answer, inputs=data, shared=self.shared, offline=self.answer_offline)

    def artefacts(self, answer: ModelAnswer, inputs: Mapping[str, Any], artefact: str,
                  limits: DurationLimits = DEFAULT_LIMITS) -> list[Artefact]:
        """A misfit is an ``AnswerError`` naming the stage, the file and the field."""
        parsed = parse_answer(self.answer, answer, self.name, artefact)
        made = self.make(parsed, inputs)
        artefacts = list(made) if isinstance(made, Sequence) else [made]
        if self.check is not None:
            self.check(artefacts, inputs, limits)
        return artefacts


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return to_data(value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
