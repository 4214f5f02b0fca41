"""A comparison as the text a person reads in a terminal, and as Markdown with a chart."""

from __future__ import annotations

from collections.abc import Sequence

from stay._display import fixed
from stay.scoring._compare import BUILDS, Comparison, ItemChange, ScorerComparison, judge_cell


def _p(value: float) -> str:
    return f"{value:.2g}" if value < 0.01 else f"{value:.3f}"


def _tested_p(value: float, r: ScorerComparison) -> str:
    """A p-value, or n/a for a scorer not tested (nothing judged, or not judged): no placeholder p."""
    return _p(value) if r.difference is not None else "n/a"


def _test(r: ScorerComparison) -> str:
    return r.test if r.difference is not None else "-"


def _interval(r: ScorerComparison) -> str:
    return "n/a" if r.low is None or r.high is None else f"[{r.low:+.3f}, {r.high:+.3f}]"


def method(comparison: Comparison) -> str:
    tests = {r.test for r in comparison.scorers}
    parts = []
    if BUILDS in tests:
        parts.append("over builds (brief x epoch): the difference of brief-weighted means, with a permutation test "
                     "that shuffles run labels within each brief")
    if "items" in tests:
        parts.append("over items matched by content (both runs judged byte-identical content): a paired sign-flip "
                     "permutation test")
    tested = sum(r.test in (BUILDS, "items") and r.difference is not None for r in comparison.scorers)
    return ("Candidate minus baseline per scorer, " + "; ".join(parts) + ". 95% interval: the two one-sided "
            "tests inverted, so it excludes 0 exactly when the two-sided p is at most 0.05. The gate is one-sided: "
            f"Holm-Bonferroni over the p-values of 'worse' across {tested} scorers at alpha {comparison.alpha} "
            "(p (Holm)); it fires only on an adjusted-significant regression ('better' is its own family and never "
            "gates). MDE: the drop this run detects 80% of the time at the gate's strictest level, for its observed "
            "variance (at least the binomial) and N. 'No detectable difference' needs the interval to "
            f"exclude a drop as large as the MDE or {comparison.effect:.0%} of the baseline mean, whichever is "
            "smaller; otherwise 'inconclusive'.")


def _notes(comparison: Comparison, paths: tuple[str, str]) -> list[str]:
    lines = []
    for run, path in zip(("baseline", "candidate"), paths, strict=True):
        counts = comparison.failures.get(run, {})
        unparseable = sum(c[0] for c in counts.values())
        errors = sum(c[1] for c in counts.values())
        items = sum(c[2] for c in counts.values())
        lines.append(f"judge failures, {run} ({path}): {unparseable} unparseable, {errors} model or API errors, "
                     f"of {items} items (left out of the means)")
    for why in comparison.allowed.values():
        lines.append(f"allowed: {why}")
    if comparison.held_worse:
        lines.append(f"not gating: {comparison.held_worse.removeprefix('; ')}")
    for why in comparison.warnings:
        lines.append(f"warning: {why}")
    for why in comparison.power:
        lines.append(f"power: {why}")
    for side, briefs in comparison.missing.items():
        lines.append(f"briefs left out ({side}): {', '.join(briefs)}")
    for brief, paths_ in comparison.unchanged.items():
        lines.append(f"unchanged in both runs (same prompt, references, schema and model), {brief}: "
                     f"{len(paths_)} artefacts: {', '.join(paths_[:6])}{', ...' if len(paths_) > 6 else ''}")
    return lines


def text(comparison: Comparison, paths: tuple[str, str] = ("baseline", "candidate"),
         provenance: Sequence[str] = ()) -> str:
    """The table with its header and notes; ``provenance`` (``stay.scoring._provenance.
    provenance_notes``: who generated and judged each run, the prompt files that differ,
    whether the generator can see them) is printed under the two runs' names."""
    header = (f"{'scorer':20} {'test':6} {'baseline':>8} {'candidate':>9} {'diff':>7} {'95% interval':>18} "
              f"{'p':>7} {'p(Holm)':>7} {'MDE':>6}  verdict")
    lines = [f"baseline:  {paths[0]} ({comparison.baseline_label}, {comparison.epochs[0]} epochs)",
             f"candidate: {paths[1]} ({comparison.candidate_label}, {comparison.epochs[1]} epochs)",
             *provenance, method(comparison), "", header]
    for r in comparison.scorers:
        lines.append(f"{r.scorer:20} {_test(r):6} {fixed(r.baseline):>8} {fixed(r.candidate):>9} "
                     f"{fixed(r.difference, signed=True):>7} {_interval(r):>18} {_tested_p(r.p, r):>7} "
                     f"{_tested_p(r.p_adjusted, r):>7} {fixed(r.mde):>6}  {r.verdict}"
                     + (f" | judge: {judge_cell(r)}" if r.calibration else ""))
    lines += ["", *_notes(comparison, paths)]
    return "\n".join(lines) + "\n"


def items_text(changes: list[ItemChange], coverage: dict[str, tuple[int, int]]) -> str:
    lines = ["", "items matched by content, per scorer: " + ", ".join(
        f"{scorer} {matched} of {total}" for scorer, (matched, total) in coverage.items())]
    if not changes:
        lines.append("no content-matched item changed score" if any(m for m, _t in coverage.values())
                     else "no item is content-matched: the runs judged different content (a regenerated course), "
                          "so an item diff would compare different things")
    for change in changes:
        lines += [f"{change.scorer} {change.brief} {change.baseline_item}"
                  + (f" (now {change.candidate_item})" if change.candidate_item != change.baseline_item else "")
                  + f": {change.baseline_score:.2f} -> {change.candidate_score:.2f}",
                  f"    baseline judge:  {change.baseline_reason}",
                  f"    candidate judge: {change.candidate_reason}"]
    return "\n".join(lines) + "\n"


def markdown(comparison: Comparison, paths: tuple[str, str] = ("baseline", "candidate"),
             changes: list[ItemChange] | None = None, provenance: Sequence[str] = ()) -> str:
    """The comparison as Markdown: the provenance lines (as in ``text``), the table, the
    notes, a bar chart of both means, and (when asked) the item diff with both judges'
    reasons side by side."""
    results = comparison.scorers
    charted = [r for r in results if r.baseline is not None or r.candidate is not None]  # no bar for no mean
    names = [r.scorer for r in charted]
    lines = [f"# Eval comparison: {comparison.baseline_label} vs {comparison.candidate_label}", "",
             *[f"- {line}" for line in provenance], *([""] if provenance else []), method(comparison), "",
             "| scorer | test | baseline | candidate | difference | 95% interval | p | p (Holm) | MDE | verdict "
             "| judge |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.scorer} | {_test(r)} | {fixed(r.baseline)} | {fixed(r.candidate)} | "
                     f"{fixed(r.difference, signed=True)} | {_interval(r)} | {_tested_p(r.p, r)} | "
                     f"{_tested_p(r.p_adjusted, r)} | "
                     f"{fixed(r.mde)} | **{r.verdict}** | {judge_cell(r) or 'n/a'} |")
    lines += ["", *[f"- {note}" for note in _notes(comparison, paths)], "",
              "```mermaid", "xychart-beta", '    title "Mean score per scorer"',
              f"    x-axis [{', '.join(names)}]", '    y-axis "mean score" 0 --> 1',
              f"    bar [{', '.join(fixed(r.baseline) if r.baseline is not None else '0' for r in charted)}]",
              f"    bar [{', '.join(fixed(r.candidate) if r.candidate is not None else '0' for r in charted)}]",
              "```", "", "First bar of each pair: baseline; second: candidate.", ""]
    for r in charted:
        base, cand = r.baseline or 0.0, r.candidate or 0.0
        lines.append(f"    {r.scorer:20} baseline  {'#' * round(base * 40):40} {fixed(r.baseline)}")
        lines.append(f"    {'':20} candidate {'#' * round(cand * 40):40} {fixed(r.candidate)}")
    if changes:
        lines += ["", "## Items that changed most (matched by content)", "",
                  "| scorer | brief | item | baseline | candidate | baseline judge | candidate judge |",
                  "|---|---|---|---|---|---|---|"]
        for c in changes:
            cells = (c.baseline_reason, c.candidate_reason)
            lines.append(f"| {c.scorer} | {c.brief} | {c.baseline_item} | {c.baseline_score:.2f} | "
                         f"{c.candidate_score:.2f} | " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines) + "\n"
