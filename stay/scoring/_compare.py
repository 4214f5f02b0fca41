"""Comparing two eval reports so a prompt change can be gated, refusing what cannot be compared
(docs/evals.md, "The test, and why" and "Guards"); the comparison as text and Markdown, and
``stay.compare_runs``. A scorer neither run judged is never tested and stays out of the Holm family."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stay._display import fixed, html_table, html_text, markdown_table, markdown_text
from stay.errors import InvalidRun, RunsNotComparable, UsageError
from stay.scoring import _stats
from stay.scoring._defaults import ALLOWABLE, ALPHA, EFFECT, MAX_FAILED
from stay.scoring._judges import Standing, find_calibration, standings
from stay.scoring._report import INVALID, REFUSE, WARN, failure_counts, not_judged, read_report, run_checks
from stay.scoring._stats import build_means, build_strata, power_notes, scorer_results

BUILDS, ITEMS = "builds", "items"
WORSE, BETTER, SAME = "worse", "better", "no detectable difference"
INCONCLUSIVE = "inconclusive: run more epochs"
INCONCLUSIVE_ITEMS = "inconclusive: judge more items"
NOTHING = "nothing judged"
Samples = tuple[tuple[float, tuple[float, ...]], ...]  # (weight, values) per stratum
SHOWN = 3
"""Run-file problems a refusal names (the rest counted): one readable line, not one per build."""


@dataclass(frozen=True)
class ScorerComparison:
    scorer: str
    test: str  # BUILDS (stratified permutation over build means) or ITEMS (content-matched pairs)
    baseline: float | None
    candidate: float | None
    difference: float | None
    low: float | None
    high: float | None
    p: float
    """Two-sided p of "no difference": the 95% interval excludes 0 exactly when ``p <= 0.05``."""
    p_adjusted: float
    """The gate's p: ``p_worse`` Holm-adjusted over the tested scorers."""
    mde: float | None
    """Minimum detectable drop at 80% power at the gate's strictest Holm level; None: not
    estimable, or no effect could reach the gate with this few units."""
    threshold: float | None
    """The drop the interval must exclude for "no detectable difference": min(MDE, effect x baseline mean)."""
    units: tuple[int, int]
    """Builds in each run (builds), or content-matched pairs twice (items)."""
    verdict: str
    spread: float | None = None
    """The observed noise the MDE is computed from (sd of a build mean around its brief's, or of a pair)."""
    p_worse: float = 1.0
    p_better: float = 1.0
    """"better" is its own Holm family: it never moves the gate."""
    calibration: str = ""
    """Its judge's calibration ("kappa 0.84 [0.71, 0.93]", "uncalibrated"); empty when none was given."""
    not_gating: str | None = None
    """Why it does not gate: its verdict stands, in a Holm family of its own. None: it gates."""


@dataclass(frozen=True)
class ItemChange:
    scorer: str
    brief: str
    baseline_item: str
    candidate_item: str
    baseline_score: float
    candidate_score: float
    baseline_reason: str
    candidate_reason: str


@dataclass(frozen=True)
class Comparison:
    baseline_label: str
    candidate_label: str
    alpha: float
    scorers: tuple[ScorerComparison, ...]
    effect: float = EFFECT
    allowed: dict[str, str] = field(default_factory=dict)
    """Differences between the runs that ``allow`` accepted: name -> what differed."""
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Briefs only one run has: "baseline only" / "candidate only" -> briefs."""
    failures: dict[str, dict[str, tuple[int, int, int]]] = field(default_factory=dict)
    """run -> scorer -> (unparseable, errors, items), over the compared briefs."""
    unchanged: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """brief -> artefacts built alike in both runs (from ``built_with``)."""
    epochs: tuple[int, int] = (0, 0)
    warnings: tuple[str, ...] = ()
    """What the run checks warned on: legal, but rarely what was meant (A against A, ...)."""
    power: tuple[str, ...] = ()
    """Scorers the baseline's plan says this many epochs cannot hold to the power goal."""
    samples: dict[str, tuple[Samples, Samples]] = field(default_factory=dict, repr=False)
    """Per tested scorer, the units each run's side of its test ran on (the page's intervals)."""

    @property
    def regressions(self) -> list[str]:
        return [s.scorer for s in self.scorers if s.verdict == WORSE and s.not_gating is None]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0

    @property
    def gate(self) -> str:
        if self.regressions:
            return (f"gate fires (exit 1): {', '.join(self.regressions)} worse at a Holm-adjusted p below "
                    f"{self.alpha}")
        return f"gate passes (exit 0): {self.passing}"

    @property
    def passing(self) -> str:
        """Why the gate passes, as the terminal and the page both say it."""
        gating = " that may gate" if self.held_worse else ""
        return f"no scorer{gating} is worse at a Holm-adjusted p below {self.alpha}{self.held_worse}"

    @property
    def held_worse(self) -> str:
        """Scorers worse whose judge may not gate (empty when none)."""
        held = [s.scorer for s in self.scorers if s.verdict == WORSE and s.not_gating]
        return f"; {', '.join(held)} worse, but its judge is not calibrated to gate" if held else ""

    def _display(self) -> tuple[str, tuple[str, ...], list[tuple[str, ...]]]:
        title = (f"{self.candidate_label} against {self.baseline_label} (epochs: baseline {self.epochs[0]}, "
                 f"candidate {self.epochs[1]})")
        head: tuple[str, ...] = ("scorer", "test", "baseline", "candidate", "difference", "95% interval", "p",
                                 "p (Holm)", "MDE", "verdict")
        rows = [(r.scorer, r.test, *_cells(r), r.verdict) for r in self.scorers]
        if any(r.calibration for r in self.scorers):  # the judges' calibration, when the caller gave one
            head, rows = (*head, "judge"), [(*row, judge_cell(r)) for row, r in zip(rows, self.scorers, strict=True)]
        return title, head, rows

    def _repr_html_(self) -> str:
        title, head, rows = self._display()
        return (f'<div class="stay-comparison"><p><strong>{html_text(title)}</strong></p>'
                f"{html_table(head, rows, numeric={2, 3, 4, 6, 7, 8})}<p><strong>{html_text(self.gate)}"
                "</strong></p></div>")

    def _repr_markdown_(self) -> str:
        title, head, rows = self._display()
        return (f"**{markdown_text(title)}**\n\n{markdown_table(head, rows, numeric={2, 3, 4, 6, 7, 8})}\n"
                f"**{markdown_text(self.gate)}**\n")


def judge_cell(r: ScorerComparison) -> str:
    return r.calibration + (f"; {r.not_gating}" if r.not_gating else "")


def differences(baseline: dict[str, Any], candidate: dict[str, Any]) -> dict[str, str]:
    """What differs between two runs that a comparison holds fixed: name -> how."""
    found = {name: f"{name} differs (baseline {baseline.get(key)}, candidate {candidate.get(key)})"
             for key, name in (("judge", "judge"), ("judge_model", "judge-model"), ("backend", "backend"))
             if baseline.get(key) != candidate.get(key)}
    unjudged = (not_judged(baseline), not_judged(candidate))
    one_sided = [f"{s} judged only in the {'candidate' if s in unjudged[0] else 'baseline'}"
                 for s in sorted(set(unjudged[0]) ^ set(unjudged[1])) if s in baseline["scorers"]
                 and s in candidate["scorers"]]
    if one_sided:
        found["judge"] = "; ".join([*filter(None, [found.get("judge")]), "a scorer is judged in one run only ("
                                    + ", ".join(one_sided) + ")"])
    before, after = baseline["scorers"], candidate["scorers"]
    changed = [f"{s} v{before[s]} -> v{after[s]}" for s in sorted(set(before) & set(after)) if before[s] != after[s]]
    changed += [f"{s} only in the baseline" for s in sorted(set(before) - set(after))]
    changed += [f"{s} only in the candidate" for s in sorted(set(after) - set(before))]
    if changed:
        found["scorers"] = "scorer versions differ (" + ", ".join(changed) + ")"
    missing = _missing(baseline, candidate)
    if missing:
        found["briefs"] = "brief sets differ (" + "; ".join(
            f"missing from the {'candidate' if side == 'baseline only' else 'baseline'}: {', '.join(briefs)}"
            for side, briefs in missing.items()) + ")"
    return found


def _missing(baseline: dict[str, Any], candidate: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    only = (("baseline only", set(baseline["briefs"]) - set(candidate["briefs"])),
            ("candidate only", set(candidate["briefs"]) - set(baseline["briefs"])))
    return {side: tuple(sorted(briefs)) for side, briefs in only if briefs}


def _allowed(allow: Collection[str]) -> set[str]:
    names = {a.strip().replace("_", "-") for entry in allow for a in entry.split(",") if a.strip()}
    unknown = names - set(ALLOWABLE)
    if unknown:
        raise RunsNotComparable(f"--allow {', '.join(sorted(unknown))}: not a difference compare can allow; "
                                f"choose from {', '.join(ALLOWABLE)}")
    return names


def _invalid(name: str, path: str, failures: dict[str, tuple[int, int, int]], max_failed: float) -> list[str]:
    return [f"{name} {path}: {scorer} has {unparseable + errors} of {items} judge items failed "
            f"({(unparseable + errors) / items:.0%}: {unparseable} unparseable, {errors} model or API errors), over "
            f"the {max_failed:.0%} limit" for scorer, (unparseable, errors, items) in failures.items()
            if items and (unparseable + errors) / items > max_failed]


def _empty_briefs(name: str, report: dict[str, Any], other: dict[str, Any], scorers: list[str],
                  briefs: list[str]) -> list[str]:
    return [f"{name}: {scorer} scored nothing in brief {brief}, which the other run scored" for scorer in scorers
            for brief in briefs if not build_means(report, scorer, brief) and build_means(other, scorer, brief)]


def _unchanged(baseline: dict[str, Any], candidate: dict[str, Any], briefs: list[str]) -> dict[str, tuple[str, ...]]:
    found = {}
    for brief in briefs:
        builds = [*baseline["briefs"][brief]["builds"], *candidate["briefs"][brief]["builds"]]
        if not all(build.get("built_with") for build in builds):
            continue
        paths = set.intersection(*(set(build["built_with"]) for build in builds))
        same = tuple(sorted(path for path in paths
                            if all(build["built_with"][path] == builds[0]["built_with"][path] for build in builds)))
        if same:
            found[brief] = same
    return found


Item = tuple[int, int, dict[str, Any]]  # (epoch, build index, item)


def _items(report: dict[str, Any], scorer: str, briefs: list[str]) -> list[tuple[str, Item]]:
    return [(brief, (int(result["epoch"]), int(result["build"]), item))
            for brief, result in sorted(scorer_results(report, scorer, briefs), key=lambda br: (br[0], br[1]["epoch"]))
            for item in sorted(result["items"], key=lambda i: str(i["item"]))]


def match_items(baseline: dict[str, Any], candidate: dict[str, Any], scorer: str,
                briefs: list[str]) -> list[tuple[str, bool, Item | None, Item | None]]:
    """Every item of both runs under ``scorer`` as (brief, matched, baseline's, candidate's): paired by
    content (the k-th judging of a content with its k-th in the other run), else by brief, epoch and id."""
    before, after = _items(baseline, scorer, briefs), _items(candidate, scorer, briefs)
    by_content: dict[str, list[int]] = defaultdict(list)
    for k, (_brief, (_epoch, _build, item)) in enumerate(after):
        if item.get("content"):
            by_content[str(item["content"])].append(k)
    pairs: list[tuple[str, bool, Item | None, Item | None]] = []
    used: set[int] = set()
    left: list[tuple[str, Item]] = []
    for brief, side in before:
        queue = by_content.get(str(side[2].get("content") or ""))
        if queue:
            used.add(queue[0])
            pairs.append((brief, True, side, after[queue.pop(0)][1]))
        else:
            left.append((brief, side))
    by_place = {(brief, side[0], str(side[2]["item"])): k for k, (brief, side) in enumerate(after) if k not in used}
    for brief, side in left:
        place = by_place.pop((brief, side[0], str(side[2]["item"])), None)
        if place is not None:
            used.add(place)
        pairs.append((brief, False, side, None if place is None else after[place][1]))
    return pairs + [(brief, False, None, side) for k, (brief, side) in enumerate(after) if k not in used]


def _content_pairs(baseline: dict[str, Any], candidate: dict[str, Any], scorer: str,
                   briefs: list[str]) -> tuple[list[tuple[str, dict[str, Any], dict[str, Any]]], bool]:
    """The items matched by content, in content order, and whether every item of both runs was."""
    found = match_items(baseline, candidate, scorer, briefs)
    pairs = [(brief, b[2], a[2]) for brief, matched, b, a in found if matched and a and b]
    pairs.sort(key=lambda pair: str(pair[1]["content"]))
    return pairs, bool(pairs) and all(matched for _brief, matched, _b, _a in found)


def _mean(side: Samples) -> float:
    return sum(w * sum(v) / len(v) for w, v in side) / sum(w for w, _v in side)


def compare(baseline: dict[str, Any], candidate: dict[str, Any], *, alpha: float = ALPHA,
            allow: Collection[str] = (), max_failed: float = MAX_FAILED, effect: float = EFFECT,
            permutations: int | None = None,
            seed: int = 0, names: tuple[str, str] = ("baseline", "candidate"),
            standing: Mapping[str, Standing] | None = None) -> Comparison:
    """Compare a candidate run with a baseline, per scorer; raises ``RunsNotComparable`` or
    ``InvalidRun`` rather than answer what the runs cannot. ``names``: how messages name the runs.
    ``standing`` (``_judges.standings``): a scorer whose judge may not gate leaves the gate's Holm
    family unless ``allow`` names "uncalibrated" (None: all gate)."""
    permutations = permutations or _stats.PERMUTATIONS
    allowed_names = _allowed(allow)
    findings = run_checks((f"baseline {names[0]}", baseline), (f"candidate {names[1]}", candidate))
    broken = [f.message for f in findings if f.kind == REFUSE and f.allow not in allowed_names]
    if broken:
        more = f"; and {len(broken) - SHOWN} more like these" if len(broken) > SHOWN else ""
        raise RunsNotComparable(f"cannot compare {names[0]} with {names[1]}: " + "; ".join(broken[:SHOWN]) + more)
    found = differences(baseline, candidate)
    found.update({f.allow: f.message for f in findings if f.allow is not None and f.allow in allowed_names})
    refused = {name: why for name, why in found.items() if name not in allowed_names}
    if refused:
        raise RunsNotComparable(
            f"cannot compare {names[0]} with {names[1]}: " + "; ".join(refused.values())
            + f"; if that difference is what you are testing, pass --allow {','.join(refused)}")
    briefs = sorted(set(baseline["briefs"]) & set(candidate["briefs"]))
    scorers = sorted(set(baseline["scorers"]) & set(candidate["scorers"]))
    if not briefs or not scorers:
        raise RunsNotComparable(f"cannot compare {names[0]} with {names[1]}: they share no "
                                f"{'brief' if not briefs else 'scorer'}")
    # not judged in either run (both, or one with --allow judge): never tested, never gating
    unjudged = {**not_judged(candidate), **not_judged(baseline)}
    judged = [s for s in scorers if s not in unjudged]
    failures = {}
    for run, report in (("baseline", baseline), ("candidate", candidate)):
        counts = failure_counts(report, briefs)
        failures[run] = {s: counts.get(s, (0, 0, 0)) for s in scorers}
    problems = (_invalid("baseline", names[0], failures["baseline"], max_failed)
                + _invalid("candidate", names[1], failures["candidate"], max_failed)
                + _empty_briefs(f"baseline {names[0]}", baseline, candidate, judged, briefs)
                + _empty_briefs(f"candidate {names[1]}", candidate, baseline, judged, briefs))
    failed = [f.message for f in findings if f.kind == INVALID]  # each names its own fix
    if problems or failed:
        more = f"; and {len(failed) - SHOWN} more like these" if len(failed) > SHOWN else ""
        raise InvalidRun("invalid run: " + "; ".join(failed[:SHOWN]) + more + ("; " if failed and problems else "")
                         + "; ".join(problems)
                         + ("; rescore it (`stay evals score`) once the judge answers, then compare again"
                            if problems else ""))

    plans: dict[str, tuple[str, Any]] = {}  # per scorer: the test, and what it is run on
    for scorer in judged:
        pairs, complete = _content_pairs(baseline, candidate, scorer, briefs)
        both = [(float(b["score"]), float(a["score"])) for _brief, b, a in pairs
                if b.get("failure") is None and a.get("failure") is None]
        if complete and both:
            plans[scorer] = (ITEMS, both)
        elif strata := build_strata(baseline, candidate, scorer, briefs):
            plans[scorer] = (BUILDS, strata)
    # Holm's strictest step is what a lone regression must beat: the MDE is at that level
    gate_alpha = alpha / max(1, len(plans))
    estimates: dict[str, _stats.Estimate] = {}
    samples: dict[str, tuple[Samples, Samples]] = {}  # each run's units: its mean, N and the page's interval
    for scorer, (test, data) in plans.items():
        if test == ITEMS:
            estimates[scorer] = _stats.paired_test([a - b for b, a in data], permutations=permutations, seed=seed,
                                                   detect_alpha=gate_alpha)
            samples[scorer] = (((1.0, tuple(b for b, _a in data)),), ((1.0, tuple(a for _b, a in data)),))
        else:
            estimates[scorer] = _stats.stratified_test(data, permutations=permutations, seed=seed,
                                                       detect_alpha=gate_alpha)
            samples[scorer] = (tuple((s.weight, s.baseline) for s in data),
                               tuple((s.weight, s.candidate) for s in data))

    tested = sorted(estimates)
    standing = standing or {}
    unfit = [s for s in scorers if s in standing and standing[s].not_gating]
    held = [] if "uncalibrated" in allowed_names else [s for s in tested if s in unfit]
    gating = [s for s in tested if s not in held]
    # the gate is one-sided: Holm over "worse" only, so no alpha is spent on "better", which
    # is a family of its own (reported, never gating); scorers whose judge may not gate are
    # a family of their own too, so they neither fire the gate nor dilute it
    adjusted = {s: p for family in (gating, held)
                for s, p in zip(family, _stats.holm([estimates[s].p_worse for s in family]), strict=True)}
    if unfit and "uncalibrated" in allowed_names:
        found["uncalibrated"] = "gating by --allow uncalibrated: " + ", ".join(
            f"{s} (judge {standing[s].label})" for s in unfit)
    better = dict(zip(tested, _stats.holm([estimates[s].p_better for s in tested]), strict=True))
    def held_out(scorer: str) -> dict[str, Any]:
        known = standing.get(scorer)
        gates = "uncalibrated" in allowed_names or known is None or known.not_gating is None
        return {} if known is None else {"calibration": known.label, "not_gating": None if gates else known.not_gating}

    results = []
    for scorer in scorers:
        if scorer not in estimates:
            results.append(ScorerComparison(scorer, BUILDS, None, None, None, None, None, 1.0, 1.0, None, None,
                                            (0, 0), unjudged.get(scorer, NOTHING), **held_out(scorer)))
            continue
        test, estimate, (before, after) = plans[scorer][0], estimates[scorer], samples[scorer]
        mean_base = _mean(before)  # over items: the candidate's mean is the baseline's moved by the paired mean
        mean_cand = mean_base + estimate.difference if test == ITEMS else _mean(after)
        units = (sum(len(v) for _w, v in before), sum(len(v) for _w, v in after))
        mde = estimate.mde
        threshold = None if mde is None else min(mde, effect * mean_base)
        if adjusted[scorer] < alpha:
            verdict = WORSE
        elif better[scorer] < alpha:
            verdict = BETTER
        elif threshold is None or estimate.low < -threshold - 1e-9:  # cannot exclude a drop that large
            verdict = INCONCLUSIVE if test == BUILDS else INCONCLUSIVE_ITEMS
        else:
            verdict = SAME
        results.append(ScorerComparison(scorer, test, mean_base, mean_cand, estimate.difference, estimate.low,
                                        estimate.high, estimate.p, adjusted[scorer], mde, threshold, units, verdict,
                                        estimate.spread, estimate.p_worse, estimate.p_better, **held_out(scorer)))
    epochs = (int(baseline.get("epochs") or 0), int(candidate.get("epochs") or 0))
    return Comparison(
        baseline_label=str(baseline.get("label", "baseline")),
        candidate_label=str(candidate.get("label", "candidate")), alpha=alpha, scorers=tuple(results), effect=effect,
        allowed={k: v for k, v in found.items() if k in allowed_names},
        missing=_missing(baseline, candidate),
        failures=failures, unchanged=_unchanged(baseline, candidate, briefs),
        epochs=epochs, samples=samples,
        warnings=tuple(f.message for f in findings if f.kind == WARN),
        power=power_notes(baseline, path=names[0], epochs=min(epochs), effect=effect, alpha=alpha,
                          scorers={s for s, (test, _data) in plans.items() if test == BUILDS}))


def item_changes(baseline: dict[str, Any], candidate: dict[str, Any], *, top: int = 10,
                 scorers: Collection[str] | None = None) -> tuple[list[ItemChange], dict[str, tuple[int, int]]]:
    """The content-matched items whose score changed most, and per scorer (matched items, items
    in the baseline). Matched by content, never by id: after a regeneration an id names other content."""
    briefs = sorted(set(baseline["briefs"]) & set(candidate["briefs"]))
    names = sorted(set(baseline["scorers"]) & set(candidate["scorers"]))
    changes, coverage = [], {}
    for scorer in names if scorers is None else [s for s in names if s in scorers]:
        pairs, _complete = _content_pairs(baseline, candidate, scorer, briefs)
        coverage[scorer] = (len(pairs), sum(len(r["items"]) for _b, r in scorer_results(baseline, scorer, briefs)))
        for brief, b, a in pairs:
            if b.get("failure") is None and a.get("failure") is None and a["score"] != b["score"]:
                changes.append(ItemChange(scorer, brief, str(b["item"]), str(a["item"]), float(b["score"]),
                                          float(a["score"]), str(b["reason"]), str(a["reason"])))
    changes.sort(key=lambda c: (-abs(c.candidate_score - c.baseline_score), c.scorer, c.brief, c.baseline_item))
    return changes[:top], coverage

def _p(value: float) -> str:
    return f"{value:.2g}" if value < 0.01 else f"{value:.3f}"


def _cells(r: ScorerComparison) -> tuple[str, ...]:
    return (fixed(r.baseline), fixed(r.candidate), fixed(r.difference, signed=True), _interval(r),
            _tested_p(r.p, r), _tested_p(r.p_adjusted, r), fixed(r.mde))


def _tested_p(value: float, r: ScorerComparison) -> str:
    """n/a for a scorer not tested: its p-values are placeholders."""
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
    lines += [f"allowed: {why}" for why in comparison.allowed.values()]
    if comparison.held_worse:
        lines.append(f"not gating: {comparison.held_worse.removeprefix('; ')}")
    lines += [f"warning: {why}" for why in comparison.warnings] + [f"power: {why}" for why in comparison.power]
    lines += [f"briefs left out ({side}): {', '.join(briefs)}" for side, briefs in comparison.missing.items()]
    for brief, paths_ in comparison.unchanged.items():
        lines.append(f"unchanged in both runs (same prompt, references, schema and model), {brief}: "
                     f"{len(paths_)} artefacts: {', '.join(paths_[:6])}{', ...' if len(paths_) > 6 else ''}")
    return lines


def text(comparison: Comparison, paths: tuple[str, str] = ("baseline", "candidate"),
         provenance: Sequence[str] = ()) -> str:
    """The table with its header and notes; ``provenance`` (``_report.provenance_notes``) goes
    under the two runs' names."""
    widths = (8, 9, 7, 18, 7, 7, 6)
    header = (f"{'scorer':20} {'test':6} " + " ".join(f"{name:>{width}}" for name, width in zip(
        ("baseline", "candidate", "diff", "95% interval", "p", "p(Holm)", "MDE"), widths, strict=True)) + "  verdict")
    lines = [f"baseline:  {paths[0]} ({comparison.baseline_label}, {comparison.epochs[0]} epochs)",
             f"candidate: {paths[1]} ({comparison.candidate_label}, {comparison.epochs[1]} epochs)",
             *provenance, method(comparison), "", header]
    for r in comparison.scorers:
        lines.append(f"{r.scorer:20} {_test(r):6} "
                     + " ".join(f"{cell:>{width}}" for cell, width in zip(_cells(r), widths, strict=True))
                     + f"  {r.verdict}"
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
    """The comparison as Markdown: provenance, the table, the notes, a bar chart of both means,
    and (when asked) the item diff with both judges' reasons."""
    results = comparison.scorers
    charted = [r for r in results if r.baseline is not None or r.candidate is not None]  # no bar for no mean
    names = [r.scorer for r in charted]
    lines = [f"# Eval comparison: {comparison.baseline_label} vs {comparison.candidate_label}", "",
             *[f"- {line}" for line in provenance], *([""] if provenance else []), method(comparison), "",
             "| scorer | test | baseline | candidate | difference | 95% interval | p | p (Holm) | MDE | verdict "
             "| judge |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append("| " + " | ".join((r.scorer, _test(r), *_cells(r), f"**{r.verdict}**", judge_cell(r) or "n/a"))
                     + " |")
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


Run = str | os.PathLike[str] | Mapping[str, Any]
"""A run to compare: the path of its report, or the report ``read_run`` returned."""


def read_run(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The eval report at ``path`` (``pytest evals/`` writes one), read bounded and checked against
    the report's shape; a file that is not one raises ``stay.UsageError`` in one line."""
    return read_report(path)


def _loaded(run: Run, name: str) -> tuple[dict[str, Any], str]:
    if isinstance(run, Mapping):
        return dict(run), name
    return read_run(run), os.fspath(run)


def compare_runs(baseline: Run, candidate: Run, *, alpha: float = ALPHA, allow: Collection[str] = (),
                 max_failed: float = MAX_FAILED, effect: float = EFFECT, permutations: int | None = None,
                 seed: int = 0, calibration: Run | None = None) -> Comparison:
    """Compare a candidate eval run with a baseline, per scorer, as ``stay evals compare`` does;
    ``comparison.gate`` says whether a regression fires the gate (``regressions`` names the scorers).

    ``baseline`` and ``candidate`` are report paths or reports ``read_run`` returned; ``allow``
    names differences to accept (as ``--allow``); the fractions are the command's options. Raises
    ``stay.UsageError`` (``RunsNotComparable``) or ``InvalidRun`` rather than answer what the runs
    cannot. ``calibration``: a path or a calibration report (default: ``calibration.json`` beside
    a candidate given by path); a model-judged scorer gates only on a kappa of at least 0.7."""
    if not 0 < alpha < 1 or not 0 <= max_failed < 1 or not 0 < effect <= 1:
        raise UsageError(f"compare_runs(alpha={alpha!r}, max_failed={max_failed!r}, effect={effect!r}): alpha "
                         "must be between 0 and 1, max_failed at least 0 and below 1, and effect above 0 and "
                         "at most 1")
    (base, base_name), (cand, cand_name) = _loaded(baseline, "baseline"), _loaded(candidate, "candidate")
    if isinstance(calibration, Mapping):
        calibrated: dict[str, Any] | None = dict(calibration)
    else:
        _path, calibrated = find_calibration(None if calibration is None else os.fspath(calibration),
                                             None if isinstance(candidate, Mapping) else candidate)
    return compare(base, cand, alpha=alpha, allow=allow, max_failed=max_failed, effect=effect,
                   permutations=permutations, seed=seed, names=(base_name, cand_name),
                   standing=standings(base, cand, calibrated))

