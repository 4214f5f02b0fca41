"""The statistics behind compare: permutation p-values against exact enumeration, the
interval as the inverted test, Holm, the t quantile and the minimum detectable effect."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.scoring._stats import (
    Stratum,
    holm,
    paired_test,
    stratified_test,
)

scores = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])


def exact_stratified_p(strata: list[Stratum]) -> tuple[float, float]:
    """Every relabelling within each brief, enumerated: the slow path the test samples.
    The one-sided p-values (worse, better)."""
    total = sum(s.weight for s in strata)

    def statistic(groups: list[tuple[list[float], list[float]]]) -> float:
        return sum(s.weight / total * (sum(c) / len(c) - sum(b) / len(b)) for s, (b, c) in zip(strata, groups, strict=True))

    observed = statistic([(list(s.baseline), list(s.candidate)) for s in strata])
    options = []
    for s in strata:
        pooled = list(s.baseline) + list(s.candidate)
        splits = []
        for chosen in itertools.combinations(range(len(pooled)), len(s.candidate)):
            splits.append(([pooled[i] for i in range(len(pooled)) if i not in chosen], [pooled[i] for i in chosen]))
        options.append(splits)
    values = [statistic(list(combo)) for combo in itertools.product(*options)]
    return (sum(v <= observed + 1e-9 for v in values) / len(values),
            sum(v >= observed - 1e-9 for v in values) / len(values))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.lists(scores, min_size=1, max_size=3), st.lists(scores, min_size=1, max_size=3),
                          st.integers(1, 20)), min_size=1, max_size=3))
def test_the_stratified_p_value_matches_exact_enumeration(data: list[tuple[list[float], list[float], int]]) -> None:
    strata = [Stratum(tuple(b), tuple(c), float(w)) for b, c, w in data]
    worse, better = exact_stratified_p(strata)
    sampled = stratified_test(strata, permutations=4999)
    # Monte Carlo error of 4999 draws is under 0.008
    assert (sampled.p_worse, sampled.p_better) == pytest.approx((worse, better), abs=0.03)
    assert sampled.p == min(1.0, 2 * min(sampled.p_worse, sampled.p_better))  # two-sided: twice the smaller


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0]), min_size=1, max_size=8))
def test_the_paired_p_value_matches_exact_sign_flips(differences: list[float]) -> None:
    observed = sum(differences) / len(differences)
    flips = [sum(s * d for s, d in zip(signs, differences, strict=True)) / len(differences)
             for signs in itertools.product((-1, 1), repeat=len(differences))]
    worse = sum(v <= observed + 1e-9 for v in flips) / len(flips)
    better = sum(v >= observed - 1e-9 for v in flips) / len(flips)
    sampled = paired_test(differences, permutations=4999)
    assert (sampled.p_worse, sampled.p_better) == pytest.approx((worse, better), abs=0.03)


def test_the_interval_is_the_inverted_test() -> None:
    strata = [Stratum((0.9, 0.8, 0.85, 0.95), (0.6, 0.7, 0.65, 0.75), 10.0),
              Stratum((0.7, 0.75, 0.8, 0.7), (0.55, 0.5, 0.6, 0.45), 6.0)]
    estimate = stratified_test(strata)
    assert estimate.low < estimate.difference < estimate.high < 0
    for bound, inward in ((estimate.low, +0.002), (estimate.high, -0.002)):
        # shifting the candidate by a bound puts it on the edge of rejection; just inside, kept
        inside = [Stratum(s.baseline, tuple(c - bound - inward for c in s.candidate), s.weight) for s in strata]
        outside = [Stratum(s.baseline, tuple(c - bound + inward for c in s.candidate), s.weight) for s in strata]
        assert stratified_test(inside).p > 0.05 >= stratified_test(outside).p


def test_a_shift_moves_the_estimate_and_its_interval_by_the_same_amount() -> None:
    strata = [Stratum((0.5, 0.6, 0.4), (0.55, 0.45, 0.6), 8.0), Stratum((0.3, 0.5, 0.4), (0.35, 0.5, 0.3), 4.0)]
    shifted = [Stratum(s.baseline, tuple(c + 0.1 for c in s.candidate), s.weight) for s in strata]
    a, b = stratified_test(strata), stratified_test(shifted)
    assert b.difference == pytest.approx(a.difference + 0.1)
    assert (b.low, b.high) == pytest.approx((a.low + 0.1, a.high + 0.1), abs=1e-5)


def test_no_difference_and_no_spread_is_a_point_interval_at_p_one() -> None:
    estimate = stratified_test([Stratum((1.0, 1.0), (1.0, 1.0), 12.0)] * 3)
    assert (estimate.difference, estimate.low, estimate.high, estimate.p) == (0.0, 0.0, 0.0, 1.0)
    paired = paired_test([0.0] * 20)
    assert (paired.low, paired.high, paired.p) == (0.0, 0.0, 1.0)


def test_the_same_inputs_give_the_same_answer() -> None:
    strata = [Stratum((0.2, 0.9), (0.4, 0.1), 3.0), Stratum((0.5, 0.5), (0.9, 0.7), 5.0)]
    assert stratified_test(strata) == stratified_test(strata)
    assert stratified_test(strata, seed=1).difference == stratified_test(strata).difference


def test_the_standard_error_pools_the_spread_within_briefs() -> None:
    strata = [Stratum((0.0, 1.0), (0.0, 1.0), 1.0), Stratum((0.0, 1.0), (0.0, 1.0), 1.0)]
    estimate = stratified_test(strata)
    # within-group sd of (0, 1) is sqrt(0.5); each brief's difference has variance 0.5 * (1/2 + 1/2)
    assert estimate.spread == pytest.approx(math.sqrt(0.5)) and estimate.df == 4
    assert estimate.se == pytest.approx(math.sqrt(0.5 * 2 * 0.25 * 1.0))


def test_one_build_per_brief_falls_back_on_the_spread_of_brief_differences() -> None:
    strata = [Stratum((0.5,), (0.6,), 1.0), Stratum((0.5,), (0.4,), 1.0), Stratum((0.5,), (0.5,), 1.0)]
    estimate = stratified_test(strata)
    assert estimate.df == 2 and estimate.spread == pytest.approx(0.1)


@pytest.mark.parametrize("p_values, adjusted", [
    ([0.01, 0.04, 0.03, 0.5], [0.04, 0.09, 0.09, 0.5]),
    ([0.001, 0.001], [0.002, 0.002]),
    ([0.9], [0.9]),
    ([0.3, 0.2, 0.6], [0.6, 0.6, 0.6]),
])
def test_holm_bonferroni(p_values: list[float], adjusted: list[float]) -> None:
    assert holm(p_values) == pytest.approx(adjusted)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=8))
def test_holm_never_lowers_a_p_value_and_keeps_their_order(p_values: list[float]) -> None:
    adjusted = holm(p_values)
    assert all(a >= p - 1e-12 and a <= 1.0 for a, p in zip(adjusted, p_values, strict=True))
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    assert all(adjusted[i] <= adjusted[j] + 1e-12 for i, j in itertools.pairwise(order))


def test_the_minimum_detectable_effect_is_what_the_test_detects_80_percent_of_the_time() -> None:
    import numpy as np

    rng = np.random.default_rng(7)

    def draw(shift: float) -> list[Stratum]:
        return [Stratum(tuple(rng.normal(0.7, 0.1, 6)), tuple(rng.normal(0.7 - shift, 0.1, 6)), float(n))
                for n in (4, 8, 12, 26)]

    found = [stratified_test(draw(0.0), detect_alpha=0.01).mde for _ in range(20)]
    assert all(m is not None and 0.05 < m < 0.2 for m in found)
    mde = sorted(found)[10]  # type: ignore[type-var]
    # the gate's test: one-sided, "worse"
    detected = sum(stratified_test(draw(mde), permutations=999).p_worse < 0.01 for _ in range(200)) / 200  # type: ignore[arg-type]
    assert 0.7 < detected < 0.9  # a claim, checked: at a drop of the MDE, about 80% power
    assert stratified_test(draw(0.0), detect_alpha=None).mde is None


def test_too_few_units_for_the_gate_is_no_detectable_effect_at_all() -> None:
    # one-sided: only the observed arrangement is as low as can be
    two_pairs = paired_test([0.0, 0.0], detect_alpha=0.01)
    assert two_pairs.min_p == 1 / 4 and two_pairs.mde is None
    one_brief = stratified_test([Stratum((0.2, 0.9), (0.4, 0.1), 3.0)], detect_alpha=0.01)
    assert one_brief.min_p == pytest.approx(1 / 6) and one_brief.mde is None
    enough = paired_test([0.0, 1.0, -1.0, 0.0, 1.0, 0.0, 0.0, -1.0, 0.0, 0.0], detect_alpha=0.01)
    assert enough.min_p == pytest.approx(1 / 1024) and enough.mde is not None
