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
  the least favourable), plus a brief effect (sd 1.0: briefs differ a lot, one brief's
  scorer at 0.6 while another's is at 0.93; shared by both runs, the brief is the same),
  plus a build effect (sd 0.5: two builds of one brief by one prompt differ by up to 15
  points on a scorer; drawn anew for every build of every run).
- A degradation of 20% makes each item of the candidate's builds fail with probability
  0.2 (the share of degraded items), so the scorer's mean drops by 0.2 x its rate.

Then: (1) null comparisons (equal quality) give the gate's false-positive rate, the
rate of each verdict, and the minimum detectable effect (MDE) each comparison printed;
(2) comparisons where one scorer at a time is degraded by 20% give the power per
scorer; (3) comparisons shifted by the printed MDE check that claim (power should be
near 0.8); (4) the epochs `rubric_specificity` needs to reach 0.8; (5) sensitivity to
the build noise; (6) end to end offline: two runs of the real suite code with
different seeds and equal quality, from a pool of offline builds.
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

from stay.scoring._compare import INCONCLUSIVE, SAME, WORSE, compare  # noqa: E402
from stay.scoring._report import VERSION, check_report  # noqa: E402
from stay.suite import DEFAULT_EPOCHS  # noqa: E402

BRIEFS = sorted((ROOT / "evals" / "briefs").glob("*.yaml"))


@dataclass(frozen=True)
class Noise:
    base_rate: float = 0.8
    brief_sd: float = 1.0
    build_sd: float = 0.5

    def describe(self) -> str:
        return (f"item pass rate {self.base_rate} (logit {math.log(self.base_rate / (1 - self.base_rate)):+.2f}); "
                f"brief effect sd {self.brief_sd} and build effect sd {self.build_sd}, on the logit scale")


def item_counts() -> dict[str, tuple[int, ...]]:
    """Items per build, per scorer and brief: from one offline build of each brief."""
    from stay.models import OfflineBackend
    from stay.pipeline import build_course
    from stay.scoring import OfflineJudge, default_scorers, score_course

    counts: dict[str, list[int]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for brief in BRIEFS:
            result = build_course(brief, courses_dir=tmp, yes=True, backend=OfflineBackend(), progress=lambda _l: None)
            for name, scored in score_course(result.course_dir, default_scorers(OfflineJudge())).items():
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
             seed: int, shift: dict[str, float] | None = None) -> list[Any]:
    rng = np.random.default_rng(seed)
    found = []
    for index in range(n):
        effects = {name: rng.normal(0, noise.brief_sd, len(values)) for name, values in counts.items()}
        baseline = synthetic_run(rng, f"b{index}", counts, effects, epochs, noise, {})
        candidate = synthetic_run(rng, f"c{index}", counts, effects, epochs, noise, degrade, shift)
        found.append(compare(baseline, candidate))
    return found


def share(hits: int, n: int) -> str:
    """A rate with its 95% Wilson interval."""
    if n == 0:
        return "n/a"
    z, p = 1.96, hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{p:.3f} [{max(0.0, centre - half):.3f}, {min(1.0, centre + half):.3f}]"


def power(results: list[Any], scorer: str) -> float:
    return sum(next(r for r in c.scorers if r.scorer == scorer).verdict == WORSE for c in results) / len(results)


def offline_null(seeds: int, epochs: int, pairs: int, quality: dict[str, float]) -> list[Any]:
    """Two runs of the real suite code with different seeds and equal quality: a pool of
    ``seeds`` offline builds per brief, each pair of runs drawing disjoint seeds."""
    from stay.scoring import default_scorers, scorer_versions
    from stay.scoring._judges import make_judge
    from stay.scoring._report import report
    from stay.suite import OFFLINE, evaluate_build

    pool: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        judge = make_judge(OFFLINE, Path(tmp) / "judge")
        for brief in BRIEFS:
            for seed in range(1, seeds + 1):
                slug, entry = evaluate_build(brief, epoch=1, courses_dir=Path(tmp) / f"s{seed}", backend=OFFLINE,
                                             prompts_dir=None, judge=judge, run_seed=seed, quality=quality)
                pool[slug].append(entry)
    versions = scorer_versions(default_scorers(judge))
    rng = random.Random(0)
    found = []
    for index in range(pairs):
        runs: list[dict[str, list[dict[str, Any]]]] = [{}, {}]
        for slug, entries in pool.items():
            drawn = rng.sample(entries, 2 * epochs)
            for side in (0, 1):
                mine = drawn[side * epochs:(side + 1) * epochs]
                runs[side][slug] = [{**e, "epoch": k + 1} for k, e in enumerate(mine)]
        documents = [report(label=f"{side}-{index}", backend=OFFLINE, prompts_dir="prompts", prompt_hashes={},
                            scorers=versions, builds=runs[side], epochs=epochs, quality=quality) for side in (0, 1)]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--null", type=int, default=1000, help="null comparisons (default 1000)")
    parser.add_argument("--power", type=int, default=1000, help="comparisons per degraded scorer (default 1000)")
    parser.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS)
    parser.add_argument("--share", type=float, default=0.2, help="share of degraded items (default 0.2)")
    parser.add_argument("--base-rate", type=float, default=Noise.base_rate)
    parser.add_argument("--brief-sd", type=float, default=Noise.brief_sd)
    parser.add_argument("--build-sd", type=float, default=Noise.build_sd)
    parser.add_argument("--offline-seeds", type=int, default=16, help="offline builds per brief (0: skip)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the comparisons")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--drift", default=None, metavar="LOGITS",
                        help="only the drift figures: the judge this many logits harsher on one day, e.g. 0.2,0.3 "
                             "(--null comparisons each)")
    args = parser.parse_args(argv)
    if args.drift:
        noise = Noise(args.base_rate, args.brief_sd, args.build_sd)
        counts = item_counts()
        n = max(50, args.null // (10 if args.quick else 1))
        print(f"judge drift between sessions, {n} null comparisons each, {args.epochs} epochs; noise: "
              f"{noise.describe()}")
        for shift in (float(value) for value in args.drift.split(",")):
            rates = drift(n, counts, args.epochs, noise, shift, args.seed)
            print(f"  judge {shift} logit harsher on the candidate's day: gate false-positive rate judged apart "
                  f"{share(round(rates['apart'] * n), n)} (compared anyway, --allow sessions); refused "
                  f"{rates['refused']:.3f}; judged in one session (both on the harsher day) "
                  f"{share(round(rates['one session'] * n), n)}")
        return 0
    if 0 < args.offline_seeds < 2 * args.epochs:
        parser.error(f"--offline-seeds {args.offline_seeds}: two runs of {args.epochs} epochs need at least "
                     f"{2 * args.epochs} seeds per brief (or 0 to skip)")
    scale = 10 if args.quick else 1
    n_null, n_power = max(50, args.null // scale), max(50, args.power // scale)
    noise = Noise(args.base_rate, args.brief_sd, args.build_sd)
    started = time.perf_counter()
    counts = item_counts()
    print(f"briefs: {len(BRIEFS)}; epochs: {args.epochs} (the default); items per build, per brief:")
    for name, values in counts.items():
        print(f"  {name:20} {' '.join(f'{v:>3}' for v in values)}   ({sum(values)} a run of one epoch)")
    print(f"noise: {noise.describe()}")
    null = simulate(n_null, counts, args.epochs, noise, {}, args.seed)
    means = {name: statistics.median(next(r for r in c.scorers if r.scorer == name).baseline for c in null)
             for name in counts}
    print(f"degradation: {args.share:.0%} of a scorer's items fail in every candidate build (a run's mean is "
          f"about {statistics.median(means.values()):.2f} once briefs and builds vary, so it drops by about "
          f"{args.share * statistics.median(means.values()):.2f})")
    print()

    fp = sum(c.exit_code == 1 for c in null)
    print(f"(1) {n_null} null comparisons (equal quality): the gate's false-positive rate (exit 1) "
          f"{share(fp, n_null)}  (goal <= 0.05)")
    medians = {}
    for name in counts:
        rows = [next(r for r in c.scorers if r.scorer == name) for c in null]
        verdicts = Counter(r.verdict for r in rows)
        medians[name] = statistics.median(r.mde for r in rows if r.mde is not None)
        print(f"  {name:20} called worse {verdicts[WORSE] / n_null:.3f}; no detectable difference "
              f"{verdicts[SAME] / n_null:.3f}; inconclusive {verdicts[INCONCLUSIVE] / n_null:.3f}; "
              f"median MDE {medians[name]:.3f}; median build sd {statistics.median(r.spread for r in rows):.3f}")
    print()

    print(f"(2) power at a {args.share:.0%} degradation of one scorer at a time ({n_power} comparisons each):")
    powers = {}
    for k, name in enumerate(counts):
        results = simulate(n_power, counts, args.epochs, noise, {name: args.share}, args.seed + 1 + k)
        powers[name] = power(results, name)
        others = sum(any(r.verdict == WORSE and r.scorer != name for r in c.scorers) for c in results)
        goal = "  (goal >= 0.8)" if sum(counts[name]) >= 72 else ""
        print(f"  {name:20} {sum(counts[name]):>3} items a run: power {share(round(powers[name] * n_power), n_power)}"
              f"{goal}; another scorer falsely worse in {others / n_power:.3f}")
    print()

    n_check = max(50, 300 // scale)
    print(f"(3) the printed MDE is a claim: power when the true drop equals the median MDE printed in (1), "
          f"{n_check} comparisons each; as a shift of every build's pass rate (the MDE's definition: the "
          f"observed variance, shifted), and as degraded items (which also add variance):")
    for k, name in enumerate(counts):
        shifted = simulate(n_check, counts, args.epochs, noise, {}, args.seed + 100 + k, {name: medians[name]})
        degraded = simulate(n_check, counts, args.epochs, noise, {name: min(1.0, medians[name] / means[name])},
                            args.seed + 150 + k)
        print(f"  {name:20} drop {medians[name]:.3f}: power as a shift {power(shifted, name):.3f}, as degraded "
              f"items {power(degraded, name):.3f}  (claim: 0.8)")
    print()

    print(f"(4) epochs rubric_specificity needs for power 0.8 at a {args.share:.0%} degradation:")
    needed = None
    for epochs in sorted({args.epochs, 6, 8, 10, 12, 14, 16, 20, 24, 32}):
        if epochs < args.epochs:
            continue
        results = simulate(n_check, counts, epochs, noise, {"rubric_specificity": args.share}, args.seed + 200 + epochs)
        value = power(results, "rubric_specificity")
        print(f"  {epochs:>2} epochs: power {value:.3f} ({n_check} comparisons)")
        if value >= 0.8:
            needed = epochs
            break
    print(f"  -> rubric_specificity needs about {needed or 'more than 32'} epochs")
    print()

    print(f"(5) sensitivity to the build noise ({n_check} comparisons each):")
    for build_sd in (0.25, 1.0):
        varied = replace(noise, build_sd=build_sd)
        nulls = simulate(n_check, counts, args.epochs, varied, {}, args.seed + 300)
        line = f"  build sd {build_sd}: false-positive rate {sum(c.exit_code == 1 for c in nulls) / n_check:.3f}"
        for name in ("outcome_coverage", "distractor_quality"):
            degraded = simulate(n_check, counts, args.epochs, varied, {name: args.share}, args.seed + 301)
            line += f"; power {name} {power(degraded, name):.3f}"
        print(line)
    print()

    if args.offline_seeds:
        quality = {"distractors": 0.1, "untaught": 0.1, "exercises": 0.1, "rubrics": 0.1}
        pairs = max(50, 400 // scale)
        offline = offline_null(args.offline_seeds, args.epochs, pairs, quality)
        fp = sum(c.exit_code == 1 for c in offline)
        print(f"(6) offline, end to end: {args.offline_seeds} seeded builds per brief at quality "
              f"{', '.join(f'{k}={v}' for k, v in quality.items())}; {pairs} pairs of runs with disjoint seeds and "
              f"equal quality ({args.epochs} epochs each; the pairs share builds, so the rates are correlated):")
        print(f"  gate false-positive rate {share(fp, pairs)}")
        for name in counts:
            verdicts = Counter(next(r for r in c.scorers if r.scorer == name).verdict for c in offline)
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
