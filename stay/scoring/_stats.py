"""The statistics behind ``stay evals compare``: permutation tests with intervals,
Holm–Bonferroni, and the minimum detectable effect. ``docs/evals.md`` says why each.

Two tests, one machinery. After a prompt change the unit is the build (a brief built
once, in one epoch): items of one build share its luck, so they are not independent.
``stratified_test`` compares the builds' means with a permutation test stratified by
brief: under "the change made no difference", the builds of one brief are exchangeable
between the two runs, so their run labels are shuffled within each brief, never across
(a hard brief stays hard in both runs, and its difficulty cancels). When both runs
judged byte-identical content (rescoring with a changed judge or scorer), the unit is
the item, and ``paired_test`` flips the signs of the content-matched differences.

Both statistics are linear in a shift ``delta`` of the candidate's values, so one set
of permutations gives the p-value at every shift, and the 95% interval is the set of
shifts the test does not reject (the test inverted): the interval and the p-value can
never disagree. Permutations are drawn from a fixed seed: same reports, same answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from stay.errors import InvalidRun

PERMUTATIONS = 4999
"""Random permutations per test: p-values resolve to 1/5000, a twentieth of the
smallest Holm threshold five scorers need (0.01)."""
LEVEL = 0.95
_EPS = 1e-9
_SCALE = (-1.0, 1.0)
"""Scores are in [0, 1], so a difference of means is in [-1, 1]; an interval that
reaches an end of this scale is as wide as the data allow."""

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Stratum:
    """One brief's units (build means) in each run, and its weight in the difference."""

    baseline: tuple[float, ...]
    candidate: tuple[float, ...]
    weight: float


@dataclass(frozen=True)
class Estimate:
    difference: float
    """Candidate minus baseline (weighted over briefs, or the mean paired difference)."""
    low: float
    high: float
    """The interval at ``LEVEL``: every shift the test does not reject."""
    p: float
    """Two-sided permutation p-value of "no difference", (1 + as extreme) / (1 + permutations)."""
    se: float | None
    """Standard error of ``difference`` from the observed variance (None: cannot be estimated)."""
    df: int
    spread: float | None = None
    """The standard deviation behind ``se``: of a build's mean around its brief's (builds), or
    of a paired difference (items)."""
    min_p: float = 0.0
    """The smallest p-value this design can give at all (e.g. 0.5 for two pairs): below a
    threshold no effect, however large, is detectable."""
    mde: float | None = None
    """The minimum detectable effect, when asked for (``detect_alpha``): see ``_detectable``."""


@lru_cache(maxsize=256)
def _chosen(n: int, k: int, permutations: int, seed: int, stratum: int) -> tuple[Floats, Floats]:
    """For each permutation, which ``k`` of ``n`` pooled units (baseline first) play the
    candidate, as a 0/1 matrix, and how many of them are the candidate's own."""
    rng = np.random.default_rng([seed, stratum, n, k])
    order = np.argsort(rng.random((permutations, n)), axis=1)[:, :k]
    chosen = np.zeros((permutations, n))
    np.put_along_axis(chosen, order, 1.0, axis=1)
    return chosen, chosen[:, n - k:].sum(axis=1)


@lru_cache(maxsize=64)
def _signs(n: int, permutations: int, seed: int) -> Floats:
    rng = np.random.default_rng([seed, n, 1])
    return rng.choice(np.array([-1.0, 1.0]), size=(permutations, n))


def _p_at(shift: float, a: Floats, b: Floats, observed: float) -> float:
    """The p-value of "the difference is ``shift``" (statistic a - shift * b, observed - shift)."""
    extreme = np.abs(a - shift * b) >= abs(observed - shift) - _EPS
    return float((1 + int(extreme.sum())) / (1 + a.size))


def _bound(a: Floats, b: Floats, observed: float, alpha: float, end: float) -> float:
    """The interval's end towards ``end``: where the p-value first drops to ``alpha``."""
    if _p_at(end, a, b, observed) > alpha:
        return end
    inside, outside = observed, end
    for _ in range(24):  # to within 2e-7 of the scale
        middle = (inside + outside) / 2
        if _p_at(middle, a, b, observed) > alpha:
            inside = middle
        else:
            outside = middle
    return observed if abs(inside - observed) < 1e-6 else inside  # no spread: the interval is the point


def _detectable(a: Floats, b: Floats, se: float | None, alpha: float, power: float) -> float | None:
    """The smallest shift of the candidate's units the test rejects at ``alpha`` with
    probability ``power``, for the observed variance and N.

    A shift ``delta`` moves every permutation's statistic to a + delta * b, so the test's
    critical value at that shift is the (1 - alpha) quantile of |a + delta * b| (it grows
    with the shift: the effect is in the pooled data too), and the estimate is about normal
    around ``delta`` with standard error ``se``. The answer solves
    delta = critical(delta) + z(power) * se. None when no shift on the scale is detectable."""
    if se is None:
        return None
    z = NormalDist().inv_cdf(power)

    def short(delta: float) -> float:
        return float(np.quantile(np.abs(a + delta * b), 1.0 - alpha)) + z * se - delta

    if short(_SCALE[1]) > 0:
        return None
    low, high = 0.0, _SCALE[1]
    for _ in range(30):
        middle = (low + high) / 2
        low, high = (middle, high) if short(middle) > 0 else (low, middle)
    return high


def _estimate(a: Floats, b: Floats, observed: float, se: float | None, df: int, level: float,
              spread: float | None, arrangements: float, mirrored: bool, detect_alpha: float | None,
              power: float) -> Estimate:
    alpha = 1.0 - level
    observed = float(observed)
    min_p = max((2.0 if mirrored else 1.0) / arrangements, 1 / (1 + a.size))
    mde = None
    if detect_alpha is not None and min_p < detect_alpha:  # else too few units for any effect to reach it
        mde = _detectable(a, b, se, detect_alpha, power)
    return Estimate(difference=observed, low=float(_bound(a, b, observed, alpha, _SCALE[0])),
                    high=float(_bound(a, b, observed, alpha, _SCALE[1])), p=_p_at(0.0, a, b, observed), se=se,
                    df=df, spread=spread, min_p=min_p, mde=mde)


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
    briefs: list[tuple[float, float, int]] = []  # per brief: w^2 (1/n_a + 1/n_c), sum of squares, df
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
        briefs.append((w * w * (1 / n_a + 1 / n_c), squares, n_a + n_c - 2))
    se, df, spread = _standard_error(briefs, differences)
    arrangements = math.prod(math.comb(len(s.baseline) + len(s.candidate), len(s.candidate)) for s in used)
    mirrored = all(len(s.baseline) == len(s.candidate) for s in used)
    return _estimate(a, b, observed, se, df, level, spread, float(arrangements), mirrored, detect_alpha, power)


def _standard_error(briefs: list[tuple[float, float, int]],
                    differences: list[tuple[float, float]]) -> tuple[float | None, int, float | None]:
    """(standard error, degrees of freedom, pooled sd of a build around its brief's mean).

    Each brief's variance is its own (builds of a short brief vary more than those of a
    long one), with Welch–Satterthwaite degrees of freedom; a brief with one build per
    run borrows the pooled variance. With one build per brief and run everywhere, the
    spread of the briefs' differences stands in."""
    pooled_df = sum(df for _f, _ss, df in briefs)
    if pooled_df > 0:
        pooled = sum(ss for _f, ss, _df in briefs) / pooled_df
        parts = [(f * (ss / df if df > 0 else pooled), df if df > 0 else pooled_df) for f, ss, df in briefs]
        variance = sum(v for v, _df in parts)
        denominator = sum(v * v / df for v, df in parts)
        df = max(1, math.floor(variance * variance / denominator + 1e-9)) if denominator > 0 else pooled_df
        return math.sqrt(variance), df, math.sqrt(pooled)
    if len(differences) >= 2:
        mean = sum(d for _w, d in differences) / len(differences)
        spread = math.sqrt(sum((d - mean) ** 2 for _w, d in differences) / (len(differences) - 1))
        return spread * math.sqrt(sum(w * w for w, _d in differences)), len(differences) - 1, spread
    return None, 0, None


def paired_test(differences: Sequence[float], *, permutations: int = PERMUTATIONS, seed: int = 0,
                level: float = LEVEL, detect_alpha: float | None = None, power: float = 0.8) -> Estimate:
    """Mean of paired differences, with a sign-flip permutation test (items judged on
    byte-identical content in both runs, matched by content hash)."""
    if not differences:
        raise ValueError("no pairs")
    d = np.asarray(differences, float)
    signs = _signs(d.size, permutations, seed)
    spread = float(d.std(ddof=1)) if d.size > 1 else None
    se = spread / math.sqrt(d.size) if spread is not None else None
    return _estimate(signs @ d / d.size, signs.mean(axis=1), float(d.mean()), se, d.size - 1, level, spread,
                     2.0**d.size, True, detect_alpha, power)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given: reject where adjusted < alpha
    and the chance of any false rejection among them stays at most alpha."""
    m = len(p_values)
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
