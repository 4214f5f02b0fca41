"""One declaration per stage (``Stage``): the pipeline derives from it its stage nodes,
the artefact graph's edges, the dispatch, the handlers, the offline answers and the tests'
tables. A stage stays pure: its typed inputs to a request (``Stage.request``), the model's
answer to its artefacts (``Stage.artefacts``); no I/O, clock or randomness."""

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
"""Before the design gate, between the gates, in the wave, or after it (the review)."""
Scope = Literal["course", "module", "lesson"]
"""What one call is about (a module's call answers for all its lessons)."""


# An input is named by the artefact kind it reads (``Audience``: its FILE; a lesson file's
# kind: this lesson's; ``Brief``: course.yaml's brief; ``RunningExample``: example.yaml as
# plans carry it, data files by path and first lines only, so a request stays bounded), or
# by one of these views. stay.pipeline._layout finds each in a course.


@dataclass(frozen=True)
class LessonOutcomesInput:
    """This lesson's outcomes, from outcomes.yaml (lesson scope)."""


@dataclass(frozen=True)
class EarlierLessonsInput:
    """Every lesson before this one, in lesson order: its title and the terms its plan
    introduces, nothing more, so a long course's request stays bounded (lesson scope)."""


@dataclass(frozen=True)
class DefinitionsInput:
    """Each term this lesson's plan lists under ``prerequisites`` or ``revisits``, with its
    definition as the plan that introduces it wrote it (lesson scope)."""


@dataclass(frozen=True)
class ModuleIdInput:
    """This module's id (module scope): no file, so no edge."""


@dataclass(frozen=True)
class EarlierPlansInput:
    """The plans of every module before this one (module scope)."""


@dataclass(frozen=True)
class AllPlansInput:
    """Every lesson plan of the course, in lesson order."""


@dataclass(frozen=True)
class DataFilesInput:
    """The whole text of each of the running example's data files that this lesson's files
    of the kinds ``named_in`` name, each cut at 8,000 characters: enough to check a figure
    against the data, bounded however large a file is (lesson scope)."""

    named_in: tuple[type[Artefact], ...]


View = (LessonOutcomesInput | EarlierLessonsInput | DefinitionsInput | ModuleIdInput | EarlierPlansInput
        | AllPlansInput | DataFilesInput)
Source = type[Artefact] | View

SCOPED: Mapping[type, tuple[Scope, ...]] = {
    LessonOutcomesInput: ("lesson",), EarlierLessonsInput: ("lesson",), DefinitionsInput: ("lesson",),
    ModuleIdInput: ("module",), EarlierPlansInput: ("module",), DataFilesInput: ("lesson",),
}
"""Views that only make sense for a scope; the rest fit every scope."""


def lesson_file(source: Source) -> str | None:
    """The ``FILE`` of a kind of lesson file (``{lesson}.quiz.yaml``: this lesson's, read at
    lesson scope); None for any other input."""
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
    """The answer is the artefact (its answer model is the artefact's model)."""
    made: Artefact = answer
    return made


@dataclass(frozen=True)
class Stage:
    """A stage, declared once."""

    name: str
    role: Role
    phase: Phase
    scope: Scope
    answer: type[BaseModel]
    """The structured answer asked of the model (its JSON schema goes with the request)."""
    inputs: tuple[tuple[str, Source], ...]
    """(name, what it reads), in the order the request shows them."""
    needs: tuple[str, ...]
    """Its reference floor: documents it cannot do without. A prompts directory whose front
    matter no longer reaches one is refused; the first of its own references, in this order."""
    offline: OfflineAnswer
    """Its offline answer: the request's inputs to the answer, as plain data, pure, complete
    enough that the course passes the validator with --strict."""
    makes: type[Artefact] | None = None
    """The kind it writes, when the answer is another shape; its ``FILE`` is ``output``."""
    shared: tuple[str, ...] = ()
    """Inputs every call of the stage in one run shares: sent first, and cached."""
    make: Make = same
    """Answer (and typed inputs) -> its artefact, or a module's in lesson order."""
    check: Check | None = None
    """Checked before anything is written: the calls after a stage can scale with what it
    made (the curriculum's modules and lessons), so a misfit is refused early."""
    template: str = ""
    """Its template's name in prompts/ (default: its name)."""
    node: str = ""
    """The pipeline node that runs it (default: from phase and scope)."""
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
        """Where its artefact goes (its kind's ``FILE``: ``audience.yaml``, ``{lesson}.plan.yaml``)."""
        file = self.kind.FILE
        assert file is not None
        return file

    def answer_offline(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The offline answer to one of its requests (``_offline.answer_offline``)."""
        return answer_offline(self.name, self.offline, inputs)

    @property
    def written(self) -> str:
        """The course path a reference's ``files:`` globs are matched against."""
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
        """The request for one call, from its typed inputs (pure)."""
        data = {name: _plain(inputs[name]) for name, _source in self.inputs}
        return build_request(stage=self.name, template=self.prompt, role=self.role,
                             references=prompts.reference_set(self), prompts=prompts, artefact=artefact,
                             output=self.answer, inputs=data, shared=self.shared, offline=self.answer_offline)

    def artefacts(self, answer: ModelAnswer, inputs: Mapping[str, Any], artefact: str,
                  limits: DurationLimits = DEFAULT_LIMITS) -> list[Artefact]:
        """The model's answer as this call's artefacts; a misfit is an ``AnswerError`` naming
        the stage, the file and the field. ``limits`` is the run's house style, for ``check``."""
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
