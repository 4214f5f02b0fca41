"""``stay evals plan``: the epochs it recommends give the power it promises when simulated
through ``compare``, one fewer does not; its floor and the permutation test's smallest p
are honoured; bad baselines are one line; the suite warns when a run is below the plan."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

from stay.cli import main
from stay.errors import UsageError
from stay.scoring import DEFAULT_EPOCHS, epochs_warning
from stay.scoring._compare import WORSE, compare
from stay.scoring._defaults import ALPHA, EFFECT, POWER
from stay.scoring._report import write_report
from stay.scoring._stats import FIRST, LIMIT, brief_noise, plan_epochs, power_at, smallest_p
from tests.conftest import ROOT
from tests.scoring.reports import Item, make_report

SIMULATED = 300
"""Comparisons per design in the simulation: a simulated power is within about 0.05 of the truth."""
PERMUTATIONS = 999
"""Enough for p-values to resolve the strictest level of two scorers (0.025)."""
BASELINE_EPOCHS = 80
"""The baseline the plan reads: long, so its variance estimate is close to the truth and the
test is of the plan, not of one small baseline's luck (20 epochs put one brief's variance at
twice its true value, and the plan 0.09 under the gate's simulated power)."""


def _module(name: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def _noisy(rng: np.random.Generator, briefs: int, epochs: int, items: dict[str, int], rate: float,
           build_sd: float) -> dict[str, list[dict[str, list[Item]]]]:
    """Builds whose pass rate varies from build to build (logit-normal around ``rate``)."""
    logit = math.log(rate / (1 - rate))
    found: dict[str, list[dict[str, list[Item]]]] = {}
    for b in range(briefs):
        found[f"brief-{b}"] = [
            {name: [float(s) for s in rng.random(n) < 1 / (1 + math.exp(-(logit + rng.normal(0, build_sd))))]
             for name, n in items.items()} for _epoch in range(epochs)]
    return found


@pytest.mark.slow
def test_the_planned_epochs_give_the_planned_power_through_compare(monkeypatch: pytest.MonkeyPatch) -> None:
    """A synthetic baseline under the calibration benchmark's noise model (the briefs fixed,
    as they are in use): at the planned epochs, a 20% degradation of the planned scorer is
    caught by compare's gate as often as the plan says (at least the goal, within the
    simulation's error); one epoch fewer falls short of the goal, noticeably."""
    bench = _module("evals_calibration", ROOT / "benchmarks" / "evals_calibration.py", monkeypatch)
    counts = {"outcome_coverage": (4, 8, 12, 12, 16, 20), "rubric_specificity": (1, 2, 2, 3, 3, 3)}
    target, noise = "outcome_coverage", bench.Noise()
    rng = np.random.default_rng(1)
    effects = {name: rng.normal(0, noise.brief_sd, len(per)) for name, per in counts.items()}
    baseline = bench.synthetic_run(rng, "baseline", counts, effects, BASELINE_EPOCHS, noise, {})
    found = plan_epochs(baseline, path="synthetic")
    planned = next(s for s in found.scorers if s.scorer == target).needed
    assert planned is not None and planned > FIRST  # else there is no "one fewer" to simulate

    def simulated(epochs: int, seed: int) -> float:
        sim = np.random.default_rng(seed)
        caught = 0
        for index in range(SIMULATED):
            base = bench.synthetic_run(sim, f"b{index}", counts, effects, epochs, noise, {})
            cand = bench.synthetic_run(sim, f"c{index}", counts, effects, epochs, noise, {target: EFFECT})
            result = compare(base, cand, alpha=ALPHA, permutations=PERMUTATIONS)
            caught += next(r for r in result.scorers if r.scorer == target).verdict == WORSE
        return caught / SIMULATED

    error = math.sqrt(POWER * (1 - POWER) / SIMULATED)  # a simulated power's standard error near the goal
    noise_of = brief_noise(baseline, target)
    at_plan, one_fewer = simulated(planned, 2), simulated(planned - 1, 3)
    assert at_plan >= POWER - 2 * error
    assert one_fewer < POWER and at_plan - one_fewer > 2 * math.sqrt(2) * error
    for epochs, power in ((planned, at_plan), (planned - 1, one_fewer)):
        assert power_at(noise_of, epochs, EFFECT, found.level) == pytest.approx(power, abs=3 * error)


def test_the_plan_is_the_fewest_epochs_that_reach_the_goal() -> None:
    rng = np.random.default_rng(4)
    items = {"long": 24, "short": 2}
    document = make_report(_noisy(rng, 6, 3, items, 0.8, 0.5))
    found = plan_epochs(document, path="base.json")
    assert found.tested == len(items) and found.level == pytest.approx(ALPHA / len(items))
    for row in found.scorers:
        noise = brief_noise(document, row.scorer)
        assert row.needed is not None and power_at(noise, row.needed, EFFECT, found.level) >= POWER
        assert row.needed == FIRST or power_at(noise, row.needed - 1, EFFECT, found.level) < POWER
        assert row.power_at_run == power_at(noise, document["epochs"], EFFECT, found.level)
        assert row.power_at_default == power_at(noise, DEFAULT_EPOCHS, EFFECT, found.level)
        assert row.items == items[row.scorer] * len(document["briefs"])
    long, short = (next(r for r in found.scorers if r.scorer == name) for name in ("long", "short"))
    assert short.needed is not None and long.needed is not None and short.needed > long.needed


def test_the_line_names_the_scorers_short_at_the_default_and_what_they_need() -> None:
    found = plan_epochs(make_report(_noisy(np.random.default_rng(5), 6, 3, {"long": 24, "short": 1}, 0.8, 0.5)),
                        path="base.json")
    short = [s for s in found.scorers if s.needed is None or s.needed > DEFAULT_EPOCHS]
    assert [s.scorer for s in short] == ["short"]  # one item a build: far from the goal at the default
    need = f"needs {short[0].needed} epochs" if short[0].needed is not None else f"needs more than {LIMIT} epochs"
    assert found.verdict().startswith(f"at the default {DEFAULT_EPOCHS} epochs, 1 scorer cannot reach power")
    assert "short (power" in found.verdict() and need in found.verdict() and "long" not in found.verdict()
    assert found.text().rstrip().endswith(found.verdict())


def test_a_comparison_says_which_scorers_its_epochs_cannot_hold_to_the_goal_and_what_they_need() -> None:
    """compare's own output (every format goes through ``_notes``) names the scorers the
    baseline's plan puts short at the comparison's epochs, with the epochs each needs."""
    from stay.scoring._compare import text

    items = {"long": 24, "short": 1}
    baseline = make_report(_noisy(np.random.default_rng(5), 6, 3, items, 0.8, 0.5), label="base")
    candidate = make_report(_noisy(np.random.default_rng(8), 6, 3, items, 0.8, 0.5), label="cand")
    result = compare(baseline, candidate, names=("base.json", "cand.json"), permutations=999)
    short = plan_epochs(baseline, path="base.json").short(3)
    assert short and len(result.power) == len(short)  # the plan's short scorers, one line each
    for line, s in zip(result.power, short, strict=True):
        assert line.startswith(f"{s.scorer} would catch a 20% drop") and "stay evals plan base.json" in line
    assert [line for line in text(result).splitlines() if line.startswith("power: ")] == \
        [f"power: {line}" for line in result.power]


def test_a_plan_short_at_some_epochs_has_the_rows_of_the_scorers_below_the_goal_there() -> None:
    """compare's notes plan only the scorers short at its epochs (each simulated power costs):
    those rows are the full plan's, its Holm level still counts every scorer."""
    document = make_report(_noisy(np.random.default_rng(5), 6, 3, {"long": 24, "short": 1}, 0.8, 0.5))
    full = plan_epochs(document, path="base.json")
    part = plan_epochs(document, path="base.json", short_at=DEFAULT_EPOCHS)
    kept = tuple(s for s in full.scorers
                 if power_at(brief_noise(document, s.scorer), DEFAULT_EPOCHS, EFFECT, full.level) < POWER)
    assert 0 < len(kept) < len(full.scorers) and part.scorers == kept
    assert part.level == full.level and part.short(DEFAULT_EPOCHS) == full.short(DEFAULT_EPOCHS)


def test_builds_that_happened_to_agree_are_planned_at_the_binomial_floor() -> None:
    """Identical builds show no variance, but a build of n 0/1 items at rate p varies by at
    least p(1 - p)/n: the plan is the one for that variance, never the fewest epochs."""
    items, rate = 4, 0.75
    passed = round(items * rate)
    build: list[Item] = [1.0 if i < passed else 0.0 for i in range(items)]
    same = {f"brief-{b}": [{"s": build} for _e in range(3)] for b in range(6)}
    found = plan_epochs(make_report(same), path="same.json")
    row = found.scorers[0]
    assert row.build_sd == 0.0 and row.needed is not None and row.needed > FIRST
    noise = brief_noise(make_report(same), "s")
    assert power_at(noise, row.needed - 1, EFFECT, found.level) < POWER


def test_a_scorer_that_never_passes_has_no_drop_to_plan_for_and_is_never_short() -> None:
    builds = _noisy(np.random.default_rng(8), 6, 3, {"never": 6}, 0.5, 0.0)
    for epochs in builds.values():
        for epoch in epochs:
            epoch["never"] = [0.0] * len(epoch["never"])
    found = plan_epochs(make_report(builds), path="zero.json")
    assert found.scorers[0].drop == 0 and found.scorers[0].needed is None and found.short(FIRST) == []
    assert found.warning(FIRST) is None and " n/a " in found.text()


def test_epochs_too_few_for_the_permutation_test_to_reach_the_level_have_no_power() -> None:
    """One brief, builds that never vary: the drop is certain to show, but with N builds per
    run the permutation test's smallest p is 1 / C(2N, N), and below the level it must be."""
    one: dict[str, list[dict[str, list[Item]]]] = {"brief-0": [{"s": [1.0] * 30} for _e in range(3)]}
    found = plan_epochs(make_report(one), path="one.json")
    reachable = next(n for n in range(FIRST, LIMIT) if 1 / math.comb(2 * n, n) < found.level)
    noise = brief_noise(make_report(one), "s")
    assert found.scorers[0].needed == reachable and smallest_p(1, reachable - 1) >= found.level
    assert power_at(noise, reachable - 1, EFFECT, found.level) == 0.0


def test_the_command_prints_the_plan_and_its_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "base.json"
    write_report(path, make_report(_noisy(np.random.default_rng(6), 6, 3, {"a": 12, "b": 6}, 0.8, 0.5)))
    assert main(["evals", "plan", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"plan from {path} (run, 3 epochs, 6 briefs)") and "power at 3" in text
    assert f"power at {DEFAULT_EPOCHS}" in text
    assert main(["evals", "plan", str(path), "--json", "--effect", "0.3"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert document["effect"] == 0.3 and [s["scorer"] for s in document["scorers"]] == ["a", "b"]
    assert document["default_epochs"] == DEFAULT_EPOCHS and document["level"] == pytest.approx(ALPHA / 2)


@pytest.mark.parametrize("case", ["one build per brief", "nothing scored", "damaged", "missing", "not a report",
                                  "bad option"])
def test_a_baseline_that_cannot_be_planned_from_is_one_line_and_exit_2(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, extra = tmp_path / "base.json", []
    if case == "one build per brief":
        write_report(path, make_report({"brief-0": [{"a": [1.0, 0.0]}], "brief-1": [{"a": [1.0, 1.0]}]}))
    elif case == "nothing scored":
        write_report(path, make_report({"brief-0": [{"a": ["error", "unparseable"]}, {"a": ["error"]}]}))
    elif case == "damaged":
        path.write_text('{"version": 2, "briefs": {')
    elif case == "not a report":
        path.write_text("[]")
    elif case == "bad option":
        write_report(path, make_report(_noisy(np.random.default_rng(6), 2, 2, {"a": 4}, 0.8, 0.5)))
        extra = ["--power", "1"]
    assert main(["evals", "plan", str(path), *extra]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    if case == "one build per brief":
        assert str(path) in err and "--stay-epochs" in err and "build-to-build variance" in err
    elif case == "nothing scored":
        assert str(path) in err and "no scorer scored an item" in err
    elif case != "bad option":
        assert str(path) in err


def test_the_suite_warns_when_its_epochs_are_below_the_plan(tmp_path: Path) -> None:
    path = tmp_path / "candidate.json"
    assert epochs_warning(path, 2, asked=False) is None  # no previous report: nothing to plan from
    write_report(path, make_report(_noisy(np.random.default_rng(7), 6, 3, {"long": 24, "short": 2}, 0.8, 0.5)))
    found = plan_epochs(make_report(_noisy(np.random.default_rng(7), 6, 3, {"long": 24, "short": 2}, 0.8, 0.5)),
                        path=str(path))
    most = max(s.needed for s in found.scorers if s.needed is not None)
    line = epochs_warning(path, most - 1, asked=False)
    assert line is not None and line.startswith(f"warning: --stay-epochs {most - 1} is below")
    short = [s for s in found.scorers if s.needed is not None and s.needed > most - 1]
    assert all(f"{s.scorer} needs {s.needed} epochs" in line for s in short)
    assert all(s.scorer not in line for s in found.scorers if s not in short)
    assert epochs_warning(path, most, asked=False) is None
    path.write_text("{")  # damaged: the run is about to replace it, and it says nothing
    assert epochs_warning(path, 2, asked=False) is None
    with pytest.raises(UsageError, match=re.escape(str(path))):  # asked for by name: a usage error, in one line
        epochs_warning(path, 2, asked=True)


def _declared_defaults(suite: Any) -> dict[str, Any]:
    """The options ``evals/conftest.py`` declares, each at its declared default."""
    found: dict[str, Any] = {}

    def addoption(name: str, **declared: Any) -> None:
        found[name] = declared.get("default", False if declared.get("action") == "store_true" else None)

    suite.pytest_addoption(SimpleNamespace(getgroup=lambda _name: SimpleNamespace(addoption=addoption)))
    return found


def test_the_suite_prints_the_warning_at_the_start_of_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """evals/conftest.py's session start, called directly: the line goes to the terminal."""
    suite = _module("stay_evals_conftest", ROOT / "evals" / "conftest.py", monkeypatch)
    baseline = tmp_path / "baseline.json"
    write_report(baseline, make_report(_noisy(np.random.default_rng(7), 6, 3, {"long": 24, "short": 2}, 0.8, 0.5)))
    written: list[str] = []
    options = _declared_defaults(suite)  # every option the suite declares, at its default: none hand-listed
    options.update({"--stay-output": str(tmp_path / "candidate.json"), "--stay-epochs": 2,
                    "--stay-backend": "offline", "--stay-courses": str(tmp_path / "courses"),
                    "--stay-plan-from": str(baseline)})
    terminal = SimpleNamespace(write_line=written.append)
    config = SimpleNamespace(getoption=options.__getitem__,
                             pluginmanager=SimpleNamespace(get_plugin=lambda _name: terminal))
    suite.pytest_sessionstart(SimpleNamespace(config=config))
    assert written == [epochs_warning(baseline, 2, asked=True)] and written[0].startswith("warning: ")
    options["--stay-plan-from"] = str(tmp_path / "missing.json")
    with pytest.raises(pytest.UsageError, match=r"--stay-plan-from: .*missing\.json"):
        suite.pytest_sessionstart(SimpleNamespace(config=config))
