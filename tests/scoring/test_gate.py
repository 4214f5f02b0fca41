"""The gate's statistics on the data it meets: a one-sided Holm gate on "worse", an
interval that agrees with its p-value on lumpy 0/1 data, and a standard error that zero
observed variance cannot shrink to nothing."""

from __future__ import annotations

import numpy as np
import pytest

from stay.scoring._compare import BETTER, SAME, WORSE, compare
from stay.scoring._stats import Stratum, paired_test, stratified_test
from tests.scoring.reports import make_report

LUMPY_ITEMS = (1, 2, 2, 5, 1, 3)
"""Items per build of a lumpy scorer (rubric_specificity's counts over the six briefs):
a build's mean is one of a handful of values, and many builds tie."""


def lumpy_strata(rng: np.random.Generator, epochs: int, drop: float) -> list[Stratum]:
    strata = []
    for items in LUMPY_ITEMS:
        rate = float(rng.uniform(0.5, 0.95))
        runs = [tuple(float(v) for v in rng.binomial(items, max(0.0, r), epochs) / items)
                for r in (rate, rate - drop)]
        strata.append(Stratum(runs[0], runs[1], weight=float(items), items=float(items)))
    return strata


def test_the_interval_excludes_0_exactly_when_p_is_at_most_005_on_lumpy_data() -> None:
    rng = np.random.default_rng(22)
    disagree, excluded = [], 0
    for row in range(400):
        epochs, drop = (2, 3, 4, 6)[row % 4], (0.0, 0.1, 0.2, 0.3)[row // 4 % 4]
        estimate = stratified_test(lumpy_strata(rng, epochs, drop), permutations=999)
        outside = estimate.low > 0 or estimate.high < 0
        excluded += outside
        if outside != (estimate.p <= 0.05):
            disagree.append((row, estimate))
    for row in range(200):  # lumpy paired differences, mostly ties
        d = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0, -0.5], size=int(rng.integers(4, 30)))
        estimate = paired_test(list(d), permutations=999)
        if (estimate.low > 0 or estimate.high < 0) != (estimate.p <= 0.05):
            disagree.append((row, estimate))
    assert 40 < excluded < 360  # both kinds of row were searched
    assert disagree == []


def noisy_runs(seed: int, drop: float, scorers: str = "abcde") -> tuple[dict[str, object], dict[str, object]]:
    """Two runs of six briefs x six epochs, 12 items a build, every build with its own luck;
    the candidate's scorer ``a`` drops by ``drop``."""
    rng = np.random.default_rng(seed)
    found = []
    for side, lost in ((0, 0.0), (1, drop)):
        builds = {}
        for b in range(6):
            rate = 0.6 + 0.05 * b
            builds[f"brief-{b}"] = [{s: [float(v) for v in rng.random(12) < rate - (lost if s == "a" else 0.0)
                                         + rng.normal(0, 0.05)] for s in scorers} for _e in range(6)]
        found.append(make_report(builds, label=f"run{side}"))  # type: ignore[arg-type]
    return found[0], found[1]


def test_the_gate_is_one_sided_a_regression_two_sided_holm_would_miss_is_worse() -> None:
    comparison = compare(*noisy_runs(2, 0.12))
    a = comparison.scorers[0]
    m = len(comparison.scorers)
    # the one-sided p clears the strictest Holm step; the two-sided p (twice it) would not
    assert a.p_worse * m < comparison.alpha <= a.p * m and a.p == pytest.approx(2 * a.p_worse)
    assert a.p_adjusted == pytest.approx(m * a.p_worse) and a.verdict == WORSE and comparison.exit_code == 1


def test_better_is_its_own_holm_family_and_never_gates() -> None:
    baseline, candidate = noisy_runs(3, 0.3)
    comparison = compare(candidate, baseline)  # the other way round: a is better by 0.3
    a = comparison.scorers[0]
    assert a.verdict == BETTER and a.p_better * len(comparison.scorers) < comparison.alpha
    assert a.p_worse > 0.5 and a.p_adjusted > 0.5 and comparison.exit_code == 0


def test_no_observed_variance_still_has_a_binomial_standard_error_and_mde() -> None:
    perfect = {f"brief-{b}": [{"a": [1.0] * 12} for _e in range(6)] for b in range(6)}
    builds = compare(make_report(perfect, label="b"), make_report(perfect, label="c")).scorers[0]
    # every build of every brief at 1.0: no spread is seen, yet 72 items a run do not make a mean certain
    assert builds.spread == 0.0 and builds.mde is not None and builds.mde > 0.005
    assert (builds.low, builds.high, builds.verdict) == (0.0, 0.0, SAME)
    rescored = compare(make_report(perfect, content="x"), make_report(perfect, content="x", label="c")).scorers[0]
    assert rescored.test == "items" and rescored.spread == 0.0 and rescored.mde is not None and rescored.mde > 0.001
    floored = stratified_test([Stratum((1.0,) * 6, (1.0,) * 6, 12.0, items=12.0)] * 6)
    unfloored = stratified_test([Stratum((1.0,) * 6, (1.0,) * 6, 12.0)] * 6)
    assert floored.se is not None and floored.se > 0 and unfloored.se == 0.0
