"""exercise_alignment: does each exercise make the learner perform its outcome?

The validator checks that an exercise declares its outcome's Bloom level; only a
reader can tell whether the task actually asks for that verb at that level, or
quietly asks for less (recall instead of use).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pydantic import BaseModel

from stay.models import Usage
from stay.scoring._core import (
    CourseOnDisk,
    ItemResult,
    Judge,
    ScoreResult,
    failed_item,
    judge_request,
    parsed,
)
from stay.scoring.outcome_coverage import _add

INSTRUCTIONS = """You judge one exercise against the learning outcome it targets.
Decide whether doing the task requires the learner to perform the outcome's verb at the
outcome's Bloom level (not a lower one: recalling is not applying, applying is not
evaluating). Answer with the JSON schema: aligned, reason (one sentence)."""


class AlignmentAnswer(BaseModel):
    aligned: bool
    reason: str


@dataclass(frozen=True)
class ExerciseAlignment:
    judge: Judge
    name: ClassVar[str] = "exercise_alignment"

    def score(self, course: CourseOnDisk) -> ScoreResult:
        outcomes = {o.id: o for o in course.outcomes.outcomes}
        items: list[ItemResult] = []
        usage = Usage()
        for lesson in course.lessons:
            for exercise in lesson.exercises.exercises if lesson.exercises else []:
                outcome = outcomes.get(exercise.outcome)
                if outcome is None:
                    items.append(ItemResult(item=exercise.id, score=0.0, reason="targets an unknown outcome"))
                    continue
                request = judge_request(self.name, INSTRUCTIONS, exercise.id, {
                    "outcome": outcome.model_dump(), "exercise": exercise.model_dump()}, AlignmentAnswer)
                reply = self.judge.ask(request)
                usage = _add(usage, reply.usage)
                answer, why = parsed(reply, AlignmentAnswer)
                items.append(failed_item(exercise.id, why or "unreadable", reply) if answer is None else
                             ItemResult(item=exercise.id, score=float(answer.aligned), reason=answer.reason))
        return ScoreResult.of(self.name, self.judge.name, items, usage)
