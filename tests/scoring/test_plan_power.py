"""Differential test of a pre-check: the power ``stay evals plan`` (and ``power_notes``,
which prints its ``power_at_run``) promises, ``power_at``, against a Monte Carlo run of
the gate it plans for, on a few generated designs (effect, noise, epochs, briefs).

The simulation uses the gate's own code: the calibration benchmark's noise model
(``benchmarks/evals_calibration.py``: logit-normal brief and build effects, 0/1 items, a
degradation failing a share of each build's items) makes the reports, ``compare``'s
strata (``build_strata``) make the test's units, ``stratified_test`` (the stats the gate runs,
at ``PERMUTATIONS``) gives ``p_worse``, and the gate says worse when that is
below the level (one scorer: Holm's strictest step is ``alpha`` itself).

The plan reads a long baseline (``BASELINE_EPOCHS``) of the same briefs, so its variance
estimate is close to the truth and the comparison is of the formula, not of one small
baseline's luck. Tolerance: the simulated power is a binomial proportion over
``SIMULATED`` comparisons, standard error ``sqrt(p (1 - p) / SIMULATED)`` at the planned
power ``p``; the two agree within ``Z`` of those standard errors (plus half a comparison,
for the proportion's granularity): ``Z sqrt(p (1 - p) / SIMULATED) + 1 / (2 SIMULATED)``.
That catches a plan at the two-sided level, or one optimistic by 0.1 where the gate's
power is 0.7; an error of a few hundredths (a standard error 10% off) is within it.
Designs are drawn from a seeded generator and kept
where the planned power is informative (between ``LOW`` and ``HIGH``: near 0 or 1 a
binomial standard error says little about a normal approximation's tail)."""

from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from stay.scoring import _stats
from stay.scoring._defaults import ALPHA
from stay.scoring._stats import _simulated, _variances, brief_noise, build_strata, plan_epochs, power_at
from tests.conftest import ROOT

SIMULATED = 250
"""Comparisons per design: a standard error of at most 0.032 on a simulated power."""
Z = 3.0
"""Standard errors allowed (two-sided, about 0.3% per design by chance alone)."""
PERMUTATIONS = 999
"""Fewer than the gate's 4,999, for time: a p-value's own Monte Carlo error at the 0.05
level is then about 0.007, a fifth of the simulation's."""
BASELINE_EPOCHS = 80
DESIGNS = 4
LOW, HIGH = 0.2, 0.95
SCORER = "outcome_coverage"
SEED = 23


def _bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("evals_calibration", ROOT / "benchmarks" / "evals_calibration.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "evals_calibration", module)  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Design:
    effect: float
    build_icc: float
    base_rate: float
    epochs: int
    items: tuple[int, ...]
    """Items per build, one count per brief."""


def _drawn(rng: np.random.Generator) -> Design:
    briefs = int(rng.integers(3, 7))
    return Design(effect=float(rng.uniform(0.15, 0.4)), build_icc=float(rng.uniform(0.03, 0.3)),
                  base_rate=float(rng.uniform(0.6, 0.9)), epochs=int(rng.integers(3, 9)),
                  items=tuple(int(n) for n in rng.integers(3, 17, briefs)))


def _simulated_power(bench: ModuleType, rng: np.random.Generator, design: Design, noise: object,
                     effects: dict[str, np.ndarray], level: float) -> float:
    counts = {SCORER: design.items}
    caught = 0
    for index in range(SIMULATED):
        base = bench.synthetic_run(rng, f"b{index}", counts, effects, design.epochs, noise, {})
        cand = bench.synthetic_run(rng, f"c{index}", counts, effects, design.epochs, noise, {SCORER: design.effect})
        strata = build_strata(base, cand, SCORER, sorted(base["briefs"]))
        caught += _stats.stratified_test(strata, permutations=PERMUTATIONS).p_worse < level
    return caught / SIMULATED


@dataclass(frozen=True)
class Point:
    """A design, the brief effects it was drawn with, and what the plan promises for it."""

    design: Design
    noise: Any
    effects: dict[str, np.ndarray]
    level: float
    planned: float


@pytest.fixture(scope="module")
def points() -> list[Point]:
    """The first ``DESIGNS`` designs drawn whose planned power is informative, each with a
    long baseline of its briefs for the plan to read."""
    with pytest.MonkeyPatch.context() as patch:
        bench = _bench(patch)
        rng = np.random.default_rng(SEED)
        found: list[Point] = []
        while len(found) < DESIGNS:
            design = _drawn(rng)
            noise = bench.Noise(base_rate=design.base_rate, build_sd=bench.logit_sd(design.build_icc))
            effects = {SCORER: rng.normal(0, noise.brief_sd, len(design.items))}  # the briefs, fixed as in use
            baseline = bench.synthetic_run(rng, "baseline", {SCORER: design.items}, effects, BASELINE_EPOCHS,
                                           noise, {})
            level = plan_epochs(baseline, path="synthetic", effect=design.effect, alpha=ALPHA).level
            planned = power_at(brief_noise(baseline, SCORER), design.epochs, design.effect, level)
            if LOW <= planned <= HIGH:
                found.append(Point(design, noise, effects, level, planned))
        return found


@pytest.mark.slow  # a calibration: the plan against the gate's simulated power
@pytest.mark.parametrize("index", range(DESIGNS))
def test_the_planned_power_is_the_gates_simulated_power_on_generated_designs(
        points: list[Point], index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    point = points[index]
    simulated = _simulated_power(_bench(monkeypatch), np.random.default_rng((SEED, index)), point.design,
                                 point.noise, point.effects, point.level)
    tolerance = Z * math.sqrt(point.planned * (1 - point.planned) / SIMULATED) + 0.5 / SIMULATED
    assert abs(simulated - point.planned) <= tolerance, (point.design, point.planned, simulated, tolerance)


def test_the_candidates_build_variance_is_the_dropped_builds_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variance the plan gives a degraded candidate's build means (``_variances``) is the one
    a drop of every build's rate makes (the builds' own variance scaled with the rate, plus
    the binomial at the dropped rate), not the baseline's: measured on long runs of the
    benchmark's noise where the builds vary a lot (the baseline's would be half as much again)."""
    bench = _bench(monkeypatch)
    effect, epochs, items = 0.3, 400, (10, 20)
    noise = bench.Noise(base_rate=0.7, build_sd=bench.logit_sd(0.3))
    rng = np.random.default_rng(SEED)
    effects = {SCORER: rng.normal(0, noise.brief_sd, len(items))}
    base = bench.synthetic_run(rng, "base", {SCORER: items}, effects, epochs, noise, {})
    cand = bench.synthetic_run(rng, "cand", {SCORER: items}, effects, epochs, noise, {SCORER: effect})
    planned = [v for _b, v in _variances(brief_noise(base, SCORER), effect)]
    measured = [b.variance for b in brief_noise(cand, SCORER)]
    relative = Z * math.sqrt(2 / (epochs - 1))  # a sample variance's relative standard error, Z of them
    for plan, seen in zip(planned, measured, strict=True):
        assert seen is not None and abs(plan / seen - 1) <= relative, (planned, measured)


def test_the_same_baseline_gives_the_same_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulated powers are seeded: planning twice (the cache cleared) gives the same bytes."""
    bench = _bench(monkeypatch)
    rng = np.random.default_rng(SEED)
    noise = bench.Noise()
    baseline = bench.synthetic_run(rng, "baseline", {SCORER: (4, 8, 12)}, {SCORER: np.zeros(3)}, 3, noise, {})
    first = plan_epochs(baseline, path="synthetic").json()
    _simulated.cache_clear()
    assert plan_epochs(baseline, path="synthetic").json() == first
