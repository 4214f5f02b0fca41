"""From the result of ``stay evals compare`` to the comparison page's rows, and each run's own
mean with an interval from the units the test used. Items are diffed only when matched by
content: after a regeneration no item matches, and the page says so."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

from stay.scoring._compare import (
    ITEMS,
    Comparison,
    ItemChange,
    ScorerComparison,
    _content_pairs,
    _notes,
    item_changes,
    judge_cell,
    method,
)
from stay.scoring._compare_detail import PER_KIND, compare_detail
from stay.scoring._defaults import POWER
from stay.scoring._stats import build_strata
from stay.view import CompareDetail, CompareHeader, Interval, ItemDiffRow, MeanError, ScorerRow, render_compare_html

PAGE_ITEMS = 100
"""Changed items a page lists when not told otherwise: those that changed most."""
LEVEL = 0.95
INTERVALS = ("each run's mean with a 95% t interval over the test's own units, briefs held fixed: "
             "for a test over builds, from the pooled build-to-build variance within briefs (none with one "
             "build per brief); for a test over items, from the matched items' scores; clipped to [0, 1]")


@dataclass(frozen=True)
class ComparePage:
    """What the comparison page draws: the header, a row per scorer, the item diff
    (None: no item was matched by content), and what changed in detail."""

    header: CompareHeader
    rows: tuple[ScorerRow, ...]
    items: tuple[ItemDiffRow, ...] | None
    detail: CompareDetail | None = None

    def html(self) -> str:
        return render_compare_html(self.header, self.rows, self.items, self.detail)


def compare_page(comparison: Comparison, baseline: Mapping[str, Any], candidate: Mapping[str, Any], *,
                 paths: tuple[str, str] = ("baseline", "candidate"), items: int | None = PAGE_ITEMS,
                 pairs: int = PER_KIND, notes: Sequence[str] = ()) -> ComparePage:
    """The page for ``comparison`` of the reports ``baseline`` and ``candidate`` (read from
    ``paths``), listing at most ``items`` changed items (None: every one), and side by
    side at most ``pairs`` items of each kind per scorer (``stay.scoring._compare_detail``);
    ``notes`` are more lines for the page's notes (the calibration the command used)."""
    from stay.scoring._provenance import provenance_notes

    intervals = run_intervals(comparison, baseline, candidate)
    rows = tuple(_row(result, *intervals[result.scorer]) for result in comparison.scorers)
    changes, coverage = item_changes(dict(baseline), dict(candidate), top=sys.maxsize)
    matched = {scorer: counts for scorer, counts in coverage.items() if counts[0]}
    diff = tuple(_item(change) for change in changes[:items]) if matched else None
    tested = sum(r.difference is not None for r in comparison.scorers)
    header = CompareHeader(
        baseline_label=comparison.baseline_label, candidate_label=comparison.candidate_label,
        judge=_either(baseline, candidate, "judge") or "n/a", judge_model=_either(baseline, candidate, "judge_model"),
        backend=_either(baseline, candidate, "backend") or "n/a",
        baseline_models=_models(baseline), candidate_models=_models(candidate),
        alpha=comparison.alpha, power=POWER, test=method(comparison),
        adjustment=f"Holm-Bonferroni across {tested} scorers",
        gate=_gate(comparison), exit_code=comparison.exit_code, regressions=tuple(comparison.regressions),
        sources=paths, epochs=comparison.epochs, intervals=INTERVALS,
        # the provenance lines as the terminal prints them (the page's header names backend and judge)
        notes=tuple(_notes(comparison, paths)) + _quality(baseline, candidate)
        + tuple(provenance_notes(baseline, candidate)) + tuple(notes),
        items_matched=coverage if matched else {}, items_changed=len(changes) if matched else None)
    return ComparePage(header, rows, diff, compare_detail(baseline, candidate, per_kind=pairs,
                                                          paths=(Path(paths[0]), Path(paths[1]))))


def _row(r: ScorerComparison, baseline: Interval | None, candidate: Interval | None) -> ScorerRow:
    tested = r.difference is not None  # "nothing judged": the p-values are placeholders, not results
    return ScorerRow(
        scorer=r.scorer, baseline_mean=r.baseline, baseline_interval=baseline, candidate_mean=r.candidate,
        candidate_interval=candidate, difference=r.difference,
        difference_interval=Interval(r.low, r.high, LEVEL) if r.low is not None and r.high is not None else None,
        p_raw=r.p if tested else None, p_adjusted=r.p_adjusted if tested else None, mde=r.mde, verdict=r.verdict,
        pairs=r.units[0] if r.test == ITEMS else 0, test=r.test if tested else "", units=r.units if tested else None,
        threshold=r.threshold, spread=r.spread, judge=judge_cell(r))


def _item(change: ItemChange) -> ItemDiffRow:
    return ItemDiffRow(scorer=change.scorer, brief=change.brief, item=change.candidate_item,
                       baseline_score=change.baseline_score, candidate_score=change.candidate_score,
                       baseline_reason=change.baseline_reason, candidate_reason=change.candidate_reason,
                       baseline_item=change.baseline_item)


def _either(baseline: Mapping[str, Any], candidate: Mapping[str, Any], key: str) -> str | None:
    """The runs' shared value of ``key``, or both when ``--allow`` let them differ."""
    before, after = baseline.get(key), candidate.get(key)
    if before == after:
        return None if before is None else str(before)
    return f"baseline {before if before is not None else 'n/a'}; candidate {after if after is not None else 'n/a'}"


def _models(report: Mapping[str, Any]) -> dict[str, str]:
    models = report.get("models")
    return {str(role): str(model) for role, model in models.items()} if isinstance(models, Mapping) else {}


def _quality(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> tuple[str, ...]:
    def knobs(report: Mapping[str, Any]) -> str:
        quality = report.get("quality")
        if not isinstance(quality, Mapping) or not quality:
            return "none"
        return ", ".join(f"{knob} {rate}" for knob, rate in sorted(quality.items()))

    if knobs(baseline) == knobs(candidate) == "none":
        return ()
    return (f"offline quality knob (the share of items the offline backend degrades on purpose): baseline "
            f"{knobs(baseline)}; candidate {knobs(candidate)}",)


def _gate(comparison: Comparison) -> str:
    if comparison.regressions:
        return f"at least one scorer is worse at a Holm-adjusted p below {comparison.alpha}."
    gating = " that may gate" if comparison.held_worse else ""
    return f"no scorer{gating} is worse at a Holm-adjusted p below {comparison.alpha}{comparison.held_worse}."


def run_intervals(comparison: Comparison, baseline: Mapping[str, Any], candidate: Mapping[str, Any],
                  level: float = LEVEL) -> dict[str, tuple[Interval | None, Interval | None]]:
    """Per scorer, (baseline's, candidate's) interval around its mean, over the units its
    test used (see the module's docstring); None where it cannot be estimated."""
    briefs = sorted(set(baseline["briefs"]) & set(candidate["briefs"]))
    found: dict[str, tuple[Interval | None, Interval | None]] = {}
    for r in comparison.scorers:
        if r.difference is None:
            found[r.scorer] = (None, None)
        elif r.test == ITEMS:
            pairs, _complete = _content_pairs(dict(baseline), dict(candidate), r.scorer, briefs)
            both = [(b, a) for _brief, b, a in pairs if b.get("failure") is None and a.get("failure") is None]
            found[r.scorer] = (stratified_interval([(1.0, [float(b["score"]) for b, _a in both])], level),
                               stratified_interval([(1.0, [float(a["score"]) for _b, a in both])], level))
        else:
            strata = build_strata(dict(baseline), dict(candidate), r.scorer, briefs)
            found[r.scorer] = (stratified_interval([(s.weight, s.baseline) for s in strata], level),
                               stratified_interval([(s.weight, s.candidate) for s in strata], level))
    return found


def stratified_error(strata: Sequence[tuple[float, Sequence[float]]]) -> tuple[float, float, int] | None:
    """(mean, standard error, degrees of freedom) of a weighted mean of stratum means,
    ``strata`` being (weight, values): with W the weights' sum, n_b and m_b a stratum's
    size and mean, the mean is sum(w_b m_b) / W, and the standard error
    sqrt(s2 * sum((w_b / W)^2 / n_b)), s2 the variance within strata pooled over them
    (sum of squared deviations from each stratum's mean over sum(n_b - 1) degrees of
    freedom). None without a degree of freedom (one value per stratum)."""
    used = [(w, v) for w, v in strata if w > 0 and v]
    total = sum(w for w, _v in used)
    df = sum(len(v) - 1 for _w, v in used)
    if not used or df <= 0:
        return None
    means = [(w / total, sum(v) / len(v), v) for w, v in used]
    mean = sum(w * m for w, m, _v in means)
    squares = sum((x - m) ** 2 for _w, m, v in means for x in v)
    return mean, math.sqrt(squares / df * sum(w * w / len(v) for w, _m, v in means)), df


def stratified_interval(strata: Sequence[tuple[float, Sequence[float]]], level: float = LEVEL) -> Interval | None:
    """The t interval of a weighted mean of stratum means (``stratified_error``), clipped
    to [0, 1]; None without a degree of freedom."""
    found = stratified_error(strata)
    if found is None:
        return None
    mean, error, df = found
    half = t_quantile(level, df) * error
    return Interval(max(0.0, mean - half), min(1.0, mean + half), level)


def run_errors(report: Mapping[str, Any], level: float = LEVEL) -> dict[str, MeanError]:
    """Per scorer of one run: its mean over builds with the standard error, like Inspect's
    stderr per metric, stratified by brief as ``compare`` stratifies its test."""
    found = {}
    for scorer in sorted(report["scorers"]):
        strata = []
        for brief in sorted(report["briefs"]):
            counts, means = [], []
            for build in report["briefs"][brief]["builds"]:
                result = build["scorers"].get(scorer)
                values = [float(i["score"]) for i in (result or {}).get("items", [])
                          if i.get("failure") is None and i.get("score") is not None]
                if values:
                    counts.append(len(values))
                    means.append(sum(values) / len(values))
            if means:
                strata.append((sum(counts) / len(counts), means))
        if not strata:
            continue
        estimate = stratified_error(strata)
        total = sum(w for w, _v in strata)
        mean = estimate[0] if estimate else sum(w * sum(v) / len(v) for w, v in strata) / total
        found[scorer] = MeanError(mean, estimate[1] if estimate else None, sum(len(v) for _w, v in strata),
                                 stratified_interval(strata, level))
    return found


def t_quantile(level: float, df: int) -> float:
    """The two-sided critical value of Student's t: the ``t`` with P(|T| <= t) = ``level``
    for ``df`` degrees of freedom. Exact (the t distribution's closed form for whole
    degrees of freedom, solved by bisection) up to 400 degrees of freedom; beyond, the
    Cornish-Fisher expansion (Abramowitz and Stegun 26.7.5), within 1e-9 there."""
    if not 0 < level < 1 or df < 1:
        raise ValueError(f"t_quantile needs 0 < level < 1 and df >= 1; got level {level}, df {df}")
    z = NormalDist().inv_cdf((1 + level) / 2)
    if df > 400:
        g = ((z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96,
             (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
             (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160)
        return z + sum(term / float(df) ** (k + 1) for k, term in enumerate(g))
    low, high = z, max(2 * z, 1.0)
    while _t_coverage(high, df) < level:
        low, high = high, high * 2
    for _ in range(80):
        middle = (low + high) / 2
        low, high = (middle, high) if _t_coverage(middle, df) < level else (low, middle)
    return (low + high) / 2


def _t_coverage(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with whole ``df``: the finite series in cos(theta)^2,
    theta = atan(t / sqrt(df)) (Abramowitz and Stegun 26.7.3)."""
    theta = math.atan(t / math.sqrt(df))
    squared = math.cos(theta) ** 2
    term, series = 1.0, 1.0
    if df % 2:
        for k in range(1, (df - 1) // 2):
            term *= 2 * k / (2 * k + 1) * squared
            series += term
        tail = math.sin(theta) * math.cos(theta) * series if df > 1 else 0.0
        return 2 / math.pi * (theta + tail)
    for k in range(1, df // 2):
        term *= (2 * k - 1) / (2 * k) * squared
        series += term
    return math.sin(theta) * series


__all__ = ["ComparePage", "compare_page", "run_errors", "run_intervals", "stratified_error",
           "stratified_interval", "t_quantile"]
