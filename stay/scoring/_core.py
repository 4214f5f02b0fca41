"""What every scorer shares: results, the course on disk, judges, and ``@scorer``. A judge that
fails is not a judge that said "no": an unparseable reply or an API error is a failed item,
counted apart from the scores. The lesson goes first in a judge's request, as one cached block
every item judged on it shares; each item keeps, bounded, what its judge was shown and said."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stay.artefacts import (
    Assessment,
    Audience,
    CourseExample,
    CourseReader,
    Curriculum,
    Exercises,
    LessonContent,
    LessonPlan,
    Outcomes,
    Project,
    Quiz,
    lesson_file,
)
from stay.errors import AnswerError, ModelError, ModelUnavailable
from stay.models import (
    DEFAULT_MODELS,
    ModelAnswer,
    ModelClient,
    ModelRequest,
    Rejecting,
    SystemBlock,
    Usage,
    answer_cost,
    prices_of,
)
from stay.models import cost as cost_at

A = TypeVar("A", bound=BaseModel)
T = TypeVar("T", bound=type)
# Characters an item keeps of what its judge was shown (an item is a few hundred), of its quote,
# of its raw reply (enough of unparseable prose to see what went wrong), and of a data file a judge is shown
MAX_SHOWN = 2_000
MAX_QUOTE = 1_000
MAX_RAW = 4_000
MAX_DATA = 8_000
Failure = Literal["unparseable", "error"]

JUDGE_SYSTEM = (
    "You review one part of a course written for adult learners, as a demanding teacher would. "
    "The lesson (when there is one) comes first, then what you are asked to judge and how. Judge only "
    "what is written, quote only what is there, and answer with JSON that fits the schema given."
)


WHAT_TO_JUDGE = "# What to judge\n\n"  # the user turn: the scorer's instructions, then the item


def bounded(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def lesson_note(lesson: str) -> str:
    """What an item's ``shown`` says in place of the lesson its judge read first."""
    return f"(the lesson came first: {len(lesson)} characters, not repeated here)\n\n"


def text_of(value: Any) -> str:
    """Every string in a JSON value, one per line: what a judge's quote is checked against."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(text_of(v) for v in value.values())
    if isinstance(value, list | tuple):
        return "\n".join(text_of(v) for v in value)
    return ""


def content_hash(value: Any) -> str:
    """sha256 of a JSON value in canonical form: what an item's judge was shown."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ItemResult(BaseModel):
    """One judged item: its score in [0, 1] and why, or why the judge failed. ``content`` is the
    sha256 of what was judged (not the instructions): runs are matched by it, never by position."""

    model_config = ConfigDict(frozen=True)

    item: str
    content: str = ""
    score: float | None
    reason: str
    failure: Failure | None = None
    raw: str | None = None  # None: no judge was asked
    quote: str | None = None
    shown: str | None = None
    """What the judge was shown, the lesson left out; optional so older reports read as they did."""
    lesson: str | None = None  # the id of the lesson its judge read first

    @property
    def failed(self) -> bool:
        return self.failure is not None


class ScoreResult(BaseModel):
    """One scorer on one course: the items, their mean (failed items excluded), the judge, the failures."""

    model_config = ConfigDict(frozen=True)

    scorer: str
    version: int = 1
    score: float | None
    items: tuple[ItemResult, ...]
    judge: str
    unparseable: int = 0
    errors: int = 0
    judged: bool = True
    """False: the judge could not judge this scorer at all (offline): no score, mean or pass anywhere."""
    not_judged: str | None = None  # why, as every page shows it in place of a score
    usage: Usage = Field(default_factory=Usage)
    cost: float | None = 0.0  # at the judge's backend's prices; None: unknown, never $0

    @classmethod
    def of(cls, scorer: str, judge: str, items: list[ItemResult], usage: Usage | None = None,
           version: int = 1, cost: float | Literal["by name"] | None = "by name") -> ScoreResult:
        """``cost`` is the judge's own (``Judging.cost``); "by name": a ``model:ID`` judge's
        usage at Claude's table (the rule before backends declared prices), else nothing."""
        if cost == "by name":
            named = judge.removeprefix("model:") if judge.startswith("model:") else None
            cost = cost_at(named, usage or Usage()) if named else 0.0
        scored = [item.score for item in items if item.score is not None and not item.failed]
        return cls(scorer=scorer, version=version, score=sum(scored) / len(scored) if scored else None,
                   items=tuple(sorted(items, key=lambda i: (i.item, i.content))), judge=judge,
                   unparseable=sum(item.failure == "unparseable" for item in items),
                   errors=sum(item.failure == "error" for item in items), usage=usage or Usage(), cost=cost)

    @classmethod
    def unjudged(cls, scorer: str, judge: str, why: str, version: int = 1) -> ScoreResult:
        return cls(scorer=scorer, version=version, score=None, items=(), judge=judge, judged=False, not_judged=why)

    @property
    def failed(self) -> int:
        return self.unparseable + self.errors


@dataclass(frozen=True)
class LessonOnDisk:
    id: str
    plan: LessonPlan
    content: LessonContent | None
    exercises: Exercises | None
    quiz: Quiz | None


@dataclass(frozen=True)
class CourseOnDisk:
    root: Path
    audience: Audience
    curriculum: Curriculum
    outcomes: Outcomes
    assessment: Assessment
    project: Project | None
    lessons: tuple[LessonOnDisk, ...]
    example: CourseExample | None = None

    @classmethod
    def load(cls, root: str | Path) -> CourseOnDisk:
        files = CourseReader(root)
        curriculum = files.load("curriculum.yaml", Curriculum)
        lessons = []
        for module in curriculum.modules:
            for lesson in module.lessons:
                plan, text, exercises, quiz = (lesson_file(module, lesson.id, kind)
                                               for kind in (LessonPlan, LessonContent, Exercises, Quiz))
                lessons.append(LessonOnDisk(lesson.id, files.load(plan, LessonPlan),
                                            files.maybe(text, LessonContent), files.maybe(exercises, Exercises),
                                            files.maybe(quiz, Quiz)))
        return cls(files.root, files.load("audience.yaml", Audience), curriculum,
                   files.load("outcomes.yaml", Outcomes), files.load("assessment.yaml", Assessment),
                   files.maybe("project.yaml", Project), tuple(lessons),
                   files.maybe(CourseExample.FILE, CourseExample))

    def data_files(self, *texts: str) -> dict[str, str]:
        """The running example's data files that ``texts`` name (by path or file name), cut at ``MAX_DATA``."""
        named = " ".join(texts)
        return {f.path: f.text[:MAX_DATA] for f in (self.example.files if self.example else [])
                if f.path in named or f.path.rsplit("/", 1)[-1] in named}

    @cached_property
    def sha256(self) -> str:
        """One hash of every course file (hidden directories left out)."""
        return CourseReader(self.root).sha256()


@dataclass(frozen=True)
class JudgeReply:
    data: dict[str, Any] | None  # None: no parsed reply (``raw`` or ``error`` says why)
    raw: str
    model: str
    usage: Usage = field(default_factory=Usage)
    error: str | None = None  # a model or API error: no answer at all, not a verdict
    cost: float | None = 0.0


class Judge(Protocol):
    @property
    def name(self) -> str: ...

    def ask(self, request: ModelRequest) -> JudgeReply: ...


NOT_JUDGED = "not judged (offline)"


class OfflineJudge:
    """The judge of a run with no model: it reads no prose, so it judges nothing (``NOT_JUDGED``)."""

    name = "offline (no model: judges nothing)"

    def ask(self, request: ModelRequest) -> JudgeReply:
        return JudgeReply(None, "", "none", error=f"{NOT_JUDGED}: the offline judge reads no prose")


def judge_request(scorer: str, instructions: str, item: str, inputs: dict[str, Any],
                  answer: type[BaseModel], *, lesson: str | None = None) -> ModelRequest:
    """A judge's request: the preamble, the lesson (cached, shared by every item judged on it),
    then the scorer's instructions and the item."""
    from stay.stages import render_inputs

    shared = f"# The lesson\n\n{lesson}" if lesson is not None else ""
    return ModelRequest(
        stage=f"judge-{scorer}", role="judging", artefact=item,
        system=(SystemBlock(text=JUDGE_SYSTEM),), shared=shared,
        user=f"{WHAT_TO_JUDGE}{instructions}\n\n{render_inputs(inputs)}",
        output_schema=answer.model_json_schema(), output_name=answer.__name__, max_tokens=2_000,
        inputs=inputs if lesson is None else {**inputs, "lesson": lesson},
    )


NAMELESS_BACKEND = "anthropic"  # unsaid in a judge's name: older reports keep their judges' names


def model_judge_name(model: str, via: str | None = None) -> str:
    """``model:ID``, and `` via BACKEND`` through another backend: another provider is another judge."""
    return f"model:{model}" + ("" if via in (None, NAMELESS_BACKEND) else f" via {via}")


@dataclass
class ModelJudge:
    """A judge that is a model, through any backend; ``model`` defaults to the judging role's, apart
    from the writer's so a model never grades its own prose."""

    backend: ModelClient
    model: str = DEFAULT_MODELS["judging"]
    via: str | None = None

    @property
    def name(self) -> str:
        return model_judge_name(self.model, self.via)

    def ask(self, request: ModelRequest) -> JudgeReply:
        try:
            answer: ModelAnswer = self.backend.complete(request, self.model)
        except AnswerError as exc:
            return JudgeReply(None, exc.raw if exc.raw is not None else str(exc), self.model)
        except (ModelError, ModelUnavailable) as exc:  # refused, truncated, unavailable: no verdict at all
            return JudgeReply(None, "", self.model, error=f"{type(exc).__name__}: {' '.join(str(exc).split())}")
        # priced at the backend's own table (a judge through openai at OpenAI's), as a build's answers are
        return JudgeReply(answer.data, json.dumps(answer.data, sort_keys=True), answer.model, answer.usage,
                          cost=answer_cost(answer, prices_of(self.backend)))

    def reject(self, request: ModelRequest, why: str) -> None:
        """An unreadable reply is never served again from the cache: a re-score asks anew."""
        if isinstance(self.backend, Rejecting):
            self.backend.reject(request, self.model, why)


def parsed(reply: JudgeReply, answer: type[A]) -> tuple[A | None, str | None]:
    if reply.data is None:
        return None, "the judge's reply is not JSON"
    try:
        return answer.model_validate(reply.data), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        return None, f"the judge's reply does not fit {answer.__name__}: {where}: {first['msg']}"


@dataclass(frozen=True)
class Declared:
    cls: type
    name: str
    field: str | None
    passes: object
    judged: Literal["lesson", "course"]

    def make(self, judge: Judge, data_dir: Path | None = None) -> Any:
        if self.field is not None:
            return self.cls(judge)
        if any(f.name == "data_dir" for f in fields(self.cls)):
            return self.cls(data_dir=data_dir)
        return self.cls()

    def reply(self, passed: bool, reason: str = "canned", **more: Any) -> dict[str, Any]:
        """An answer its judge could give with this verdict (test doubles answer with it)."""
        assert self.field is not None, f"{self.name} needs no judge"
        answer = self.cls.answer  # type: ignore[attr-defined]
        values = get_args(answer.model_fields[self.field].annotation) or (True, False)
        value = self.passes if passed else next(v for v in values if v != self.passes)
        quote = {"quote": ""} if "quote" in answer.model_fields else {}
        return {**quote, self.field: value, "reason": reason, **more}


REGISTRY: dict[str, Declared] = {}  # every scorer declared so far (``registered()`` loads them all)


def scorer(name: str, *, answer: str | None = None, passes: object = True,
           judged: Literal["lesson", "course"] = "lesson") -> Callable[[T], T]:
    """Declare a scorer class ``name``: ``answer`` is the key its judge answers in (None: it needs
    no judge), ``passes`` that key's value when nothing is wrong, ``judged`` what an item is judged on."""
    def declare(cls: T) -> T:
        setattr(cls, "name", name)  # noqa: B010 (the class declares it a ClassVar without a value)
        REGISTRY[name] = Declared(cls, name, answer, passes, judged)
        return cls
    return declare


@dataclass(frozen=True)
class ModelScorer:
    """What every model-judged scorer declares, so a judge can be asked outside a course (the gold
    set) exactly as the scorer asks it."""

    judge: Judge
    name: ClassVar[str]
    version: ClassVar[int]
    instructions: ClassVar[str]
    answer: ClassVar[type[BaseModel]]

    def score(self, course: CourseOnDisk) -> ScoreResult:
        """By default: each lesson's ``items``, each judged with its lesson read first."""
        judging = self.judging()
        for lesson in course.lessons:
            for item, inputs in self.items(course, lesson):
                self.ask(judging, item, inputs, lesson.content.body if lesson.content else None, lesson.id)
        return judging.result()

    def items(self, course: CourseOnDisk, lesson: LessonOnDisk) -> Iterator[tuple[str, dict[str, Any]]]:
        raise NotImplementedError

    def verdict(self, answer: Any, inputs: dict[str, Any], lesson: str | None) -> tuple[float, str]:
        """By default: passed when the declared answer field holds its passing value."""
        declared = REGISTRY[self.name]
        return float(getattr(answer, str(declared.field)) == declared.passes), answer.reason

    def judging(self) -> Judging:
        return Judging(self.name, self.instructions, self.judge, self.version)

    def ask(self, judging: Judging, item: str, inputs: dict[str, Any], lesson: str | None = None,
            on: str | None = None) -> None:
        judging.ask(item, inputs, self.answer, lambda answer: self.verdict(answer, inputs, lesson), lesson=lesson,
                    on=on)


@dataclass
class Judging:
    """One scorer's pass over a course: the judge asked item by item, a failure kept apart from a score."""

    scorer: str
    instructions: str
    judge: Judge
    version: int = 1
    items: list[ItemResult] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: float | None = 0.0  # None once any reply's is unknown

    def ask(self, item: str, inputs: dict[str, Any], answer: type[A], verdict: Callable[[A], tuple[float, str]],
            *, lesson: str | None = None, on: str | None = None) -> None:
        if isinstance(self.judge, OfflineJudge):  # nothing to ask: the result says it was not judged
            return
        on = on if lesson is not None else None  # a lesson id is recorded only where the lesson was read
        content = content_hash({"inputs": inputs, "lesson": lesson})
        request = judge_request(self.scorer, self.instructions, item, inputs, answer, lesson=lesson)
        # the rendered inputs, as the request carries them after the instructions (not rendered twice)
        inputs_text = request.user.removeprefix(f"{WHAT_TO_JUDGE}{self.instructions}\n\n")
        shown = bounded(inputs_text if lesson is None else f"{lesson_note(lesson)}{inputs_text}", MAX_SHOWN)
        reply = self.judge.ask(request)
        self.usage = self.usage + reply.usage
        self.cost = None if self.cost is None or reply.cost is None else self.cost + reply.cost
        parsed_answer, why = parsed(reply, answer)
        if parsed_answer is None:
            if reply.data is not None and isinstance(self.judge, ModelJudge):
                self.judge.reject(request, why or "unreadable")
            error = reply.error is not None  # a model or API error: no answer at all, not a verdict
            self.items.append(ItemResult(item=item, content=content, score=None, shown=shown, lesson=on,
                                         reason=f"judge error: {reply.error}" if error else why or "unreadable",
                                         failure="error" if error else "unparseable",
                                         raw=bounded((reply.raw or None) if error else reply.raw, MAX_RAW)))
            return
        score, reason = verdict(parsed_answer)
        quote = getattr(parsed_answer, "quote", None)
        self.items.append(ItemResult(item=item, content=content, score=score, reason=reason,
                                     raw=bounded(reply.raw, MAX_RAW), shown=shown, lesson=on,
                                     quote=bounded(quote, MAX_QUOTE) if isinstance(quote, str) else None))

    def add(self, item: str, inputs: dict[str, Any], score: float, reason: str) -> None:
        from stay.stages import render_inputs

        self.items.append(ItemResult(item=item, content=content_hash({"inputs": inputs}), score=score,
                                     reason=reason, shown=bounded(render_inputs(inputs), MAX_SHOWN)))

    def result(self) -> ScoreResult:
        if isinstance(self.judge, OfflineJudge):
            return ScoreResult.unjudged(self.scorer, self.judge.name, NOT_JUDGED, self.version)
        return ScoreResult.of(self.scorer, self.judge.name, self.items, self.usage, self.version, self.cost)
