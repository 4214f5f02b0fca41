"""``stay evals plan``: the epochs a comparison needs, per scorer, to see a drop that matters, from a
baseline's own variance: simulated through the gate's own test up to ``SIMULATED_UP_TO`` epochs, the
normal approximation beyond (docs/evals.md, "Planning epochs")."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from stay._display import fixed, plural
from stay.errors import UsageError
from stay.scoring._defaults import ALPHA, DEFAULT_EPOCHS, EFFECT, POWER
from stay.scoring._report import not_judged, read_report
from stay.scoring._stats import PERMUTATIONS as GATE_PERMUTATIONS
from stay.scoring._stats import _chosen, build_strata

LIMIT = 64  # the most epochs searched: past it, more items a build is the cheaper fix
FIRST = 2  # one build per brief cannot show build-to-build variance
SIMULATED_UP_TO = 8
"""At few builds the permutation null is lumpy and the normal formula optimistic (0.71 planned where
0.64 is simulated at 3 epochs of 3 briefs, 0.97 and 0.96 at 7); the simulation's cost grows with N."""
DRAWS = 1000  # simulated comparisons per power: a standard error of at most 0.016
PERMUTATIONS = 999  # per simulated test: the gate's 4,999 resolve p finer than a power needs
SEED = 22
_MOST_ALIKE = 0.999  # the largest intra-build correlation drawn (1: a beta of zero width)

Floats = npt.NDArray[np.float64]


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
    return max(1 / float(math.comb(2 * epochs, epochs)) ** briefs, 1 / (1 + GATE_PERMUTATIONS))


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
    rng = np.random.default_rng([SEED, epochs, len(noise)])
    # a permuted statistic is sum_b w_b (2 x_b - sum_b) / N, x_b the sum of the builds that play
    # the candidate: one product over all briefs' builds gives the x terms, and the rest, the
    # same in every permutation of a draw, moves to the observed side of the comparison
    pooled, scaled = [], []
    observed = np.zeros(DRAWS)
    for index, (b, variances) in enumerate(zip(noise, _variances(noise, effect), strict=True)):
        runs = [_build_means(rng, rate, variance, b.items, epochs)
                for rate, variance in zip((b.mean, b.mean * (1 - effect)), variances, strict=True)]
        builds = np.concatenate(runs, axis=1)
        chosen, _moved = _chosen(2 * epochs, epochs, PERMUTATIONS, 0, index)  # compare's seed, its strata order
        pooled.append(builds)
        scaled.append(chosen.T * (2 * b.weight / epochs))
        observed += b.weight * (runs[1].mean(axis=1) - runs[0].mean(axis=1) + builds.sum(axis=1) / epochs)
    permuted = np.concatenate(pooled, axis=1) @ np.concatenate(scaled, axis=0)
    as_low = (permuted <= observed[:, None] + 1e-9).sum(axis=1)  # ties extreme, as _stats._p_worse counts them
    return float(((1 + as_low) / (1 + PERMUTATIONS) < level).mean())


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

