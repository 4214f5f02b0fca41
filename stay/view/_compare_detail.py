"""What the comparison page shows below its table, as plain data (``stay.scoring._compare_page``
fills it from two reports). A pair is *changed* when its sides differ in score or failure, or one
run lacks it; *failed* when a side scored below full marks or failed; else *passed*. The filters
are radio buttons and CSS: the report pages' policy allows no script."""

from __future__ import annotations

from dataclasses import dataclass

CHANGED, FAILED, PASSED = "changed", "failed", "passed"
PAIR_KINDS = (CHANGED, FAILED, PASSED)


@dataclass(frozen=True)
class BuildMeans:
    brief: str
    scorer: str
    baseline: float | None
    """The mean of the baseline's build means in this brief; None: no build scored."""
    baseline_builds: int
    candidate: float | None
    candidate_builds: int


@dataclass(frozen=True)
class ItemSide:
    epoch: int
    item: str
    score: float | None
    failure: str | None
    reason: str
    quote: str | None = None
    raw: str | None = None
    shown: str | None = None
    build: int = 0  # the build's index among its brief's builds in its report
    lesson: str | None = None  # the id of the lesson the item was judged on
    lesson_anchor: str | None = None
    """The page's anchor of that lesson's text (a ``LessonText``); None: not shown (``lesson_why`` says why)."""
    lesson_why: str = ""

    @property
    def passed(self) -> bool:
        return self.failure is None and self.score is not None and self.score >= 1.0


@dataclass(frozen=True)
class ItemPair:
    scorer: str
    brief: str
    matched: bool
    """True: both sides judged byte-identical content; False: paired by brief, epoch and id."""
    baseline: ItemSide | None
    candidate: ItemSide | None

    @property
    def kinds(self) -> tuple[str, ...]:
        sides = [s for s in (self.baseline, self.candidate) if s is not None]
        found = []
        if len(sides) < 2 or (sides[0].score, sides[0].failure) != (sides[1].score, sides[1].failure):
            found.append(CHANGED)
        found.append(PASSED if all(s.passed for s in sides) else FAILED)
        return tuple(found)


@dataclass(frozen=True)
class ScorerPairs:
    scorer: str
    pairs: tuple[ItemPair, ...]
    """The listed pairs: the most changed first, then unchanged failed, then unchanged passed."""
    totals: tuple[tuple[str, int], ...]  # (kind, pairs of that kind in all): what the listing is cut from
    matched: int  # pairs whose sides judged the same content


@dataclass(frozen=True)
class PromptFile:
    name: str
    baseline: str  # its hash(es), as the builds recorded them ("none": not used)
    candidate: str
    diff: str | None  # None: the texts are not both at hand (``why``)
    why: str = ""


@dataclass(frozen=True)
class RunCost:
    build: float | None
    judge: float | None


@dataclass(frozen=True)
class LessonText:
    """A lesson judged items were judged on, as its course holds it: shown once on a page."""

    anchor: str
    lesson: str
    text: str  # bounded (stay.scoring._compare_page.MAX_LESSON_CHARS)
    characters: int
    read_by: tuple[str, ...]  # the builds whose listed items read it: "baseline <brief> e01", ...


@dataclass(frozen=True)
class CompareDetail:
    brief_means: tuple[BuildMeans, ...]
    scorers: tuple[ScorerPairs, ...]
    per_kind: int  # pairs each scorer lists of each kind at most
    prompts: tuple[PromptFile, ...]
    costs: tuple[RunCost, RunCost]  # (baseline, candidate)
    lessons: tuple[LessonText, ...] = ()  # the lessons the listed items were judged on, each once

    @property
    def counts(self) -> dict[str, int]:
        """Listed pairs of each kind, over every scorer: the filters' labels."""
        return {kind: sum(kind in p.kinds for s in self.scorers for p in s.pairs) for kind in PAIR_KINDS}


def dollars(value: float | None) -> str:
    return "unknown (a model has no price on file, or the report records none)" if value is None else f"${value:.4f}"


__all__ = ["PAIR_KINDS", "BuildMeans", "CompareDetail", "ItemPair", "ItemSide", "LessonText", "PromptFile", "RunCost",
           "ScorerPairs", "dollars"]
