"""exercise_alignment: does each exercise make the learner perform its outcome? The validator checks
the declared Bloom level; only a reader can tell whether the task asks for less (recall, not use)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from stay.scoring._core import CourseOnDisk, ModelScorer, ScoreResult, scorer

INSTRUCTIONS = """You judge one exercise against the learning outcome it targets (the lesson is above).
Decide whether doing the task requires the learner to perform the outcome's verb at the
outcome's Bloom level (not a lower one: recalling is not applying, applying is not
evaluating). Answer with the JSON schema: aligned, reason (one sentence)."""


class AlignmentAnswer(BaseModel):
    aligned: bool
    reason: str


@scorer("exercise_alignment", answer="aligned")
class ExerciseAlignment(ModelScorer):
    version: ClassVar[int] = 2
    """2: the lesson is a shared cached block before the item."""
    instructions: ClassVar[str] = INSTRUCTIONS
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
