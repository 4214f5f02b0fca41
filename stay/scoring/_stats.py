"""The statistics behind ``stay evals compare``: permutation tests stratified by brief (the
build is the unit: its items share its luck) or paired by content, their inverted intervals,
Holm–Bonferroni, and the minimum detectable effect. ``docs/evals.md`` says why each."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from stay.errors import InvalidRun

PERMUTATIONS = 4999  # p resolves to 1/5000, a fiftieth of the smallest Holm threshold five scorers need
LEVEL = 0.95
_EPS = 1e-9
_SCALE = (-1.0, 1.0)  # a difference of [0, 1] means: an interval at an end is as wide as the data allow
_BISECTIONS = 40  # to within 2e-12
_SNAP = 1e-7  # an interval's end this close to 0 or the estimate is rounding
_PRIOR = 0.5
"""Jeffreys' half an item of each outcome before a binomial variance: all items passing gives a small
variance, not zero."""

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Stratum:
    """One brief's build means in each run, its weight, and its items per build (the binomial floor
    of a build mean's variance; 0: no floor)."""

    baseline: tuple[float, ...]
    candidate: tuple[float, ...]
    weight: float
    items: float = 0.0


@dataclass(frozen=True)
class Estimate:
    difference: float  # candidate minus baseline
    low: float
    high: float
    """The interval at ``LEVEL``: every shift neither one-sided test rejects at half its alpha."""
    p: float
    """Two-sided: twice the smaller one-sided p, so the interval excludes 0 exactly when ``p <= 1 - LEVEL``."""
    se: float | None  # the observed variance, floored at the binomial (None: not estimable)
    df: int
    spread: float | None = None
    min_p: float = 0.0
    """The smallest one-sided p this design can give at all: below it no effect is detectable."""
    mde: float | None = None
    p_worse: float = 1.0
    p_better: float = 1.0


@lru_cache(maxsize=256)
def _chosen(n: int, k: int, permutations: int, seed: int, stratum: int) -> tuple[Floats, Floats]:
    """Per permutation, which ``k`` of ``n`` pooled units play the candidate (0/1), and how many are its own."""
    rng = np.random.default_rng([seed, stratum, n, k])
    order = np.argsort(rng.random((permutations, n)), axis=1)[:, :k]
    chosen = np.zeros((permutations, n))
    np.put_along_axis(chosen, order, 1.0, axis=1)
    return chosen, chosen[:, n - k:].sum(axis=1)


@lru_cache(maxsize=64)
def _signs(n: int, permutations: int, seed: int) -> Floats:
    rng = np.random.default_rng([seed, n, 1])
    return rng.choice(np.array([-1.0, 1.0]), size=(permutations, n))


def _p_worse(shift: float, a: Floats, b: Floats, observed: float) -> float:
    """The one-sided p of "the difference is below ``shift``"; as ``b <= 1`` it never grows with the shift."""
    low = a - shift * b <= observed - shift + _EPS
    return float((1 + int(low.sum())) / (1 + a.size))


def _p_better(shift: float, a: Floats, b: Floats, observed: float) -> float:
    high = a - shift * b >= observed - shift - _EPS
    return float((1 + int(high.sum())) / (1 + a.size))


def _end(p_of: Callable[[float], float], alpha: float, end: float, observed: float) -> float:
    """The last shift towards ``end`` that ``p_of`` (monotone) does not reject at ``alpha``. 0 is placed
    on its side before bisecting, so the interval agrees with the test at 0 exactly; an end within
    rounding of 0 or of the estimate is that point."""
    if p_of(end) > alpha:
        return end
    inside, outside = -end, end
    if p_of(0.0) > alpha:
        inside = 0.0
    else:
        outside = 0.0
    for _ in range(_BISECTIONS):
        middle = (inside + outside) / 2
        if p_of(middle) > alpha:
            inside = middle
        else:
            outside = middle
    for point in (0.0, observed):
        if abs(inside - point) < _SNAP and p_of(point) > alpha:
            return point
    return inside


def _detectable(a: Floats, b: Floats, observed: float, se: float | None, seen: float | None, alpha: float,
                power: float) -> float | None:
    """The smallest drop the one-sided test rejects at ``alpha`` with probability ``power``: it solves
    delta = critical(delta) + z(power) * se, the critical value the ``alpha`` quantile of the
    permutation distribution with the drop in the pooled data (``a - (observed + delta) * b``),
    widened where the binomial floor raised ``se`` above ``seen``. None when no drop is detectable."""
    if se is None:
        return None
    z = NormalDist().inv_cdf(power)
    centred = a - observed * b
    if seen is not None and seen > 0:
        centred = centred * max(1.0, se / seen)
    rank = int(alpha * (a.size - 1))  # the alpha quantile's rank (partitioning: the bisection's cost)

    def short(delta: float) -> float:
        if seen is None or seen <= 0:
            return NormalDist().inv_cdf(1.0 - alpha) * se + z * se - delta
        return -float(np.partition(centred - delta * b, rank)[rank]) + z * se - delta

    if short(_SCALE[1]) > 0:
        return None
    low, high = 0.0, _SCALE[1]
    for _ in range(20):  # to within 1e-6: the MDE prints to 0.001
        middle = (low + high) / 2
        low, high = (middle, high) if short(middle) > 0 else (low, middle)
    return high


def _estimate(a: Floats, b: Floats, observed: float, se: tuple[float | None, float | None], df: int, level: float,
              spread: float | None, arrangements: float, detect_alpha: float | None, power: float) -> Estimate:
    half = (1.0 - level) / 2
    observed = float(observed)
    b = np.minimum(b, 1.0)  # 1 exactly for the observed labelling: rounding must not break monotonicity
    min_p = max(1.0 / arrangements, 1 / (1 + a.size))
    mde = None
    if detect_alpha is not None and min_p < detect_alpha:  # else too few units for any effect to reach it
        mde = _detectable(a, b, observed, se[0], se[1], detect_alpha, power)
    worse, better = _p_worse(0.0, a, b, observed), _p_better(0.0, a, b, observed)
    return Estimate(difference=observed,
                    low=_end(lambda shift: _p_better(shift, a, b, observed), half, _SCALE[0], observed),
                    high=_end(lambda shift: _p_worse(shift, a, b, observed), half, _SCALE[1], observed),
                    p=min(1.0, 2 * min(worse, better)), se=se[0], df=df, spread=spread, min_p=min_p, mde=mde,
                    p_worse=worse, p_better=better)


def binomial_variance(passed: float, items: float) -> float:
    """The variance of one [0, 1] item passing ``passed`` of ``items`` (with ``_PRIOR``): exact for a 0/1
    item, an upper bound otherwise (a floor that errs towards a larger MDE)."""
    rate = (passed + _PRIOR) / (items + 2 * _PRIOR)
    return rate * (1.0 - rate)


def stratified_test(strata: Sequence[Stratum], *, permutations: int = PERMUTATIONS, seed: int = 0,
                    level: float = LEVEL, detect_alpha: float | None = None, power: float = 0.8) -> Estimate:
    """Difference of weighted brief means (candidate minus baseline), with a permutation
    test that shuffles run labels among each brief's units only."""
    used = [s for s in strata if s.baseline and s.candidate and s.weight > 0]
    if not used:
        raise InvalidRun("no brief has scored builds in both runs: nothing can be compared")
    total = sum(s.weight for s in used)
    a = np.zeros(permutations)
    b = np.zeros(permutations)
    observed = 0.0
    briefs: list[tuple[float, float, int, float]] = []  # per brief: w^2 (1/n_a + 1/n_c), sum of squares, df, floor
    differences = []
    for index, stratum in enumerate(used):
        w = stratum.weight / total
        base, cand = np.asarray(stratum.baseline, float), np.asarray(stratum.candidate, float)
        n_a, n_c = base.size, cand.size
        pooled = np.concatenate([base, cand])
        chosen, moved = _chosen(pooled.size, n_c, permutations, seed, index)
        as_candidate = chosen @ pooled
        a += w * (as_candidate / n_c - (pooled.sum() - as_candidate) / n_a)
        b += w * (moved / n_c - (n_c - moved) / n_a)
        observed += w * (cand.mean() - base.mean())
        differences.append((w, float(cand.mean() - base.mean())))
        squares = float(((base - base.mean()) ** 2).sum() + ((cand - cand.mean()) ** 2).sum())
        # a build mean of n 0/1 items varies at least binomially, however alike the observed builds
        floor = binomial_variance(float(pooled.mean()) * stratum.items * pooled.size,
                                  stratum.items * pooled.size) / stratum.items if stratum.items > 0 else 0.0
        briefs.append((w * w * (1 / n_a + 1 / n_c), squares, n_a + n_c - 2, floor))
    se, seen, df, spread = _standard_error(briefs, differences)
    arrangements = math.prod(math.comb(len(s.baseline) + len(s.candidate), len(s.candidate)) for s in used)
    return _estimate(a, b, observed, (se, seen), df, level, spread, float(arrangements), detect_alpha, power)


def _standard_error(briefs: list[tuple[float, float, int, float]], differences: list[tuple[float, float]]
                    ) -> tuple[float | None, float | None, int, float | None]:
    """(standard error, the same from the observed variance alone, degrees of freedom, pooled sd).
    Each brief's own variance (Welch–Satterthwaite), pooled for one build per run, floored at the
    binomial; with one build per brief everywhere, the spread of the briefs' differences."""
    pooled_df = sum(df for _f, _ss, df, _floor in briefs)
    if pooled_df > 0:
        pooled = sum(ss for _f, ss, _df, _floor in briefs) / pooled_df
        parts = [(f, ss / df if df > 0 else pooled, df if df > 0 else pooled_df, floor)
                 for f, ss, df, floor in briefs]
        seen = sum(f * v for f, v, _df, _floor in parts)
        variance = sum(f * max(v, floor) for f, v, _df, floor in parts)
        denominator = sum((f * max(v, floor)) ** 2 / df for f, v, df, floor in parts)
        df = max(1, math.floor(variance * variance / denominator + 1e-9)) if denominator > 0 else pooled_df
        return math.sqrt(variance), math.sqrt(seen), df, math.sqrt(pooled)
    if len(differences) >= 2:
        mean = sum(d for _w, d in differences) / len(differences)
        spread = math.sqrt(sum((d - mean) ** 2 for _w, d in differences) / (len(differences) - 1))
        seen = spread * math.sqrt(sum(w * w for w, _d in differences))
        floored = sum(max(spread * spread * w * w, f * floor)
                      for (w, _d), (f, _ss, _df, floor) in zip(differences, briefs, strict=True))
        return math.sqrt(floored), seen, len(differences) - 1, spread
    return None, None, 0, None


def paired_test(differences: Sequence[float], *, permutations: int = PERMUTATIONS, seed: int = 0,
                level: float = LEVEL, detect_alpha: float | None = None, power: float = 0.8) -> Estimate:
    """Mean of paired differences, with a sign-flip permutation test (items judged on
    byte-identical content in both runs, matched by content hash)."""
    if not differences:
        raise ValueError("no pairs")
    d = np.asarray(differences, float)
    signs = _signs(d.size, permutations, seed)
    spread = float(d.std(ddof=1)) if d.size > 1 else None
    seen = spread / math.sqrt(d.size) if spread is not None else None
    se = None
    if spread is not None:
        # the floor: a multinomial of up, down and unchanged items, each with half an item of prior
        up = (float(np.clip(d, 0, None).sum()) + _PRIOR) / (d.size + 2 * _PRIOR)
        down = (float(np.clip(-d, 0, None).sum()) + _PRIOR) / (d.size + 2 * _PRIOR)
        se = math.sqrt(max(spread * spread, up + down - (up - down) ** 2) / d.size)
    return _estimate(signs @ d / d.size, signs.mean(axis=1), float(d.mean()), (se, seen), d.size - 1, level,
                     spread, 2.0**d.size, detect_alpha, power)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given."""
    m = len(p_values)
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def scorer_results(report: dict[str, Any], scorer: str,
                   briefs: Collection[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    for brief in briefs:
        for index, build in enumerate(report["briefs"][brief]["builds"]):
            result = build["scorers"].get(scorer)
            if result is not None:
                yield brief, {"epoch": build.get("epoch", 0), "build": index, **result}


def scored(result: dict[str, Any]) -> list[float]:
    return [float(i["score"]) for i in result["items"] if i.get("failure") is None and i.get("score") is not None]


def build_strata(baseline: dict[str, Any], candidate: dict[str, Any], scorer: str, briefs: list[str]) -> list[Stratum]:
    strata = []
    for brief in briefs:
        runs = []
        counts = []
        for report in (baseline, candidate):
            means = []
            for _b, result in scorer_results(report, scorer, [brief]):
                values = scored(result)
                if values:
                    means.append(sum(values) / len(values))
                    counts.append(len(values))
            runs.append(tuple(means))
        if runs[0] and runs[1]:
            per_build = sum(counts) / len(counts)
            strata.append(Stratum(runs[0], runs[1], weight=per_build, items=per_build))
    return strata
