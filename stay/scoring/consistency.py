"""consistency: do a lesson, its plan, its exercises and its quiz agree? They are written by separate
calls from one plan, and a figure that drifts between them reads as a mistake. The judge reads them
together with the running example's data and must quote the words that disagree (else dropped)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from stay.scoring._core import CourseOnDisk, ModelScorer, ScoreResult, scorer, text_of
from stay.scoring.answer_key import quoted_defect

INSTRUCTIONS = """You check that the lesson above agrees with its plan, its exercises, its quiz and the
running example's data, as a demanding teacher reads a colleague's lesson before it goes out.
Look for a figure, total, name or fact that one of them states and another contradicts: the
plan's minutes against its sections' minutes, the running example's people and numbers against
the lesson's, a row count or result in an exercise against the data, a quiz answer against what
the lesson teaches. A difference of wording is not a contradiction. If you find one, quote
verbatim the contradicting words from the lesson, an exercise or a quiz item. Answer with the
JSON schema: consistent, quote (empty when consistent), reason (one sentence naming both sides)."""


class ConsistencyAnswer(BaseModel):
    consistent: bool
    quote: str = Field(description="The contradicting words, copied verbatim; empty when consistent.")
    reason: str


@scorer("consistency", answer="consistent")
class Consistency(ModelScorer):
    version: ClassVar[int] = 1
    instructions: ClassVar[str] = INSTRUCTIONS
    answer: ClassVar[type[BaseModel]] = ConsistencyAnswer

    def verdict(self, answer: Any, inputs: dict[str, Any], lesson: str | None) -> tuple[float, str]:
        source = "\n".join((lesson or "", text_of(inputs.get("exercises")), text_of(inputs.get("quiz"))))
        return quoted_defect(not answer.consistent, answer.quote, source, "inconsistent", str(answer.reason))

    def score(self, course: CourseOnDisk) -> ScoreResult:
        judging = self.judging()
        for lesson in course.lessons:
            if lesson.content is None:
                continue
            plan = lesson.plan
            exercises = [e.model_dump(mode="json") for e in lesson.exercises.exercises] if lesson.exercises else []
            quiz = [i.model_dump(mode="json") for i in lesson.quiz.items] if lesson.quiz else []
            running = plan.running_example.model_dump(mode="json") if plan.running_example else None
            inputs = {"plan": {"minutes": plan.minutes,
                               "sections": [{"heading": s.heading, "minutes": s.minutes} for s in plan.sections],
                               "example_facts": plan.example_facts, "running_example": running},
                      "exercises": exercises, "quiz": quiz,
                      "data_files": course.data_files(lesson.content.body, text_of(exercises), text_of(quiz))}
            self.ask(judging, lesson.id, inputs, lesson.content.body, lesson.id)
        return judging.result()
