"""answer_cues: can a learner find the correct options without reading the lesson? Counted, free.
Whether the key is the uniquely longest option, or sits at one position, more often than chance
(an exact Poisson-binomial tail at ``ALPHA``; Bonferroni over positions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from stay.scoring._core import CourseOnDisk, ItemResult, ScoreResult, content_hash, scorer
from stay.validate import normal_text

JUDGE = "answer cues (counted, no model)"
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
    name: ClassVar[str]
    version: ClassVar[int] = 1

    def score(self, course: CourseOnDisk) -> ScoreResult:
        items = keyed_items(course)

        def item(name: str, found: tuple[float, str], shown: Any) -> ItemResult:
            return ItemResult(item=name, content=content_hash({"items": shown, "cue": name}), score=found[0],
                              reason=found[1])

        return ScoreResult.of(self.name, JUDGE, [item(name, found, items) for name, found in cues(items).items()]
                              if items else [], version=self.version)
