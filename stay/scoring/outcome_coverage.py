"""outcome_coverage: is every outcome actually taught by its lesson? The judge must quote the
teaching passage, and a quote not in the lesson (Markdown markers and typographic quotes
normalised on both sides) scores zero: finding the passage keeps it from rubber-stamping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from stay.scoring._core import CourseOnDisk, ModelScorer, ScoreResult, scorer
from stay.validate import normal_text, quoted_in

INSTRUCTIONS = """You judge whether the lesson above teaches a learning outcome.
Find the passage of the lesson that teaches the outcome and quote it verbatim, word for
word (one to three sentences; Markdown markers may be left out). If no passage teaches it,
quote nothing and say so. Judge the teaching, not a mention: naming a topic is not
teaching it. Answer with the JSON schema: quote, teaches, reason (one sentence)."""

class CoverageAnswer(BaseModel):
    quote: str = Field(description="The teaching passage, copied verbatim; empty if there is none.")
    teaches: bool
    reason: str


@scorer("outcome_coverage", answer="teaches")
@dataclass(frozen=True)
class OutcomeCoverage(ModelScorer):
    min_quote_words: int = 5
    """A shorter quote cannot show teaching; it scores zero."""
    version: ClassVar[int] = 2
    """2: the lesson is a shared cached block; the quote check ignores Markdown markers."""

    instructions: ClassVar[str] = INSTRUCTIONS
    answer: ClassVar[type[BaseModel]] = CoverageAnswer

    def verdict(self, answer: Any, inputs: dict[str, Any], lesson: str | None) -> tuple[float, str]:
        if not answer.teaches or not answer.quote.strip():
            return 0.0, f"not taught: {answer.reason}"
        if not quoted_in(answer.quote, lesson or ""):
            return 0.0, f"fabricated quote (not in the lesson): {answer.quote[:80]!r}"
        if len(normal_text(answer.quote).split()) < self.min_quote_words:
            return 0.0, f"quote too short to show teaching: {answer.quote!r}"
        return 1.0, str(answer.reason)

    def score(self, course: CourseOnDisk) -> ScoreResult:
        judging = self.judging()
        for lesson in course.lessons:
            if lesson.content is None:
                continue
            for outcome in (o for o in course.outcomes.outcomes if o.lesson == lesson.id):
                covering = [s.heading for s in lesson.plan.sections if outcome.id in s.covers]
                self.ask(judging, outcome.id, {"outcome": outcome.model_dump(),
                                               "sections_that_should_teach_it": covering}, lesson.content.body,
                         lesson.id)
        return judging.result()
