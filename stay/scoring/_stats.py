"""The statistics behind ``stay evals compare``: permutation tests stratified by brief (the
build is the unit: its items share its luck) or paired by content, their inverted intervals,
Holm–Bonferroni, and the minimum detectable effect; and ``stay evals plan``, the epochs that
test needs. ``docs/evals.md`` says why each."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from stay._display import fixed, plural
from stay.errors import InvalidRun, UsageError
from stay.scoring._defaults import ALPHA, DEFAULT_EPOCHS, EFFECT, POWER
from stay.scoring._report import not_judged, read_report

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


def _p(shift: float, a: Floats, b: Floats, observed: float, worse: bool) -> float:
    """The one-sided p of "the difference is below ``shift``" (``worse``) or above it; as ``b <= 1``
    it is monotone in the shift."""
    moved = a - shift * b
    extreme = moved <= observed - shift + _EPS if worse else moved >= observed - shift - _EPS
    return float((1 + int(extreme.sum())) / (1 + a.size))


def _end(p_of: Callable[[float], float], alpha: float, end: float, observed: float) -> float:
    """The last shift towards ``end`` that ``p_of`` (monotone) does not reject at ``alpha``. 0 is placed
    on its side before bisecting, so the interval agrees with the test at 0 exactly; an end within
    rounding of 0 or of the estimate is that point."""
    if p_of(end) > alpha:
        return end
    inside, outside = (0.0, end) if p_of(0.0) > alpha else (-end, 0.0)
    for _ in range(_BISECTIONS):
        middle = (inside + outside) / 2
        inside, outside = (middle, outside) if p_of(middle) > alpha else (inside, middle)
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
    worse, better = _p(0.0, a, b, observed, True), _p(0.0, a, b, observed, False)
    return Estimate(difference=observed,
                    low=_end(lambda shift: _p(shift, a, b, observed, False), half, _SCALE[0], observed),
                    high=_end(lambda shift: _p(shift, a, b, observed, True), half, _SCALE[1], observed),
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


def build_means(report: dict[str, Any], scorer: str, brief: str) -> list[tuple[float, int]]:
    """(mean, items scored) of each build of ``brief`` whose ``scorer`` scored an item."""
    means = []
    for _brief, result in scorer_results(report, scorer, [brief]):
        values = scored(result)
        if values:
            means.append((sum(values) / len(values), len(values)))
    return means


def build_strata(baseline: dict[str, Any], candidate: dict[str, Any], scorer: str, briefs: list[str]) -> list[Stratum]:
    strata = []
    for brief in briefs:
        runs = [build_means(report, scorer, brief) for report in (baseline, candidate)]
        if runs[0] and runs[1]:
            counts = [n for run in runs for _mean, n in run]
            per_build = sum(counts) / len(counts)
            before, after = (tuple(mean for mean, _n in run) for run in runs)
            strata.append(Stratum(before, after, weight=per_build, items=per_build))
    return strata


# ``stay evals plan``: the epochs a comparison needs, per scorer, to see a drop that matters, from a
# baseline's own variance: simulated through the gate's own test up to ``SIMULATED_UP_TO`` epochs, the
# normal approximation beyond (docs/evals.md, "Planning epochs").
LIMIT = 64  # the most epochs searched: past it, more items a build is the cheaper fix
FIRST = 2  # one build per brief cannot show build-to-build variance
SIMULATED_UP_TO = 8
"""At few builds the permutation null is lumpy and the normal formula optimistic (0.71 planned where
0.64 is simulated at 3 epochs of 3 briefs, 0.97 and 0.96 at 7); the simulation's cost grows with N."""
DRAWS = 1000  # simulated comparisons per power: a standard error of at most 0.016
PLAN_PERMUTATIONS = 999  # per simulated test: the gate's 4,999 resolve p finer than a power needs
SIMULATION_SEED = 22
_MOST_ALIKE = 0.999  # the largest intra-build correlation drawn (1: a beta of zero width)

@dataclass(frozen=True)
class BriefNoise:
    """One brief of one scorer in the baseline: its share of the difference (``compare``'s weights),
    mean, items per build, and the variance of a build's mean (None with one build)."""

    weight: float
    mean: float
    items: float
    variance: float | None


@dataclass(frozen=True)
class ScorerPlan:
    scorer: str
    items: float  # items an epoch, summed over the briefs
    mean: float
    drop: float
    brief_sd: float | None
    build_sd: float | None
    needed: int | None  # epochs per brief for the goal; None: not within LIMIT
    power_at_run: float
    power_at_default: float


@dataclass(frozen=True)
class Plan:
    path: str
    label: str
    epochs: int
    default_epochs: int
    briefs: int
    alpha: float
    tested: int
    effect: float
    power: float
    scorers: tuple[ScorerPlan, ...]
    unjudged: tuple[str, ...] = ()

    @property
    def level(self) -> float:
        """Holm's strictest step: what a lone regression must beat."""
        return self.alpha / max(1, self.tested)

    def short(self, epochs: int) -> list[ScorerPlan]:
        """The scorers short of the goal at ``epochs`` (one with a mean of 0 cannot regress)."""
        return [s for s in self.scorers if s.drop > 0 and (s.needed is None or s.needed > epochs)]

    def text(self) -> str:
        lines = [f"plan from {self.path} ({self.label}, {self.epochs} epochs, {self.briefs} briefs): epochs per "
                 f"brief for power {self.power:.2f} against a drop of {self.effect:.0%} of a scorer's baseline mean, "
                 f"one-sided at alpha/{self.tested} = {self.level:.3g}",
                 "", f"{'scorer':20} {'items':>5} {'mean':>6} {'drop':>6} {'brief sd':>8} {'build sd':>8} "
                     f"{'epochs':>7} {f'power at {self.epochs}':>11} {f'power at {self.default_epochs}':>11}"]
        for s in self.scorers:
            needed = "n/a" if s.drop <= 0 else str(s.needed) if s.needed is not None else f">{LIMIT}"
            lines.append(f"{s.scorer:20} {s.items:>5.0f} {fixed(s.mean):>6} {fixed(s.drop):>6} "
                         f"{fixed(s.brief_sd):>8} {fixed(s.build_sd):>8} {needed:>7} {s.power_at_run:>11.2f} "
                         f"{s.power_at_default:>11.2f}")
        if self.unjudged:
            lines.append(f"not judged (offline), so not planned: {', '.join(self.unjudged)}")
        lines += ["", self.verdict()]
        return "\n".join(lines) + "\n"

    def verdict(self) -> str:
        short = self.short(self.default_epochs)
        if not short:
            return f"every scorer reaches power {self.power:.2f} at the default {self.default_epochs} epochs"
        return (f"at the default {self.default_epochs} epochs, {plural(len(short), 'scorer')} cannot reach power "
                f"{self.power:.2f}: " + "; ".join(f"{s.scorer} (power {s.power_at_default:.2f}) {_needs(s)}"
                                                 for s in short))

    def warning(self, epochs: int) -> str | None:
        short = self.short(epochs)
        if not short:
            return None
        return (f"warning: --stay-epochs {epochs} is below what `stay evals plan {self.path}` says for power "
                f"{self.power:.2f} at a {self.effect:.0%} drop: " + "; ".join(f"{s.scorer} {_needs(s)}"
                                                                          for s in short))

    def json(self) -> str:
        return json.dumps({**asdict(self), "level": self.level, "limit": LIMIT}, indent=2, sort_keys=True) + "\n"


def _needs(s: ScorerPlan) -> str:
    if s.needed is None:
        return f"needs more than {LIMIT} epochs (more items a build)"
    return f"needs {s.needed} epochs (--stay-epochs {s.needed})"


def brief_noise(report: dict[str, Any], scorer: str) -> list[BriefNoise]:
    """Per brief, the scorer's build means as ``compare`` sees them (its strata, its weights)."""
    strata = build_strata(report, report, scorer, sorted(report["briefs"]))
    total = sum(s.weight for s in strata)
    found = []
    for s in strata:
        means = s.baseline
        mean = sum(means) / len(means)
        variance = sum((m - mean) ** 2 for m in means) / (len(means) - 1) if len(means) > 1 else None
        # items per build as the strata count them (their weights could be other than item counts)
        found.append(BriefNoise(s.weight / total, mean, s.items or s.weight, variance))
    return found


def _variances(noise: Sequence[BriefNoise], effect: float) -> list[tuple[float, float]]:
    """Per brief, (baseline, candidate) variance of a build's mean: observed (pooled for one build),
    floored at the binomial; the candidate's at the dropped rate."""
    observed = [b.variance for b in noise if b.variance is not None]
    pooled = sum(observed) / len(observed) if observed else 0.0
    found = []
    for b in noise:
        base = max(b.variance if b.variance is not None else pooled, b.mean * (1 - b.mean) / b.items)
        dropped = b.mean * (1 - effect)
        builds = base - b.mean * (1 - b.mean) / b.items  # the builds' own variance, beyond item sampling
        found.append((base, (1 - effect) ** 2 * builds + dropped * (1 - dropped) / b.items))
    return found


def smallest_p(briefs: int, epochs: int) -> float:
    """The smallest one-sided p the stratified test can give with ``epochs`` builds per brief."""
    return max(1 / float(math.comb(2 * epochs, epochs)) ** briefs, 1 / (1 + PERMUTATIONS))


def power_at(noise: Sequence[BriefNoise], epochs: int, effect: float, level: float) -> float:
    """The one-sided test's power at ``level`` against a drop of ``effect`` times the mean."""
    drop = effect * sum(b.weight * b.mean for b in noise)
    if epochs < FIRST or drop <= 0 or smallest_p(len(noise), epochs) >= level:
        return 0.0
    if epochs <= SIMULATED_UP_TO:
        return _simulated(tuple(noise), epochs, effect, level)
    variance = sum(b.weight**2 * (v + w) / epochs for b, (v, w) in zip(noise, _variances(noise, effect), strict=True))
    seen = drop - _step(noise, epochs) / 2  # a tie with the critical value is not a rejection
    if variance <= 0:
        return 1.0 if seen > 0 else 0.0
    return NormalDist().cdf(seen / math.sqrt(variance) - NormalDist().inv_cdf(1 - level))


@lru_cache(maxsize=256)
def _simulated(noise: tuple[BriefNoise, ...], epochs: int, effect: float, level: float) -> float:
    """The share of ``DRAWS`` seeded comparisons the gate's own test says worse at ``level``, build
    means drawn as ``k / n`` of ``n`` 0/1 items (a beta-binomial with the plan's variance): the
    permutation null pools both runs' lumpy builds, the shift included, and counts ties as extreme."""
    rng = np.random.default_rng([SIMULATION_SEED, epochs, len(noise)])
    # a permuted statistic is sum_b w_b (2 x_b - sum_b) / N, x_b the sum of the builds that play
    # the candidate: one product over all briefs' builds gives the x terms, and the rest, the
    # same in every permutation of a draw, moves to the observed side of the comparison
    pooled, scaled = [], []
    observed = np.zeros(DRAWS)
    for index, (b, variances) in enumerate(zip(noise, _variances(noise, effect), strict=True)):
        runs = [_build_means(rng, rate, variance, b.items, epochs)
                for rate, variance in zip((b.mean, b.mean * (1 - effect)), variances, strict=True)]
        builds = np.concatenate(runs, axis=1)
        chosen, _moved = _chosen(2 * epochs, epochs, PLAN_PERMUTATIONS, 0, index)  # compare's seed, its strata order
        pooled.append(builds)
        scaled.append(chosen.T * (2 * b.weight / epochs))
        observed += b.weight * (runs[1].mean(axis=1) - runs[0].mean(axis=1) + builds.sum(axis=1) / epochs)
    permuted = np.concatenate(pooled, axis=1) @ np.concatenate(scaled, axis=0)
    as_low = (permuted <= observed[:, None] + 1e-9).sum(axis=1)  # ties extreme, as _p counts them
    return float(((1 + as_low) / (1 + PLAN_PERMUTATIONS) < level).mean())


def _build_means(rng: np.random.Generator, rate: float, variance: float, items: float, epochs: int) -> Floats:
    """``DRAWS`` runs of ``epochs`` build means of ``items`` 0/1 items (a beta-binomial of ``variance``)."""
    n = max(1, round(items))
    if rate <= 0 or rate >= 1:
        return np.full((DRAWS, epochs), float(rate))
    binomial = rate * (1 - rate) / n
    within = min(_MOST_ALIKE, (variance / binomial - 1) / (n - 1)) if n > 1 else 0.0
    if within <= 0:
        return rng.binomial(n, rate, (DRAWS, epochs)) / n
    spread = 1 / within - 1
    return rng.binomial(n, rng.beta(rate * spread, (1 - rate) * spread, (DRAWS, epochs))) / n


def _step(noise: Sequence[BriefNoise], epochs: int) -> float:
    """The finest step the stratified difference moves by: a swap of one build moves it by a multiple
    of ``2 w_b / (N n_b)``."""
    return min(2 * b.weight / (epochs * b.items) for b in noise)


def needed(noise: Sequence[BriefNoise], effect: float, level: float, goal: float) -> int | None:
    """The fewest epochs whose power reaches ``goal`` (None: not within ``LIMIT``), by bisection."""
    if power_at(noise, LIMIT, effect, level) < goal:
        return None
    short, enough = FIRST - 1, LIMIT  # one build per brief has no power
    while enough - short > 1:
        middle = (short + enough) // 2
        short, enough = (short, middle) if power_at(noise, middle, effect, level) >= goal else (middle, enough)
    return enough


def plan_epochs(report: dict[str, Any], *, path: str, effect: float = EFFECT, power: float = POWER,
                alpha: float = ALPHA, short_at: int | None = None) -> Plan:
    """The plan for every scorer the baseline scored (a ``UsageError`` without two builds of a brief);
    with ``short_at``, only the scorers short of the goal at that many epochs (each power costs)."""
    scorers = {name: brief_noise(report, name) for name in sorted(report["scorers"])}
    scorers = {name: noise for name, noise in scorers.items() if noise}
    if not scorers:
        raise UsageError(f"{path}: no scorer scored an item (every judge item failed?); rescore it "
                         "(stay evals score) and plan from that")
    if not any(b.variance is not None for noise in scorers.values() for b in noise):
        raise UsageError(f"{path}: a run of one build per brief shows no build-to-build variance, which a plan needs; "
                         "run the baseline with two epochs or more (python -m pytest evals --stay-epochs 3 "
                         "--stay-output BASELINE.json) and plan from that")
    level = alpha / max(1, len(scorers))
    epochs = int(report.get("epochs") or max(len(b["builds"]) for b in report["briefs"].values()))
    rows = []
    for name, noise in scorers.items():
        if short_at is not None and power_at(noise, short_at, effect, level) >= power:
            continue
        mean = sum(b.weight * b.mean for b in noise)
        spread = [b.mean for b in noise]
        brief_sd = math.sqrt(sum((m - sum(spread) / len(spread)) ** 2 for m in spread) / (len(spread) - 1)) \
            if len(spread) > 1 else None
        observed = [b.variance for b in noise if b.variance is not None]
        build_sd = math.sqrt(sum(observed) / len(observed)) if observed else None
        rows.append(ScorerPlan(name, sum(b.items for b in noise), mean, effect * mean, brief_sd, build_sd,
                               needed(noise, effect, level, power), power_at(noise, epochs, effect, level),
                               power_at(noise, DEFAULT_EPOCHS, effect, level)))
    return Plan(path, str(report.get("label", "baseline")), epochs, DEFAULT_EPOCHS, len(report["briefs"]), alpha,
                len(scorers), effect, power, tuple(rows), tuple(not_judged(report)))


def epochs_warning(baseline: str | os.PathLike[str], epochs: int, *, asked: bool) -> str | None:
    """The suite's ``warning:`` line when ``epochs`` is below the plan from ``baseline``. A baseline
    given on purpose (``asked``) that cannot be planned from is a ``UsageError``; the run's own
    previous report says nothing then."""
    if not asked and not Path(baseline).is_file():
        return None
    try:
        found = plan_epochs(read_report(baseline), path=str(baseline))
    except UsageError:
        if asked:
            raise
        return None
    return found.warning(epochs)


def power_notes(report: dict[str, Any], *, path: str, epochs: int, effect: float, alpha: float,
                scorers: Collection[str]) -> tuple[str, ...]:
    """One line per scorer of ``scorers`` (tested over builds) short of the goal's power at ``epochs``,
    by the baseline's plan; nothing when it cannot be planned from (the MDE column still says)."""
    if epochs < 1:  # a header that does not say its epochs: nothing to plan against
        return ()
    try:
        found = plan_epochs(report, path=path, effect=effect, alpha=alpha, short_at=epochs)
    except UsageError:
        return ()
    return tuple(f"{s.scorer} would catch a {found.effect:.0%} drop with power about {s.power_at_run:.2f} at the "
                 f"baseline's {found.epochs} epochs (goal {found.power:.2f}): it {_needs(s)}; see `stay evals "
                 f"plan {path}`" for s in found.short(epochs) if s.scorer in scorers)
