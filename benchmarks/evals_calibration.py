"""Calibration of `stay evals compare`: the gate's false-positive rate and power, by
simulation through the same code path `compare` uses (report documents in, verdicts and
exit code out), at the real item counts and the default epochs. No model, no key.

    python benchmarks/evals_calibration.py            # the figures quoted in docs/evals.md
    python benchmarks/evals_calibration.py --quick    # a tenth of the comparisons
    python benchmarks/evals_calibration.py --drift 0.2,0.3 --null 400   # judge drift between sessions

The noise model, printed with the figures (change it with the options):
- Items per build: counted from an offline build of the six briefs in evals/briefs/
  (per scorer and brief, e.g. outcome_coverage 4 to 26 items a build, 72 a run).
- An item passes with a probability set on the logit scale: the scorer's base rate
  (0.8: the rate at which a 0/1 item varies most in the plausible range 0.7-0.95, so
  the least favourable), plus a brief effect (shared by both runs, the brief is the
  same), plus a build effect (drawn anew for every build of every run). Each is given as
  an intraclass correlation on the logit scale, ICC = sd^2 / (sd^2 + pi^2 / 3): brief ICC
  0.15 (sd 0.76), and build ICC 0.05, 0.15 and 0.30 (sd 0.42, 0.76, 1.19), the plausible
  range (at 0.15 two builds of one brief by one prompt differ by up to 20 points).
- A degradation of 20% makes each item of the candidate's builds fail with probability
  0.2 (the share of degraded items), so the scorer's mean drops by 0.2 x its rate.

Then, at each build ICC: (1) null comparisons (equal quality) give the gate's
false-positive rate, each scorer's rate of a false "worse", the median minimum
detectable effect (MDE) printed and the interval's coverage; (2) comparisons where one
scorer at a time is degraded by 20% give the power per scorer, the rate at which another
scorer is falsely called worse, and the interval's coverage of the true difference.
(3) The table docs/evals.md quotes (and tests/scoring/test_calibration.py holds).
(4) The epochs each scorer needs for power 0.8, at build ICC 0.05 and 0.15. (5) The
printed MDE is a claim: power at a drop of the median MDE. (6) End to end offline: two
runs of the real suite code with different seeds and equal quality, from a pool of
offline builds.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stay.scoring._compare import INCONCLUSIVE, SAME, WORSE, Comparison, ScorerComparison, compare  # noqa: E402
from stay.scoring._report import VERSION, check_report  # noqa: E402
from stay.suite import DEFAULT_EPOCHS  # noqa: E402

BRIEFS = sorted((ROOT / "evals" / "briefs").glob("*.yaml"))


def logit_sd(icc: float) -> float:
    """The sd of a logit-scale effect with intraclass correlation ``icc`` (logistic residual)."""
    return math.sqrt(icc / (1 - icc) * math.pi ** 2 / 3)


BRIEF_ICC = 0.15
BUILD_ICCS = (0.05, 0.15, 0.30)
"""The build ICCs the figures are given at; the goal holds up to ``GOAL_ICC``."""
GOAL_ICC = 0.15
GOAL_POWER = 0.8
GOAL_FPR = 0.05
GOAL_ITEMS = 36
"""The goal is claimed for every scorer with at least this many items a run of one epoch."""


@dataclass(frozen=True)
class Noise:
    base_rate: float = 0.8
    brief_sd: float = logit_sd(BRIEF_ICC)
    build_sd: float = logit_sd(GOAL_ICC)

    def describe(self) -> str:
        return (f"item pass rate {self.base_rate} (logit {math.log(self.base_rate / (1 - self.base_rate)):+.2f}); "
                f"brief effect sd {self.brief_sd:.2f} (ICC {icc(self.brief_sd):.2f}) and build effect sd "
                f"{self.build_sd:.2f} (ICC {icc(self.build_sd):.2f}), on the logit scale")


def icc(sd: float) -> float:
    return sd * sd / (sd * sd + math.pi ** 2 / 3)


def item_counts() -> dict[str, tuple[int, ...]]:
    """Items per build, per scorer and brief: from one offline build of each brief."""
    from stay.models import OfflineBackend
    from stay.pipeline import build_course
    from stay.scoring import default_scorers, score_course
    from stay.testing import heuristic_judge

    counts: dict[str, list[int]] = defaultdict(list)  # a judge that asks (a test double): every item counted
    with tempfile.TemporaryDirectory() as tmp:
        for brief in BRIEFS:
            result = build_course(brief, courses_dir=tmp, yes=True, backend=OfflineBackend(), progress=lambda _l: None)
            for name, scored in score_course(result.course_dir, default_scorers(heuristic_judge())).items():
                counts[name].append(len(scored.items))
    return {name: tuple(values) for name, values in sorted(counts.items())}


def synthetic_run(rng: np.random.Generator, label: str, counts: dict[str, tuple[int, ...]],
                  effects: dict[str, np.ndarray], epochs: int, noise: Noise,
                  degrade: dict[str, float], shift: dict[str, float] | None = None) -> dict[str, Any]:
    """One run's report document: every brief built ``epochs`` times, every item scored.
    ``degrade``: a share of each build's items fail; ``shift``: each build's pass rate drops
    by that much (an additive shift of the build means, the MDE's definition)."""
    base = math.log(noise.base_rate / (1 - noise.base_rate))
    briefs: dict[str, dict[str, Any]] = {f"brief-{b}": {"builds": []} for b in range(len(next(iter(counts.values()))))}
    for b, slug in enumerate(briefs):
        for epoch in range(1, epochs + 1):
            scorers = {}
            for name, per_brief in counts.items():
                n = per_brief[b]
                p = 1 / (1 + math.exp(-(base + effects[name][b] + rng.normal(0, noise.build_sd))))
                passed = rng.random(n) < p - (shift or {}).get(name, 0.0)
                if degrade.get(name):
                    passed &= rng.random(n) >= degrade[name]
                scorers[name] = {"items": [{"item": f"i{i}", "content": f"{label}/{slug}/{epoch}/{name}/{i}",
                                            "score": float(s), "failure": None, "reason": "simulated"}
                                           for i, s in enumerate(passed)],
                                 "unparseable": 0, "errors": 0}
            briefs[slug]["builds"].append({"epoch": epoch, "scorers": scorers})
    return {"version": VERSION, "label": label, "backend": "simulated", "judge": "simulated", "judge_model": None,
            "scorers": dict.fromkeys(counts, 1), "epochs": epochs, "briefs": briefs}


def simulate(n: int, counts: dict[str, tuple[int, ...]], epochs: int, noise: Noise, degrade: dict[str, float],
             seed: int, shift: dict[str, float] | None = None, permutations: int | None = None) -> list[Any]:
    """``n`` comparisons of a baseline with a candidate (``degrade`` or ``shift``), brief
    effects drawn anew for each pair."""
    return [c for c, _truth in simulate_with_truth(n, counts, epochs, noise, degrade, seed, shift, permutations)]


def simulate_with_truth(n: int, counts: dict[str, tuple[int, ...]], epochs: int, noise: Noise,
                        degrade: dict[str, float], seed: int, shift: dict[str, float] | None = None,
                        permutations: int | None = None) -> list[tuple[Any, dict[str, float]]]:
    """As ``simulate``, each comparison with the true difference per scorer: the weighted
    brief means' expected change, over the build effects (Gauss-Hermite)."""
    rng = np.random.default_rng(seed)
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    base = math.log(noise.base_rate / (1 - noise.base_rate))
    found = []
    for index in range(n):
        effects = {name: rng.normal(0, noise.brief_sd, len(values)) for name, values in counts.items()}
        baseline = synthetic_run(rng, f"b{index}", counts, effects, epochs, noise, {})
        candidate = synthetic_run(rng, f"c{index}", counts, effects, epochs, noise, degrade, shift)
        truth = {}
        for name, per_brief in counts.items():
            rates = [float(weights @ (1 / (1 + np.exp(-(base + e + noise.build_sd * nodes))))) for e in effects[name]]
            drops = [r * degrade.get(name, 0.0) + (shift or {}).get(name, 0.0) for r in rates]
            truth[name] = -sum(n_b * d for n_b, d in zip(per_brief, drops, strict=True)) / sum(per_brief)
        found.append((compare(baseline, candidate, permutations=permutations), truth))
    return found


def row(comparison: Comparison, scorer: str) -> ScorerComparison:
    return next(r for r in comparison.scorers if r.scorer == scorer)


def covered(results: list[tuple[Any, dict[str, float]]], scorer: str) -> float:
    """The share of intervals that contain the true difference."""
    rows = [(row(c, scorer), truth[scorer]) for c, truth in results]
    return sum(r.low is not None and r.high is not None and r.low - 1e-9 <= t <= r.high + 1e-9
               for r, t in rows) / len(rows)


def share(hits: int, n: int) -> str:
    """A rate with its 95% Wilson interval."""
    if n == 0:
        return "n/a"
    z, p = 1.96, hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{p:.3f} [{max(0.0, centre - half):.3f}, {min(1.0, centre + half):.3f}]"


def power(results: list[Any], scorer: str) -> float:
    return sum(bool(row(c, scorer).verdict == WORSE) for c in results) / len(results)


def false_alarm(results: list[Any], scorer: str) -> float:
    """The share of comparisons in which a scorer other than ``scorer`` is called worse."""
    return sum(any(r.verdict == WORSE and r.scorer != scorer for r in c.scorers) for c in results) / len(results)


@dataclass(frozen=True)
class Level:
    """The figures at one build ICC: the gate's false-positive rate and, per scorer, its
    power at the degradation, with the comparisons behind each."""

    build_icc: float
    null: int
    fpr: float
    compared: int
    powers: dict[str, float]


def calibrate(counts: dict[str, tuple[int, ...]], epochs: int, noise: Noise, n_null: int, n_power: int, share_: float,
              seed: int, permutations: int | None = None, scorers: tuple[str, ...] | None = None,
              report: bool = False) -> Level:
    """The gate at one noise level: null comparisons, then one scorer degraded at a time.
    The seeds are derived from ``seed`` and the scorer's place, so the test reruns the
    benchmark's own draws (fewer of them) when it asks for the same ``seed``."""
    null = simulate_with_truth(n_null, counts, epochs, noise, {}, seed, permutations=permutations)
    fp = sum(c.exit_code == 1 for c, _t in null)
    if report:
        print(f"  {n_null} null comparisons: the gate's false-positive rate (exit 1) {share(fp, n_null)} "
              f"(goal <= {GOAL_FPR})")
        for name in counts:
            rows = [row(c, name) for c, _t in null]
            mdes = [r.mde for r in rows if r.mde is not None]
            verdicts = Counter(r.verdict for r in rows)
            print(f"    {name:20} called worse {verdicts[WORSE] / n_null:.3f}; no detectable difference "
                  f"{verdicts[SAME] / n_null:.3f}; inconclusive {verdicts[INCONCLUSIVE] / n_null:.3f}; median MDE "
                  f"{statistics.median(mdes) if mdes else float('nan'):.3f}; interval covers 0 "
                  f"{covered(null, name):.3f}")
    powers = {}
    for k, name in enumerate(counts):
        if scorers is not None and name not in scorers:
            continue
        results = simulate_with_truth(n_power, counts, epochs, noise, {name: share_}, seed + 1 + k,
                                      permutations=permutations)
        comparisons = [c for c, _t in results]
        powers[name] = power(comparisons, name)
        if report:
            goal = f" (goal >= {GOAL_POWER})" if sum(counts[name]) >= GOAL_ITEMS else ""
            print(f"    {name:20} {sum(counts[name]):>3} items a run: power "
                  f"{share(round(powers[name] * n_power), n_power)}{goal}; another scorer falsely worse "
                  f"{false_alarm(comparisons, name):.3f}; interval covers the true difference "
                  f"{covered(results, name):.3f}")
    return Level(icc(noise.build_sd), n_null, fp / n_null, n_power, powers)


def table(levels: list[Level], epochs: int, seed: int) -> str:
    """The Markdown table docs/evals.md quotes, as printed (the test parses it back)."""
    names = list(levels[0].powers)
    lines = [f"| build ICC (sd) | gate FPR | {' | '.join(names)} |", "|---" * (len(names) + 2) + "|"]
    for level in levels:
        lines.append(f"| {level.build_icc:.2f} ({logit_sd(level.build_icc):.2f}) | {level.fpr:.3f} | "
                     + " | ".join(f"{level.powers[n]:.3f}" for n in names) + " |")
    lines.append(f"\n{epochs} epochs; {levels[0].null} null comparisons and {levels[0].compared} per degraded scorer "
                 f"at each level; brief ICC {BRIEF_ICC}; seed {seed}")
    return "\n".join(lines)


def offline_null(seeds: int, epochs: int, pairs: int, quality: dict[str, float]) -> list[Any]:
    """Two runs of the real suite code with different seeds and equal quality: a pool of
    ``seeds`` offline builds per brief and epoch (a build's seed names its epoch, which
    compare checks), each pair of runs drawing two different seeds for every slot."""
    from stay.scoring import default_scorers, scorer_versions
    from stay.scoring._report import report
    from stay.suite import OFFLINE, evaluate_build
    from stay.testing import heuristic_judge

    pool: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        judge = heuristic_judge()  # a test double that scores: the offline judge judges nothing
        for brief in BRIEFS:
            for epoch in range(1, epochs + 1):
                for seed in range(1, seeds + 1):
                    slug, entry = evaluate_build(brief, epoch=epoch, courses_dir=Path(tmp) / f"s{seed}",
                                                 backend=OFFLINE, prompts_dir=None, judge=judge, run_seed=seed,
                                                 quality=quality)
                    pool[slug, epoch].append(entry)
    versions = scorer_versions(default_scorers(judge))
    rng = random.Random(0)
    found = []
    for index in range(pairs):
        runs: list[dict[str, list[dict[str, Any]]]] = [defaultdict(list), defaultdict(list)]
        for (slug, _epoch), entries in sorted(pool.items()):
            for side, entry in enumerate(rng.sample(entries, 2)):
                runs[side][slug].append(entry)
        documents = [report(label=f"{side}-{index}", backend=OFFLINE, prompts_dir="prompts", prompt_hashes={},
                            scorers=versions, builds=dict(runs[side]), epochs=epochs, quality=quality)
                     for side in (0, 1)]
        found.append(compare(documents[0], documents[1]))
    return found


def _judged_in(document: dict[str, Any], session: str) -> dict[str, Any]:
    """The synthetic run as a model judged it, in ``session`` (the simulated judge is exempt
    from the sessions check, as the offline one is)."""
    document.update(judge="model", judge_model="simulated-judge")
    for brief in document["briefs"].values():
        for build in brief["builds"]:
            build["judged_in"] = session
            for result in build["scorers"].values():
                result["judge"] = "model:simulated-judge"
    return document


def drift(n: int, counts: dict[str, tuple[int, ...]], epochs: int, noise: Noise, shift: float,
          seed: int) -> dict[str, float]:
    """Null comparisons (equal quality) whose judge is ``shift`` logits harsher on one day:
    judged apart (the candidate on the harsher day; compared with --allow sessions, as
    before sessions were recorded), refused (what compare does to them now), and judged in
    one session (``stay evals rejudge``, or the two-arm suite: both arms on the harsher day).
    The rates of exit 1, of any other scorer than the first called worse, and of refusal."""
    from stay.errors import RunsNotComparable

    base = math.log(noise.base_rate / (1 - noise.base_rate))
    harsher = replace(noise, base_rate=1 / (1 + math.exp(-(base - shift))))
    rng = np.random.default_rng(seed)
    fired = {"apart": 0, "one session": 0}
    refused = 0
    for index in range(n):
        effects = {name: rng.normal(0, noise.brief_sd, len(values)) for name, values in counts.items()}
        runs = {"apart": (synthetic_run(rng, f"b{index}", counts, effects, epochs, noise, {}),
                          synthetic_run(rng, f"c{index}", counts, effects, epochs, harsher, {})),
                "one session": (synthetic_run(rng, f"b{index}", counts, effects, epochs, harsher, {}),
                                synthetic_run(rng, f"c{index}", counts, effects, epochs, harsher, {}))}
        apart = (_judged_in(runs["apart"][0], "s-monday"), _judged_in(runs["apart"][1], "s-tuesday"))
        try:
            compare(*apart)
        except RunsNotComparable:
            refused += 1
        fired["apart"] += compare(*apart, allow=["sessions"]).exit_code == 1
        together = [_judged_in(run, "s-one") for run in runs["one session"]]
        fired["one session"] += compare(*together).exit_code == 1
    return {"apart": fired["apart"] / n, "refused": refused / n, "one session": fired["one session"] / n}


def epochs_needed(counts: dict[str, tuple[int, ...]], name: str, noise: Noise, start: int, n: int, share_: float,
                  seed: int) -> int | None:
    """The fewest epochs (on a ladder from ``start``) at which ``name`` reaches the goal's power."""
    for epochs in sorted({start, *(e for e in (8, 10, 12, 16, 20, 24, 32) if e > start)}):
        results = simulate(n, counts, epochs, noise, {name: share_}, seed + epochs)
        value = power(results, name)
        print(f"    {name:20} {epochs:>2} epochs: power {value:.3f} ({n} comparisons)")
        if value >= GOAL_POWER:
            return epochs
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--null", type=int, default=1000, help="null comparisons per build ICC (default 1000)")
    parser.add_argument("--power", type=int, default=500, help="comparisons per degraded scorer (default 500)")
    parser.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS)
    parser.add_argument("--check", type=int, default=200, help="comparisons a step of (4) and (5) (default 200)")
    parser.add_argument("--share", type=float, default=0.2, help="share of degraded items (default 0.2)")
    parser.add_argument("--base-rate", type=float, default=Noise.base_rate)
    parser.add_argument("--brief-icc", type=float, default=BRIEF_ICC)
    parser.add_argument("--build-icc", type=float, nargs="+", default=list(BUILD_ICCS))
    parser.add_argument("--offline-seeds", type=int, default=0, help="offline builds a brief and epoch, (6) (0: skip)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the comparisons")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--drift", default=None, metavar="LOGITS",
                        help="only the drift figures: the judge this many logits harsher on one day, e.g. 0.2,0.3 "
                             "(--null comparisons each)")
    args = parser.parse_args(argv)
    if args.drift:
        counts = item_counts()
        n = max(50, args.null // (10 if args.quick else 1))
        for level in args.build_icc:
            noise = Noise(args.base_rate, logit_sd(args.brief_icc), logit_sd(level))
            print(f"judge drift between sessions, {n} null comparisons each, {args.epochs} epochs; noise: "
                  f"{noise.describe()}")
            for shift in (float(value) for value in args.drift.split(",")):
                rates = drift(n, counts, args.epochs, noise, shift, args.seed)
                print(f"  judge {shift} logit harsher on the candidate's day: gate false-positive rate judged "
                      f"apart {share(round(rates['apart'] * n), n)} (compared anyway, --allow sessions); refused "
                      f"{rates['refused']:.3f}; judged in one session (both on the harsher day) "
                      f"{share(round(rates['one session'] * n), n)}")
        return 0
    if args.offline_seeds == 1:
        parser.error("--offline-seeds 1: two runs need two seeds for every brief and epoch (or 0 to skip)")
    scale = 10 if args.quick else 1
    n_null, n_power = max(50, args.null // scale), max(50, args.power // scale)
    n_check = max(50, args.check // scale)
    started = time.perf_counter()
    counts = item_counts()
    print(f"briefs: {len(BRIEFS)}; epochs: {args.epochs} (default {DEFAULT_EPOCHS}); items per build, per brief:")
    for name, values in counts.items():
        print(f"  {name:20} {' '.join(f'{v:>3}' for v in values)}   ({sum(values)} a run of one epoch)")
    noises = [Noise(args.base_rate, logit_sd(args.brief_icc), logit_sd(level)) for level in args.build_icc]
    print(f"degradation: {args.share:.0%} of a scorer's items fail in every candidate build")
    print()

    levels = []
    for k, noise in enumerate(noises):
        print(f"(1, 2) noise: {noise.describe()}")
        levels.append(calibrate(counts, args.epochs, noise, n_null, n_power, args.share, args.seed + 1000 * k,
                                report=True))
        print()
    print(f"(3) the table docs/evals.md quotes (power at a {args.share:.0%} degradation, one scorer at a time):")
    print(table(levels, args.epochs, args.seed))
    met = all(level.fpr <= GOAL_FPR and all(level.powers[n] >= GOAL_POWER for n in counts
                                             if sum(counts[n]) >= GOAL_ITEMS)
              for level in levels if level.build_icc <= GOAL_ICC + 1e-9)
    print(f"goal (FPR <= {GOAL_FPR}, power >= {GOAL_POWER} for every scorer of {GOAL_ITEMS}+ items a run, build "
          f"ICC up to {GOAL_ICC}) at {args.epochs} epochs: {'met' if met else 'NOT met'}")
    print()

    print(f"(4) epochs each scorer needs for power {GOAL_POWER} ({n_check} comparisons a step):")
    for k, noise in enumerate(noises):
        if icc(noise.build_sd) > GOAL_ICC + 1e-9:
            continue
        level = next(x for x in levels if abs(x.build_icc - icc(noise.build_sd)) < 1e-9)
        print(f"  build ICC {icc(noise.build_sd):.2f}:")
        for name in counts:
            if level.powers[name] >= GOAL_POWER:
                print(f"    {name:20} {args.epochs} epochs suffice (power {level.powers[name]:.3f})")
                continue
            needed = epochs_needed(counts, name, noise, args.epochs + 2, n_check, args.share,
                                   args.seed + 5000 + 100 * k)
            print(f"    -> {name} needs about {needed or 'more than 32'} epochs")
    print()

    noise = next(n for n in noises if abs(icc(n.build_sd) - GOAL_ICC) < 1e-9) if GOAL_ICC in args.build_icc \
        else noises[0]
    null = simulate(n_check, counts, args.epochs, noise, {}, args.seed + 7000)
    print(f"(5) the printed MDE is a claim, at build ICC {icc(noise.build_sd):.2f}: power when the true drop equals "
          f"the median MDE printed by {n_check} null comparisons, as a shift of every build's pass rate (the MDE's "
          f"definition), {n_check} comparisons each:")
    for k, name in enumerate(counts):
        mdes = [m for c in null if (m := row(c, name).mde) is not None]
        if not mdes:
            print(f"  {name:20} no MDE printed")
            continue
        median = float(statistics.median(mdes))
        shifted = simulate(n_check, counts, args.epochs, noise, {}, args.seed + 7100 + k, {name: median})
        print(f"  {name:20} drop {median:.3f}: power {power(shifted, name):.3f}  (claim: {GOAL_POWER})")
    print()

    if args.offline_seeds:
        quality = {"distractors": 0.1, "untaught": 0.1, "exercises": 0.1, "rubrics": 0.1}
        pairs = max(50, 400 // scale)
        offline = offline_null(args.offline_seeds, args.epochs, pairs, quality)
        fp = sum(c.exit_code == 1 for c in offline)
        print(f"(6) offline, end to end: {args.offline_seeds} seeded builds per brief and epoch at quality "
              f"{', '.join(f'{k}={v}' for k, v in quality.items())}; {pairs} pairs of runs with disjoint seeds and "
              f"equal quality ({args.epochs} epochs each; the pairs share builds, so the rates are correlated):")
        print(f"  gate false-positive rate {share(fp, pairs)}")
        for name in counts:
            verdicts = Counter(row(c, name).verdict for c in offline)
            print(f"  {name:20} no detectable difference {verdicts[SAME] / pairs:.3f}; inconclusive "
                  f"{verdicts[INCONCLUSIVE] / pairs:.3f}; worse {verdicts[WORSE] / pairs:.3f}")
        print()
    print(f"wall time {time.perf_counter() - started:.0f} s")
    return 0


def _document_is_a_report() -> None:
    """The synthetic documents have the report's shape (checked by the tests too)."""
    rng = np.random.default_rng(0)
    counts = {"s": (1, 2)}
    check_report(synthetic_run(rng, "x", counts, {"s": np.zeros(2)}, 2, Noise(), {}), "synthetic")


if __name__ == "__main__":
    _document_is_a_report()
    sys.exit(main())
