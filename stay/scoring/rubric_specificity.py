"""rubric_specificity: can each rubric level be told from its neighbours in the work?

A level description that differs from the next only in adjectives ("thorough" vs
"mostly thorough") is one two markers will apply differently.
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

INSTRUCTIONS = """You judge one criterion of a capstone rubric.
Decide whether each level (in order) can be told apart from its neighbours by an
observable difference in the submitted work, not by adjectives or degree words alone.
Answer with the JSON schema: distinguishable, reason (one sentence)."""


class SpecificityAnswer(BaseModel):
    distinguishable: bool
    reason: str


@dataclass(frozen=True)
class RubricSpecificity:
    judge: Judge
    name: ClassVar[str] = "rubric_specificity"

    def score(self, course: CourseOnDisk) -> ScoreResult:
        items: list[ItemResult] = []
        usage = Usage()
        for criterion in course.project.rubric if course.project else []:
            request = judge_request(self.name, INSTRUCTIONS, criterion.id, {
                "criterion": criterion.criterion, "levels": dict(criterion.levels)}, SpecificityAnswer)
            reply = self.judge.ask(request)
            usage = _add(usage, reply.usage)
            answer, why = parsed(reply, SpecificityAnswer)
            items.append(failed_item(criterion.id, why or "unreadable", reply) if answer is None else
                         ItemResult(item=criterion.id, score=float(answer.distinguishable), reason=answer.reason))
        return ScoreResult.of(self.name, self.judge.name, items, usage)
