"""What every scorer shares: results, the course on disk, and judges.

A scorer answers what counting cannot, with an opinion; it never gates a build. A
judge's reply that cannot be parsed becomes a failed item that keeps the raw text,
never a crash. Judges go through the model layer (the judging role, the same
request cache and usage accounting as the pipeline), or, with no key, through the
offline heuristic judge, which says so in every result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stay.artefacts import (
    Assessment,
    Audience,
    Curriculum,
    Exercises,
    LessonContent,
    LessonPlan,
    Outcomes,
    Project,
    Quiz,
    load,
)
from stay.errors import AnswerError, ModelError
from stay.models import ModelAnswer, ModelClient, ModelRequest, SystemBlock, Usage, model_for

A = TypeVar("A", bound=BaseModel)


class ItemResult(BaseModel):
    """One judged item: its score in [0, 1] and why; a failed item keeps the raw reply."""

    model_config = ConfigDict(frozen=True)

    item: str
    score: float
    reason: str
    failed: bool = False
    raw: str | None = None


class ScoreResult(BaseModel):
    """One scorer on one course: the items, their mean (failed items excluded), the judge."""

    model_config = ConfigDict(frozen=True)

    scorer: str
    score: float | None
    items: tuple[ItemResult, ...]
    judge: str
    failed: int = 0
    usage: Usage = Field(default_factory=Usage)

    @classmethod
    def of(cls, scorer: str, judge: str, items: list[ItemResult], usage: Usage | None = None) -> ScoreResult:
        scored = [item.score for item in items if not item.failed]
        return cls(scorer=scorer, score=sum(scored) / len(scored) if scored else None,
                   items=tuple(sorted(items, key=lambda i: i.item)), judge=judge,
                   failed=sum(item.failed for item in items), usage=usage or Usage())


@dataclass(frozen=True)
class LessonOnDisk:
    id: str
    plan: LessonPlan
    content: LessonContent | None
    exercises: Exercises | None
    quiz: Quiz | None


@dataclass(frozen=True)
class CourseOnDisk:
    """A course directory, loaded as typed artefacts: scorers judge courses on disk."""

    root: Path
    audience: Audience
    curriculum: Curriculum
    outcomes: Outcomes
    assessment: Assessment
    project: Project | None
    lessons: tuple[LessonOnDisk, ...]

    @classmethod
    def load(cls, root: str | Path) -> CourseOnDisk:
        root = Path(root)

        def maybe(path: Path, model: type[A]) -> A | None:
            return load(path, model) if path.is_file() else None

        curriculum = load(root / "curriculum.yaml", Curriculum)
        lessons = []
        for module in curriculum.modules:
            for lesson in module.lessons:
                prefix = root / "modules" / f"{module.id}-{module.slug}" / lesson.id
                lessons.append(LessonOnDisk(
                    lesson.id, load(Path(f"{prefix}.plan.yaml"), LessonPlan),
                    maybe(Path(f"{prefix}.md"), LessonContent),
                    maybe(Path(f"{prefix}.exercises.yaml"), Exercises), maybe(Path(f"{prefix}.quiz.yaml"), Quiz)))
        return cls(root, load(root / "audience.yaml", Audience), curriculum,
                   load(root / "outcomes.yaml", Outcomes), load(root / "assessment.yaml", Assessment),
                   maybe(root / "project.yaml", Project), tuple(lessons))


@dataclass(frozen=True)
class JudgeReply:
    data: dict[str, Any] | None
    """The parsed reply, or None when it could not be parsed (``raw`` says what came)."""
    raw: str
    model: str
    usage: Usage = field(default_factory=Usage)


class Judge(Protocol):
    @property
    def name(self) -> str: ...

    def ask(self, request: ModelRequest) -> JudgeReply: ...


def judge_request(scorer: str, instructions: str, item: str, inputs: dict[str, Any],
                  answer: type[BaseModel]) -> ModelRequest:
    """A judge's request: the scorer's fixed instructions, then the item to judge."""
    from stay.stages._prompt import render_inputs

    return ModelRequest(
        stage=f"judge-{scorer}", role="judging", artefact=item,
        system=(SystemBlock(text=instructions, cache=True),),
        user=render_inputs(inputs), output_schema=answer.model_json_schema(),
        output_name=answer.__name__, max_tokens=2_000, inputs=inputs,
    )


@dataclass
class ModelJudge:
    """A judge that is a model: the judging role, through any backend (cached or not)."""

    backend: ModelClient
    model: str = field(default_factory=lambda: model_for("judging"))

    @property
    def name(self) -> str:
        return f"model:{self.model}"

    def ask(self, request: ModelRequest) -> JudgeReply:
        try:
            answer: ModelAnswer = self.backend.complete(request, self.model)
        except AnswerError as exc:
            return JudgeReply(None, exc.raw if exc.raw is not None else str(exc), self.model)
        except ModelError as exc:
            return JudgeReply(None, f"(no reply: {exc})", self.model)
        return JudgeReply(answer.data, json.dumps(answer.data, sort_keys=True), answer.model, answer.usage)


def parsed(reply: JudgeReply, answer: type[A]) -> tuple[A | None, str | None]:
    """The reply as ``answer``, or (None, why it could not be read)."""
    if reply.data is None:
        return None, "the judge's reply is not JSON"
    try:
        return answer.model_validate(reply.data), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        return None, f"the judge's reply does not fit {answer.__name__}: {where}: {first['msg']}"


def failed_item(item: str, why: str, reply: JudgeReply) -> ItemResult:
    return ItemResult(item=item, score=0.0, reason=why, failed=True, raw=reply.raw)


def yes_no(item: str, verdict_field: str) -> Callable[[Any], ItemResult]:
    """A verdict from an answer's boolean field: 1 for yes, 0 for no, with its reason."""

    def verdict(answer: Any) -> ItemResult:
        return ItemResult(item=item, score=float(getattr(answer, verdict_field)), reason=answer.reason)

    return verdict


@dataclass
class Judging:
    """One scorer's pass over a course: asks the judge item by item, keeps the results
    and the usage, and turns an unreadable reply into a failed item."""

    scorer: str
    instructions: str
    judge: Judge
    items: list[ItemResult] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    def ask(self, item: str, inputs: dict[str, Any], answer: type[A],
            verdict: Callable[[A], ItemResult]) -> None:
        reply = self.judge.ask(judge_request(self.scorer, self.instructions, item, inputs, answer))
        self.usage = self.usage + reply.usage
        parsed_answer, why = parsed(reply, answer)
        self.items.append(failed_item(item, why or "unreadable", reply) if parsed_answer is None
                          else verdict(parsed_answer))

    def add(self, result: ItemResult) -> None:
        self.items.append(result)

    def result(self) -> ScoreResult:
        return ScoreResult.of(self.scorer, self.judge.name, self.items, self.usage)
