"""rubric_specificity: can each rubric level be told from its neighbours in the work? Levels that
differ only in adjectives ("thorough" vs "mostly thorough") two markers apply differently."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from stay.scoring._core import CourseOnDisk, ModelScorer, ScoreResult, scorer

INSTRUCTIONS = """You judge one criterion of a capstone rubric.
Decide whether each level (in order) can be told apart from its neighbours by an
observable difference in the submitted work, not by adjectives or degree words alone.
Answer with the JSON schema: distinguishable, reason (one sentence)."""


class SpecificityAnswer(BaseModel):
    distinguishable: bool
    reason: str


@scorer("rubric_specificity", answer="distinguishable", judged="course")
class RubricSpecificity(ModelScorer):
    version: ClassVar[int] = 2
    """2: judge failures are recorded apart from scores; common judge preamble."""
    instructions: ClassVar[str] = INSTRUCTIONS
    answer: ClassVar[type[BaseModel]] = SpecificityAnswer

    def score(self, course: CourseOnDisk) -> ScoreResult:
        judging = self.judging()
        for criterion in course.project.rubric if course.project else []:
            self.ask(judging, criterion.id, {"criterion": criterion.criterion, "levels": dict(criterion.levels)})
        return judging.result()
