"""outcome_coverage: is every outcome actually taught by its lesson?

The judge must quote the passage that teaches the outcome rather than give a
verdict: finding the passage first keeps it from rubber-stamping an outcome the
lesson never reaches. The harness then checks the quote mechanically: a quote that
is not in the lesson (after whitespace normalisation) scores zero and is reported
as fabricated, which no eval harness we know of does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pydantic import BaseModel, Field

from stay.scoring._core import CourseOnDisk, ItemResult, Judge, Judging, ScoreResult

INSTRUCTIONS = """You judge whether a lesson teaches a learning outcome.
Find the passage of the lesson that teaches the outcome and quote it exactly, word for
word (one to three sentences). If no passage teaches it, quote nothing and say so.
Judge the teaching, not a mention: naming a topic is not teaching it. Answer with the
JSON schema: quote, teaches, reason (one sentence)."""


class CoverageAnswer(BaseModel):
    quote: str = Field(description="The teaching passage, copied exactly; empty if there is none.")
    teaches: bool
    reason: str


def _normal(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class OutcomeCoverage:
    judge: Judge
    min_quote_words: int = 5
    """A shorter quote cannot show teaching; it scores zero."""
    name: ClassVar[str] = "outcome_coverage"

    def score(self, course: CourseOnDisk) -> ScoreResult:
        judging = Judging(self.name, INSTRUCTIONS, self.judge)
        for lesson in course.lessons:
            if lesson.content is None:
                continue
            body = lesson.content.body
            for outcome in (o for o in course.outcomes.outcomes if o.lesson == lesson.id):
                covering = [s.heading for s in lesson.plan.sections if outcome.id in s.covers]

                def verdict(answer: CoverageAnswer, item: str = outcome.id, body: str = body) -> ItemResult:
                    if not answer.teaches or not answer.quote.strip():
                        return ItemResult(item=item, score=0.0, reason=f"not taught: {answer.reason}")
                    if _normal(answer.quote) not in _normal(body):
                        return ItemResult(item=item, score=0.0,
                                          reason=f"fabricated quote (not in the lesson): {answer.quote[:80]!r}")
                    if len(answer.quote.split()) < self.min_quote_words:
                        return ItemResult(item=item, score=0.0,
                                          reason=f"quote too short to show teaching: {answer.quote!r}")
                    return ItemResult(item=item, score=1.0, reason=answer.reason)

                judging.ask(outcome.id, {"outcome": outcome.model_dump(),
                                         "sections_that_should_teach_it": covering, "lesson": body},
                            CoverageAnswer, verdict)
        return judging.result()
