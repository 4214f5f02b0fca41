"""The scorers: stay's own, declared with ``@scorer`` (six a model judges, each reading what a count
cannot; the validator and answer cues count, free and reproducible), and the registry that finds
them and installed plug-ins through the ``stay.scorers`` entry points: every list of scorers
(reports, fakes, tests) derives from it. Each scorer's class says what it scores and why."""

from __future__ import annotations

import functools
import os
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, Field

from stay.errors import UsageError
from stay.models import ModelRequest
from stay.scoring._core import (
    REGISTRY,
    CourseOnDisk,
    Declared,
    ItemResult,
    Judge,
    LessonOnDisk,
    ModelScorer,
    ScoreResult,
    content_hash,
    scorer,
    text_of,
)
from stay.validate import OWNERS, normal_text, quoted_in, validate_course


class CoverageAnswer(BaseModel):
    quote: str = Field(description="The teaching passage, copied verbatim; empty if there is none.")
    teaches: bool
    reason: str


@scorer("outcome_coverage", answer="teaches")
@dataclass(frozen=True)
class OutcomeCoverage(ModelScorer):
    """outcome_coverage: is every outcome actually taught by its lesson? The judge must quote the
    teaching passage, and a quote not in the lesson (Markdown markers and typographic quotes
    normalised on both sides) scores zero: finding the passage keeps it from rubber-stamping."""

    min_quote_words: int = 5
    """A shorter quote cannot show teaching; it scores zero."""
    version: ClassVar[int] = 2
    """2: the lesson is a shared cached block; the quote check ignores Markdown markers."""

    instructions = """You judge whether the lesson above teaches a learning outcome.
Find the passage of the lesson that teaches the outcome and quote it verbatim, word for
word (one to three sentences; Markdown markers may be left out). If no passage teaches it,
quote nothing and say so. Judge the teaching, not a mention: naming a topic is not
teaching it. Answer with the JSON schema: quote, teaches, reason (one sentence)."""
    answer: ClassVar[type[BaseModel]] = CoverageAnswer

    def verdict(self, answer: Any, inputs: dict[str, Any], lesson: str | None) -> tuple[float, str]:
        if not answer.teaches or not answer.quote.strip():
            return 0.0, f"not taught: {answer.reason}"
        if not quoted_in(answer.quote, lesson or ""):
            return 0.0, f"fabricated quote (not in the lesson): {answer.quote[:80]!r}"
        if len(normal_text(answer.quote).split()) < self.min_quote_words:
            return 0.0, f"quote too short to show teaching: {answer.quote!r}"
        return 1.0, str(answer.reason)

    def items(self, course: CourseOnDisk, lesson: LessonOnDisk) -> Iterator[tuple[str, dict[str, Any]]]:
        taught = [o for o in course.outcomes.outcomes if o.lesson == lesson.id] if lesson.content is not None else []
        for outcome in taught:
            covering = [s.heading for s in lesson.plan.sections if outcome.id in s.covers]
            yield outcome.id, {"outcome": outcome.model_dump(), "sections_that_should_teach_it": covering}


class DistractorAnswer(BaseModel):
    embodies: bool
    reason: str


@scorer("distractor_quality", answer="embodies")
class DistractorQuality(ModelScorer):
    """distractor_quality: does each wrong option embody the misconception it claims? One that is merely
    wrong tests nothing; one that embodies a real misconception tells which wrong idea is held."""

    version: ClassVar[int] = 2
    """2: the lesson is a shared cached block before the item."""
    instructions = """You judge one wrong option of a multiple-choice quiz item on the lesson above.
Decide whether the wrong option embodies the misconception that its why_wrong claims:
would a learner who holds that misconception pick this option? A generic why_wrong
("it is wrong"), or an option unrelated to the misconception, does not. Answer with the
JSON schema: embodies, reason (one sentence)."""
    answer: ClassVar[type[BaseModel]] = DistractorAnswer

    def items(self, course: CourseOnDisk, lesson: LessonOnDisk) -> Iterator[tuple[str, dict[str, Any]]]:
        for item in lesson.quiz.items if lesson.quiz else []:
            options = item.options or []
            correct = next((o.text for o in options if o.correct), "")
            for k, option in enumerate(options, 1):
                if not option.correct:
                    yield f"{item.id} option {k}", {
                        "stem": item.stem, "correct_answer": correct, "wrong_option": option.text,
                        "why_wrong": option.why_wrong or "",
                        "audience_misconceptions": course.audience.misconceptions or []}


class AlignmentAnswer(BaseModel):
    aligned: bool
    reason: str


@scorer("exercise_alignment", answer="aligned")
class ExerciseAlignment(ModelScorer):
    """exercise_alignment: does each exercise make the learner perform its outcome? The validator checks
    the declared Bloom level; only a reader can tell whether the task asks for less (recall, not use)."""

    version: ClassVar[int] = 2
    """2: the lesson is a shared cached block before the item."""
    instructions = """You judge one exercise against the learning outcome it targets (the lesson is above).
Decide whether doing the task requires the learner to perform the outcome's verb at the
outcome's Bloom level (not a lower one: recalling is not applying, applying is not
evaluating). Answer with the JSON schema: aligned, reason (one sentence)."""
    answer: ClassVar[type[BaseModel]] = AlignmentAnswer

    def score(self, course: CourseOnDisk) -> ScoreResult:
        outcomes = {o.id: o for o in course.outcomes.outcomes}
        judging = self.judging()
        for lesson in course.lessons:
            body = lesson.content.body if lesson.content else None
            for exercise in lesson.exercises.exercises if lesson.exercises else []:
                outcome = outcomes.get(exercise.outcome)
                if outcome is None:
                    judging.add(exercise.id, {"exercise": exercise.model_dump()}, 0.0, "targets an unknown outcome")
                    continue
                self.ask(judging, exercise.id, {"outcome": outcome.model_dump(), "exercise": exercise.model_dump()},
                         body, lesson.id)
        return judging.result()


class SpecificityAnswer(BaseModel):
    distinguishable: bool
    reason: str


@scorer("rubric_specificity", answer="distinguishable", judged="course")
class RubricSpecificity(ModelScorer):
    """rubric_specificity: can each rubric level be told from its neighbours in the work? Levels that
    differ only in adjectives ("thorough" vs "mostly thorough") two markers apply differently."""

    version: ClassVar[int] = 2
    """2: judge failures are recorded apart from scores; common judge preamble."""
    instructions = """You judge one criterion of a capstone rubric.
Decide whether each level (in order) can be told apart from its neighbours by an
observable difference in the submitted work, not by adjectives or degree words alone.
Answer with the JSON schema: distinguishable, reason (one sentence)."""
    answer: ClassVar[type[BaseModel]] = SpecificityAnswer

    def score(self, course: CourseOnDisk) -> ScoreResult:
        judging = self.judging()
        for criterion in course.project.rubric if course.project else []:
            self.ask(judging, criterion.id, {"criterion": criterion.criterion, "levels": dict(criterion.levels)})
        return judging.result()


class KeyAnswer(BaseModel):
    problem: Literal["none", "wrong_key", "two_right", "solution_wrong"]
    quote: str = Field(description="The words of the item that decide it, copied verbatim.")
    reason: str


def quoted_defect(found: bool, quote: str, source: str, what: str, reason: str) -> tuple[float, str]:
    """0.0 for a defect quoted from ``source``; 1.0 for none, or for an unquoted one (dropped, and says so)."""
    if not found:
        return 1.0, reason
    if not quoted_in(quote, source):
        return 1.0, f"unquoted finding dropped: {what}: {reason}"
    return 0.0, f"{what}: {reason}"


@scorer("answer_key", answer="problem", passes="none")
class AnswerKey(ModelScorer):
    """answer_key: is a quiz item's marked answer right, and the only right one; does an exercise's
    solution solve its task on its data? No count can see a wrong key. The judge works the item out
    against the lesson and the data files, and must quote the item's deciding words: a finding it
    cannot quote is dropped (an unsupported claim is not a defect)."""

    version: ClassVar[int] = 1
    instructions = """You check one quiz item or one exercise of the lesson above, as a demanding teacher
checks an answer key before learners see it. Work the item out yourself first, from the lesson
and the data files given (count the rows, add the figures), then compare with what the item says.
- wrong_key: the option marked correct (or the answer given) is wrong.
- two_right: another option is also right, as the lesson or the data stand.
- solution_wrong: the exercise's solution does not solve its task, or states a figure, name
  or result its data does not give.
- none: the key is right and the only right one; the solution solves the task.
Quote verbatim the words of the item that decide it (the wrong key, the second right option,
the wrong figure); judge only what is written. Answer with the JSON schema: problem, quote,
reason (one sentence: what the right answer is and why)."""
    answer: ClassVar[type[BaseModel]] = KeyAnswer

    def verdict(self, answer: Any, inputs: dict[str, Any], lesson: str | None) -> tuple[float, str]:
        item = inputs.get("quiz_item", inputs.get("exercise"))
        return quoted_defect(answer.problem != "none", answer.quote, text_of(item), answer.problem,
                             str(answer.reason))

    def items(self, course: CourseOnDisk, lesson: LessonOnDisk) -> Iterator[tuple[str, dict[str, Any]]]:
        body = lesson.content.body if lesson.content else ""
        for item in lesson.quiz.items if lesson.quiz else []:
            if item.options:
                shown = {"stem": item.stem, "type": item.type,  # the judge's request shows them in this order
                         "options": [{"text": o.text, "correct": o.correct} for o in item.options],
                         "answer": item.answer, "explanation": item.explanation}
                yield item.id, {"quiz_item": shown, "data_files": course.data_files(text_of(shown), body)}
        for exercise in lesson.exercises.exercises if lesson.exercises else []:
            task = {"task": exercise.task, "hints": list(exercise.hints), "solution": exercise.solution}
            yield exercise.id, {"exercise": task, "data_files": course.data_files(text_of(task), body)}


class ConsistencyAnswer(BaseModel):
    consistent: bool
    quote: str = Field(description="The contradicting words, copied verbatim; empty when consistent.")
    reason: str


@scorer("consistency", answer="consistent")
class Consistency(ModelScorer):
    """consistency: do a lesson, its plan, its exercises and its quiz agree? They are written by separate
    calls from one plan, and a figure that drifts between them reads as a mistake. The judge reads them
    together with the running example's data and must quote the words that disagree (else dropped)."""

    version: ClassVar[int] = 1
    instructions = """You check that the lesson above agrees with its plan, its exercises, its quiz and the
running example's data, as a demanding teacher reads a colleague's lesson before it goes out.
Look for a figure, total, name or fact that one of them states and another contradicts: the
plan's minutes against its sections' minutes, the running example's people and numbers against
the lesson's, a row count or result in an exercise against the data, a quiz answer against what
the lesson teaches. A difference of wording is not a contradiction. If you find one, quote
verbatim the contradicting words from the lesson, an exercise or a quiz item. Answer with the
JSON schema: consistent, quote (empty when consistent), reason (one sentence naming both sides)."""
    answer: ClassVar[type[BaseModel]] = ConsistencyAnswer

    def verdict(self, answer: Any, inputs: dict[str, Any], lesson: str | None) -> tuple[float, str]:
        source = "\n".join((lesson or "", text_of(inputs.get("exercises")), text_of(inputs.get("quiz"))))
        return quoted_defect(not answer.consistent, answer.quote, source, "inconsistent", str(answer.reason))

    def items(self, course: CourseOnDisk, lesson: LessonOnDisk) -> Iterator[tuple[str, dict[str, Any]]]:
        if lesson.content is None:
            return
        plan = lesson.plan
        exercises = [e.model_dump(mode="json") for e in lesson.exercises.exercises] if lesson.exercises else []
        quiz = [i.model_dump(mode="json") for i in lesson.quiz.items] if lesson.quiz else []
        running = plan.running_example.model_dump(mode="json") if plan.running_example else None
        yield lesson.id, {"plan": {"minutes": plan.minutes,
                                   "sections": [{"heading": s.heading, "minutes": s.minutes} for s in plan.sections],
                                   "example_facts": plan.example_facts, "running_example": running},
                          "exercises": exercises, "quiz": quiz,
                          "data_files": course.data_files(lesson.content.body, text_of(exercises), text_of(quiz))}


VALIDATOR_JUDGE = "validator (no model)"


@scorer("validator", judged="course")
@dataclass(frozen=True)
class Validator:
    """validator: defect counts per owner and checks run, from the validator; free and reproducible.
    Every owner gets an item, clean ones included, and so do the checks run: a rule that stops running
    stops failing."""

    strict: bool = True
    data_dir: Path | None = None
    """The house style the course is held to (None: the validator's default)."""
    name: ClassVar[str]
    version: ClassVar[int] = 1

    def score(self, course: CourseOnDisk) -> ScoreResult:
        report = validate_course(course.root, strict=self.strict, data_dir=self.data_dir)
        counts = Counter(defect.owner for defect in report.defects)

        def item(name: str, score: float, reason: str) -> ItemResult:
            # what was "judged" is the whole course: its content is the course's hash
            return ItemResult(item=name, content=content_hash({"course": course.sha256, "item": name}),
                              score=score, reason=reason)

        items = [item(f"owner {owner}", float(counts[owner] == 0), f"{counts[owner]} defects") for owner in OWNERS]
        passed = sum(report.passed.values())
        items.append(item("checks run", passed / report.checks if report.checks else 0.0,
                          f"{report.checks} checks, {passed} passed"))
        return ScoreResult.of(self.name, VALIDATOR_JUDGE, items, version=self.version)


CUES_JUDGE = "answer cues (counted, no model)"
ALPHA = 0.01


def upper_tail(chances: list[float], hits: int) -> float:
    """P(at least ``hits`` successes) of independent trials with these chances (exact)."""
    dist = [1.0]
    for p in chances:
        dist = [a * (1 - p) + b * p for a, b in zip([*dist, 0.0], [0.0, *dist], strict=True)]
    return min(1.0, sum(dist[hits:]))


def keyed_items(course: CourseOnDisk) -> list[tuple[list[str], int]]:
    """(option texts, index of the correct one) of every item with one correct option of two or more."""
    found = []
    for lesson in course.lessons:
        for item in lesson.quiz.items if lesson.quiz else []:
            options = item.options or []
            correct = [k for k, option in enumerate(options) if option.correct]
            if len(options) >= 2 and len(correct) == 1:
                found.append(([normal_text(o.text) for o in options], correct[0]))
    return found


def cues(items: list[tuple[list[str], int]]) -> dict[str, tuple[float, str]]:
    """Per cue, (score, reason): 0.0 when the cue points to the key beyond chance (p < ALPHA)."""
    chances = [1 / len(options) for options, _key in items]
    longest = sum(len(options[key]) > max(len(o) for k, o in enumerate(options) if k != key)
                  for options, key in items)
    p_long = upper_tail(chances, longest)
    positions = max((len(options) for options, _key in items), default=0)
    tails = [(upper_tail([1 / len(o) if at < len(o) else 0.0 for o, _k in items],
                         sum(key == at for _o, key in items)), at) for at in range(positions)]
    p_at, at = min(tails, default=(1.0, 0))
    p_at = min(1.0, p_at * max(1, positions))  # Bonferroni over the positions tried

    def verdict(p: float, said: str) -> tuple[float, str]:
        return (0.0 if p < ALPHA else 1.0), f"{said} of {len(items)} items; chance p = {p:.2g} (fails below {ALPHA})"

    return {"longest option": verdict(p_long, f"the key is the uniquely longest option in {longest}"),
            "same position": verdict(p_at, f"the key is option {at + 1} in "
                                           f"{sum(key == at for _o, key in items)}")}


@scorer("answer_cues", judged="course")
@dataclass(frozen=True)
class AnswerCues:
    """answer_cues: can a learner find the correct options without reading the lesson? Counted, free.
    Whether the key is the uniquely longest option, or sits at one position, more often than chance
    (an exact Poisson-binomial tail at ``ALPHA``; Bonferroni over positions)."""

    name: ClassVar[str]
    version: ClassVar[int] = 1

    def score(self, course: CourseOnDisk) -> ScoreResult:
        items = keyed_items(course)
        results = [ItemResult(item=name, content=content_hash({"items": items, "cue": name}), score=score,
                              reason=reason) for name, (score, reason) in cues(items).items()] if items else []
        return ScoreResult.of(self.name, CUES_JUDGE, results, version=self.version)


SCORER_GROUP = "stay.scorers"
BUILTIN_SCORERS: Mapping[str, str] = {d.name: f"{__name__}:{d.cls.__name__}" for d in REGISTRY.values()
                                      if d.cls.__module__ == __name__}
"""stay's own scorers, each its ``@scorer`` class above; plug-ins come through the ``stay.scorers`` entry points."""


class Scorer(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int:
        """Bumped whenever the instructions or logic change: runs of two versions are not compared."""
        ...

    def score(self, course: CourseOnDisk) -> ScoreResult: ...


def registered() -> dict[str, Declared]:
    """Every scorer: stay's own, then installed ``stay.scorers`` plug-ins (a built-in name is stay's)."""
    return dict(_registered(tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _registered(path: tuple[str, ...]) -> tuple[tuple[str, Declared], ...]:
    from importlib.metadata import EntryPoint, entry_points

    points = [EntryPoint(name, value, SCORER_GROUP) for name, value in BUILTIN_SCORERS.items()]
    points += sorted((p for p in entry_points(group=SCORER_GROUP) if p.name not in BUILTIN_SCORERS),
                     key=lambda p: p.name)
    found = []
    for point in points:
        cls = point.load()
        declared = REGISTRY.get(point.name)
        if declared is None or declared.cls is not cls:
            raise UsageError(f"the {SCORER_GROUP} entry point {point.name} = {point.value} is not a class "
                             f"declared @scorer({point.name!r})")
        found.append((point.name, declared))
    return tuple(found)


def declared(request: ModelRequest) -> Declared:
    """The scorer a judge's request is from (its stage is ``judge-NAME``)."""
    return registered()[request.stage.removeprefix("judge-")]


SCORERS = tuple(d.cls for d in registered().values())
JUDGE_FREE_NAMES = frozenset(d.name for d in registered().values() if d.field is None)  # they count, no judge


def default_scorers(judge: Judge, *, data_dir: Path | None = None) -> list[Scorer]:
    """Every registered scorer, judged by ``judge`` where one is needed; ``data_dir``: the house style."""
    return [declared.make(judge, data_dir) for declared in registered().values()]


def score_course(course_dir: str | os.PathLike[str] | CourseOnDisk,
                 scorers: Sequence[Scorer]) -> dict[str, ScoreResult]:
    course = course_dir if isinstance(course_dir, CourseOnDisk) else CourseOnDisk.load(Path(course_dir))
    return {scorer.name: scorer.score(course) for scorer in scorers}


def scorer_versions(scorers: Sequence[Scorer]) -> dict[str, int]:
    return {scorer.name: scorer.version for scorer in sorted(scorers, key=lambda s: s.name)}
