"""distractor_quality: does each wrong option embody the misconception it claims? One that is merely
wrong tests nothing; one that embodies a real misconception tells which wrong idea is held."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from stay.scoring._core import CourseOnDisk, ModelScorer, ScoreResult, scorer

INSTRUCTIONS = """You judge one wrong option of a multiple-choice quiz item on the lesson above.
Decide whether the wrong option embodies the misconception that its why_wrong claims:
would a learner who holds that misconception pick this option? A generic why_wrong
("it is wrong"), or an option unrelated to the misconception, does not. Answer with the
JSON schema: embodies, reason (one sentence)."""


class DistractorAnswer(BaseModel):
    embodies: bool
    reason: str


@scorer("distractor_quality", answer="embodies")
class DistractorQuality(ModelScorer):
    version: ClassVar[int] = 2
    """2: the lesson is a shared cached block before the item."""
    instructions: ClassVar[str] = INSTRUCTIONS
    answer: ClassVar[type[BaseModel]] = DistractorAnswer

    def score(self, course: CourseOnDisk) -> ScoreResult:
        judging = self.judging()
        for lesson in course.lessons:
            body = lesson.content.body if lesson.content else None
            for item in lesson.quiz.items if lesson.quiz else []:
                options = item.options or []
                correct = next((o.text for o in options if o.correct), "")
                for k, option in enumerate(options, 1):
                    if option.correct:
                        continue
                    self.ask(judging, f"{item.id} option {k}", {
                        "stem": item.stem, "correct_answer": correct, "wrong_option": option.text,
                        "why_wrong": option.why_wrong or "",
                        "audience_misconceptions": course.audience.misconceptions or []}, body, lesson.id)
        return judging.result()
