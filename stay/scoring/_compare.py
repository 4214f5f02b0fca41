"""Comparing two eval reports with a paired test, so a prompt change can be gated.

Items are paired by (brief, scorer, item id): the same question asked of the course
each prompt variant wrote. The test is the two-sided exact sign test on the paired
differences: scores are bounded and mostly 0 or 1, with many ties, so no test that
assumes normality (a paired t-test) or a symmetric continuous distribution
(Wilcoxon) fits, and the sign test needs neither; on 0/1 items it is exactly
McNemar's test. Items scored equally in both runs carry no evidence either way and
are left out, as the test prescribes. A difference is "detectable" at p < alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

ALPHA = 0.05


@dataclass(frozen=True)
class ScorerComparison:
    scorer: str
    baseline: float | None
    candidate: float | None
    difference: float | None
    pairs: int
    better: int
    worse: int
    p_value: float
    verdict: str
    """better, worse, or no detectable difference."""


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact sign test: P(a split at least this uneven | no difference)."""
    n = better + worse
    if n == 0:
        return 1.0
    k = min(better, worse)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return float(min(1.0, 2 * tail))


def _items(report: dict[str, Any], scorer: str) -> dict[tuple[str, str], float]:
    found: dict[tuple[str, str], float] = {}
    for brief, entry in report["briefs"].items():
        result = entry["scorers"].get(scorer)
        for item in result["items"] if result else []:
            if not item["failed"]:
                found[(str(brief), str(item["item"]))] = float(item["score"])
    return found


def compare(baseline: dict[str, Any], candidate: dict[str, Any], alpha: float = ALPHA) -> list[ScorerComparison]:
    scorers = sorted({s for r in (baseline, candidate) for e in r["briefs"].values() for s in e["scorers"]})
    results = []
    for scorer in scorers:
        before, after = _items(baseline, scorer), _items(candidate, scorer)
        paired = sorted(set(before) & set(after))
        better = sum(after[key] > before[key] for key in paired)
        worse = sum(after[key] < before[key] for key in paired)
        p = sign_test(better, worse)
        mean_before = sum(before[k] for k in paired) / len(paired) if paired else None
        mean_after = sum(after[k] for k in paired) / len(paired) if paired else None
        diff = mean_after - mean_before if paired else None  # type: ignore[operator]
        verdict = "no detectable difference"
        if p < alpha and better != worse:
            verdict = "better" if better > worse else "worse"
        results.append(ScorerComparison(scorer, mean_before, mean_after, diff, len(paired), better, worse,
                                        p, verdict))
    return results


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def text_table(results: list[ScorerComparison]) -> str:
    lines = [f"{'scorer':20} {'baseline':>8} {'candidate':>9} {'diff':>7} {'pairs':>5} {'+':>4} {'-':>4} "
             f"{'p':>8}  verdict"]
    for r in results:
        lines.append(f"{r.scorer:20} {_fmt(r.baseline):>8} {_fmt(r.candidate):>9} {_fmt(r.difference, True):>7} "
                     f"{r.pairs:>5} {r.better:>4} {r.worse:>4} {r.p_value:>8.2g}  {r.verdict}")
    return "\n".join(lines) + "\n"


def markdown(results: list[ScorerComparison], baseline: dict[str, Any], candidate: dict[str, Any]) -> str:
    """The comparison as Markdown: a table, and a bar chart of both means per scorer."""
    names = [r.scorer for r in results]
    lines = [f"# Eval comparison: {baseline.get('label', 'baseline')} vs {candidate.get('label', 'candidate')}",
             "", f"Paired exact sign test over items paired by brief and item id; alpha {ALPHA}.", "",
             "| scorer | baseline | candidate | difference | pairs | better | worse | p | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.scorer} | {_fmt(r.baseline)} | {_fmt(r.candidate)} | {_fmt(r.difference, True)} | "
                     f"{r.pairs} | {r.better} | {r.worse} | {r.p_value:.2g} | **{r.verdict}** |")
    lines += ["", "```mermaid", "xychart-beta", '    title "Mean score per scorer"',
              f"    x-axis [{', '.join(names)}]", '    y-axis "mean score" 0 --> 1',
              f"    bar [{', '.join(_fmt(r.baseline) if r.baseline is not None else '0' for r in results)}]",
              f"    bar [{', '.join(_fmt(r.candidate) if r.candidate is not None else '0' for r in results)}]",
              "```", "", "First bar of each pair: baseline; second: candidate.", ""]
    for r in results:
        base, cand = r.baseline or 0.0, r.candidate or 0.0
        lines.append(f"    {r.scorer:20} baseline  {'#' * round(base * 40):40} {_fmt(r.baseline)}")
        lines.append(f"    {'':20} candidate {'#' * round(cand * 40):40} {_fmt(r.candidate)}")
    return "\n".join(lines) + "\n"
