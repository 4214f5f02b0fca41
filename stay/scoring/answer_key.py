"""answer_key: is a quiz item's marked answer right, and the only right one; does an exercise's
solution solve its task on its data? No count can see a wrong key. The judge works the item out
against the lesson and the data files, and must quote the item's deciding words: a finding it
cannot quote is dropped (an unsupported claim is not a defect)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from stay.scoring._core import CourseOnDisk, ModelScorer, ScoreResult, scorer, text_of
from stay.validate import quoted_in

INSTRUCTIONS = """You check one quiz item or one exercise of the lesson above, as a demanding teacher
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


def _quiz_item(item: Any) -> dict[str, Any]:
    return {"stem": item.stem, "type": item.type,
            "options": [{"text": o.text, "correct": o.correct} for o in item.options or []],
            "answer": item.answer, "explanation": item.explanation}


@scorer("answer_key", answer="problem", passes="none")
class AnswerKey(ModelScorer):
    version: ClassVar[int] = 1
    instructions: ClassVar[str] = INSTRUCTIONS
    answer: ClassVar[type[BaseModel]] = KeyAnswer

    def verdict(self, answer: Any, inputs: dict[str, Any], lesson: str | None) -> tuple[float, str]:
        item = inputs.get("quiz_item", inputs.get("exercise"))
        return quoted_defect(answer.problem != "none", answer.quote, text_of(item), answer.problem,
                             str(answer.reason))

    def score(self, course: CourseOnDisk) -> ScoreResult:
        judging = self.judging()
        for lesson in course.lessons:
            body = lesson.content.body if lesson.content else None
            for item in lesson.quiz.items if lesson.quiz else []:
                if item.options:
                    shown = _quiz_item(item)
                    files = course.data_files(text_of(shown), body or "")
                    self.ask(judging, item.id, {"quiz_item": shown, "data_files": files}, body, lesson.id)
            for exercise in lesson.exercises.exercises if lesson.exercises else []:
                task = {"task": exercise.task, "hints": list(exercise.hints), "solution": exercise.solution}
                files = course.data_files(text_of(task), body or "")
                self.ask(judging, exercise.id, {"exercise": task, "data_files": files}, body, lesson.id)
        return judging.result()
