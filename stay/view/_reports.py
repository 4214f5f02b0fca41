"""Eval reports as pages: a comparison of two runs, and the summary of one run, each one self-contained
HTML file (stylesheet inline, nothing fetched), deterministic, every value escaped. The comparison is built
from plain rows defined here (``stay.scoring._compare_page`` fills them), not from the statistics code.
A pair is *changed* when its sides differ in score or failure, or one run lacks it; *failed* when a side
scored below full marks or failed; else *passed*. The filters are radio buttons and CSS: no script."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stay._display import fixed
from stay.view._env import environment, static_text

BETTER, WORSE = "better", "worse"
INCONCLUSIVE = "inconclusive"
CHANGED, FAILED, PASSED = "changed", "failed", "passed"
PAIR_KINDS: tuple[str, ...] = (CHANGED, FAILED, PASSED)


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


@dataclass(frozen=True)
class Interval:
    """A confidence interval [low, high] at ``level`` (0.95 for 95%)."""

    low: float
    high: float
    level: float = 0.95


@dataclass(frozen=True)
class ScorerRow:
    scorer: str
    baseline_mean: float | None
    baseline_interval: Interval | None
    candidate_mean: float | None
    candidate_interval: Interval | None
    difference: float | None
    """candidate_mean - baseline_mean over the paired items."""
    difference_interval: Interval | None
    p_raw: float | None
    p_adjusted: float | None
    """After the multiple-comparison adjustment ``CompareHeader.adjustment`` names."""
    mde: float | None
    """The minimum detectable effect at the header's alpha and power, in the means' units."""
    verdict: str
    """"better", "worse", or any other text (e.g. "no detectable difference")."""
    pairs: int = 0
    """Items present in both runs (shown when ``units`` is not given)."""
    test: str = ""
    """The test's units: "builds" or "items" (matched by content); empty when not known."""
    units: tuple[int, int] | None = None
    """Units in (baseline, candidate): builds for a "builds" test, matched items for "items"."""
    threshold: float | None = None
    """The drop the difference's interval must exclude for "no detectable difference"."""
    spread: float | None = None
    """The observed standard deviation the MDE was computed from."""
    judge: str = ""
    """The judge's calibration ("kappa 0.84 [0.71, 0.93]", ...) and why it may not gate; or empty."""


@dataclass(frozen=True)
class MeanError:
    """One run's scorer over its builds, as a comparison weighs them (briefs held fixed)."""

    mean: float
    """The brief-weighted mean of build means (weights: a brief's mean items per build)."""
    error: float | None
    """Its standard error; None with one build per brief (no variance to estimate)."""
    builds: int
    interval: Interval | None
    """The 95% t interval around ``mean`` (the page's error bar)."""


@dataclass(frozen=True)
class ItemDiffRow:
    scorer: str
    brief: str
    item: str
    baseline_score: float | None
    """None: the item is only in the candidate run."""
    candidate_score: float | None
    """None: the item is only in the baseline run."""
    baseline_reason: str = ""
    candidate_reason: str = ""
    baseline_item: str | None = None
    """The baseline's id for this item, when content matching paired different ids."""

    @property
    def change(self) -> str:
        if self.baseline_score is None:
            return "added"
        if self.candidate_score is None:
            return "removed"
        if self.candidate_score > self.baseline_score:
            return BETTER
        if self.candidate_score < self.baseline_score:
            return WORSE
        return "same"


@dataclass(frozen=True)
class CompareHeader:
    baseline_label: str
    candidate_label: str
    judge: str
    """Who judged, as the reports name it (e.g. "model:claude-sonnet-5-5")."""
    judge_model: str | None
    backend: str
    baseline_models: Mapping[str, str] = field(default_factory=dict)
    """role -> model id, for the baseline run."""
    candidate_models: Mapping[str, str] = field(default_factory=dict)
    alpha: float = 0.05
    power: float | None = 0.8
    test: str = ""
    """The paired test, in words (e.g. "exact sign test on paired items")."""
    adjustment: str = ""
    """The multiple-comparison adjustment of the p-values (e.g. "Holm")."""
    gate: str = ""
    """The gate's outcome in words (e.g. "fires: distractor_quality is worse ..."); empty: no gate."""
    exit_code: int | None = None
    """What the command exits with for this comparison (0 passes, 1 the gate fires)."""
    regressions: tuple[str, ...] = ()
    """The scorers the gate fires on, each linked to its row."""
    sources: tuple[str, str] | None = None
    """Where the two reports were read from (baseline, candidate)."""
    epochs: tuple[int, int] | None = None
    """Builds per brief in each run."""
    intervals: str = ""
    """How each run's own interval (around its mean) was computed, in words."""
    notes: tuple[str, ...] = ()
    """Anything else a reader must know: judge failures, accepted differences, briefs left out."""
    items_matched: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """scorer -> (items matched by content, items in the baseline)."""
    items_changed: int | None = None
    """How many matched items changed score in all (the page may list fewer)."""


@dataclass(frozen=True)
class _Bar:
    """One row's drawing, in SVG user units (width 256, height 40)."""

    ticks: tuple[tuple[float, str], ...]
    lines: tuple[tuple[str, float, float, float, float | None], ...]
    """(css class, y, x low, x high, x mean)"""
    label: str
    zero: float | None = None
    band: tuple[float, float] | None = None


WIDTH, PAD = 256.0, 12.0


def _scale(low: float, high: float) -> Any:
    span = high - low or 1.0

    def x(value: float) -> float:
        return round(PAD + (value - low) / span * (WIDTH - 2 * PAD), 2)
    return x


def _means_bar(row: ScorerRow) -> _Bar | None:
    runs = [(css, y, (interval.low, interval.high) if interval is not None else (mean, mean), mean)
            for css, y, mean, interval in (("baseline", 10.0, row.baseline_mean, row.baseline_interval),
                                           ("candidate", 22.0, row.candidate_mean, row.candidate_interval))
            if mean is not None or interval is not None]
    label = (f"baseline {fixed(row.baseline_mean)} {_fmt_interval(row.baseline_interval)}; "
             f"candidate {fixed(row.candidate_mean)} {_fmt_interval(row.candidate_interval)}")
    return _runs_bar(runs, label) if runs else None


def _difference_bar(row: ScorerRow) -> _Bar | None:
    if row.difference is None and row.difference_interval is None:
        return None
    values = [abs(v) for v in (row.difference, row.mde) if v is not None]
    if row.difference_interval is not None:
        values += [abs(row.difference_interval.low), abs(row.difference_interval.high)]
    reach = max([0.05, *values]) * 1.1
    x = _scale(-reach, reach)
    interval = row.difference_interval
    lo, hi = (interval.low, interval.high) if interval is not None else (row.difference or 0.0,) * 2
    mean = x(row.difference) if row.difference is not None else None
    band = (x(-row.mde), x(row.mde)) if row.mde is not None else None
    label = (f"difference {fixed(row.difference, signed=True)} {_fmt_interval(interval)}"
             + (f"; minimum detectable effect {fixed(row.mde)}" if row.mde is not None else ""))
    return _Bar(ticks=((x(-reach), fixed(-reach, 2, True)), (x(0.0), "0"), (x(reach), fixed(reach, 2, True))),
                lines=(("difference", 16.0, x(lo), x(hi), mean),), zero=x(0.0), band=band, label=label)


def _fmt_interval(interval: Interval | None) -> str:
    if interval is None:
        return "(no interval)"
    return f"[{interval.low:.3f}, {interval.high:.3f}] at {interval.level:.0%}"


def verdict_class(verdict: str) -> str:
    if verdict.startswith(INCONCLUSIVE):
        return "verdict-inconclusive"
    return {BETTER: "verdict-better", WORSE: "verdict-worse"}.get(verdict, "verdict-none")


def _units(row: ScorerRow) -> str:
    if row.units is None:
        return str(row.pairs)
    if row.test == "items":
        return f"{row.units[0]} item pairs"
    return f"{row.units[0]} + {row.units[1]} {row.test or 'units'}"


def render_compare_html(header: CompareHeader, rows: Sequence[ScorerRow],
                        items: Sequence[ItemDiffRow] | None, detail: CompareDetail | None = None) -> str:
    """The comparison page: per scorer the means, the difference and its verdict; the item diff; the builds."""
    ordered_items = None
    if items is not None:
        rank = {WORSE: 0, BETTER: 1, "removed": 2, "added": 3, "same": 4}
        ordered_items = sorted(items, key=lambda i: (rank[i.change], i.scorer, i.brief, i.item))
    roles = sorted(set(header.baseline_models) | set(header.candidate_models))
    brief_means: dict[str, dict[str, Any]] = {}
    for cell in detail.brief_means if detail else ():
        brief_means.setdefault(cell.brief, {})[cell.scorer] = cell
    return environment().get_template("compare.html.j2").render(
        detail=detail, brief_means=brief_means, kinds=PAIR_KINDS, dollars=dollars,
        detail_scorers=sorted({c.scorer for c in detail.brief_means}) if detail else [],
        pair_total=sum(len(s.pairs) for s in detail.scorers) if detail else 0,
        header=header, rows=sorted(rows, key=lambda r: r.scorer), items=ordered_items,
        changed=[i for i in ordered_items or [] if i.change != "same"], roles=roles,
        means_bar=_means_bar, difference_bar=_difference_bar, verdict_class=verdict_class, units=_units,
        fmt_interval=_fmt_interval, css=static_text("style.css"))


EXIT_MEANINGS = {
    2: "the runs cannot be compared (they differ in what a comparison holds fixed), or a report cannot be read",
    5: "a run is invalid: too many of its judge items failed, or a scorer judged nothing in a brief",
}


def render_compare_refused_html(baseline: str, candidate: str, reason: str, exit_code: int) -> str:
    """The page ``stay evals compare --html`` writes when it refuses: the reports, reason and exit code."""
    return environment().get_template("refused.html.j2").render(
        baseline=baseline, candidate=candidate, reason=reason, exit_code=exit_code,
        meaning=EXIT_MEANINGS.get(exit_code, "refused"), css=static_text("style.css"))


def render_run_summary_html(report: Mapping[str, Any], errors: Mapping[str, MeanError] | None = None,
                            method: str = "") -> str:
    """One eval run's report (the JSON ``stay.scoring._report.report`` writes) as a page: judges,
    means per scorer (with ``errors``: over builds, with error bars), per-brief scores, every item
    with its reason, and the cost. Missing fields show as n/a."""
    briefs = _clean_briefs(report.get("briefs"))
    scorers = sorted({name for entry in briefs.values() for name in (entry.get("scorers") or {})})
    means: Mapping[str, Any] = report.get("means") or {}
    rows = [(name, _number(means.get(name))) for name in scorers]
    # a scorer no build judged (the offline judge reads no prose) shows why, never a mean
    results = [(name, r) for entry in briefs.values() for name, r in entry["scorers"].items()]
    unjudged = {name: str(r.get("not_judged") or "not judged") for name, r in results
                if all(other.get("judged") is False for n, other in results if n == name)}
    return environment().get_template("run.html.j2").render(
        report=report, unjudged=unjudged, briefs=dict(sorted(briefs.items())), scorers=scorers, rows=rows,
        errors=errors or {},
        method=method, value_bar=_value_bar, error_bar=_error_bar, number=_number, dollars=dollars,
        css=static_text("style.css"))


def _clean_briefs(raw: Any) -> dict[str, dict[str, Any]]:
    """The report's briefs without anything of the wrong shape: a damaged report renders what it can."""
    if not isinstance(raw, Mapping):
        return {}
    briefs: dict[str, dict[str, Any]] = {}
    for slug, entry in _builds(raw):
        scorers = entry.get("scorers")
        cleaned = {}
        for name, result in scorers.items() if isinstance(scorers, Mapping) else ():
            if isinstance(result, Mapping):
                items = result.get("items")
                kept = [{**i, "failed": _item_failure(i)} for i in items if isinstance(i, Mapping)] \
                    if isinstance(items, list) else []
                cleaned[str(name)] = {**result, "items": kept, "failed": _failed(result)}
        build = entry.get("build")
        build = build if isinstance(build, Mapping) else {}
        briefs[str(slug)] = {**entry, "scorers": cleaned, "build": build}
    return briefs


def _builds(raw: Mapping[Any, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, entry) per build: version 2 keeps each brief's builds ('<slug> e01'); version 1 one."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    for slug, entry in raw.items():
        if not isinstance(entry, Mapping):
            continue
        builds = entry.get("builds")
        if not isinstance(builds, list):
            found.append((str(slug), entry))
            continue
        many = len(builds) > 1
        for build in builds:
            if isinstance(build, Mapping):
                epoch = build.get("epoch")
                label = f"{slug} e{epoch:02d}" if many and isinstance(epoch, int) else str(slug)
                found.append((label, build))
    return found


def _failed(result: Mapping[str, Any]) -> int:
    """Judge failures of one result: version 2 counts unparseable replies and errors apart, 1 one count."""
    counts = [result.get(key) for key in ("unparseable", "errors")]
    if any(isinstance(c, int) and not isinstance(c, bool) for c in counts):
        return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool))
    failed = result.get("failed")
    return failed if isinstance(failed, int) and not isinstance(failed, bool) else 0


def _item_failure(item: Mapping[str, Any]) -> str:
    """Why an item's judge failed ("unparseable", "error"), or "" when it did not."""
    failure = item.get("failure")
    if isinstance(failure, str) and failure:
        return failure
    return "failed" if item.get("failed") is True else ""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _error_bar(e: MeanError) -> _Bar:
    """A run's mean over builds with its 95% interval (a dot alone without one)."""
    bounds = (e.interval.low, e.interval.high) if e.interval else (e.mean, e.mean)
    return _runs_bar([("candidate", 16.0, bounds, e.mean)], f"mean over builds {fixed(e.mean)} "
                     f"{_fmt_interval(e.interval)}")


def _value_bar(value: float | None) -> _Bar | None:
    return None if value is None else _runs_bar([("candidate", 16.0, (value, value), value)], f"mean {fixed(value)}")


Run = tuple[str, float, tuple[Any, Any], float | None]
"""(css class, y, (low, high), mean) of one run on a bar: its interval, or its mean alone as (mean, mean)."""


def _runs_bar(runs: Sequence[Run], label: str) -> _Bar:
    """Runs' [low, high] and means on a scale from 0 to 1, stretched to reach every one of them."""
    values = [v for _css, _y, bounds, mean in runs for v in (*bounds, mean) if v is not None]
    low, high = min(0.0, *values), max(1.0, *values)
    x = _scale(low, high)
    lines = tuple((css, y, x(lo), x(hi), x(mean) if mean is not None else None) for css, y, (lo, hi), mean in runs)
    return _Bar(ticks=((x(low), fixed(low, 2)), (x(high), fixed(high, 2))), lines=lines, label=label)


__all__ = ["PAIR_KINDS", "BuildMeans", "CompareDetail", "CompareHeader", "Interval", "ItemDiffRow", "ItemPair",
           "ItemSide", "LessonText", "MeanError", "PromptFile", "RunCost", "ScorerPairs", "ScorerRow", "dollars",
           "render_compare_html", "render_compare_refused_html", "render_run_summary_html"]
