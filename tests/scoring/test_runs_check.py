"""`compare` on run files that lie: one broken run made from a good one per check in the
registry (``_report.CHECKS``), each refused or warned on as the registry declares."""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stay.cli import main
from stay.errors import InvalidRun, RunsNotComparable, exit_code
from stay.scoring._compare import SHOWN, compare
from stay.scoring._defaults import FAILURE_GAP, MAX_FAILED
from stay.scoring._report import CHECKS, INVALID, REFUSE, WARN, failed_entry, run_checks
from stay.testing import InjectedFault
from tests.scoring.reports import make_report, steady

Pair = tuple[dict[str, Any], dict[str, Any]]


def good(label: str, prompts: str, drop: float = 0.0) -> dict[str, Any]:
    """A run as the suite writes one: each build's course hash and seed, the models, the prompts."""
    report = make_report(steady(drop={"a": drop}), label=label)
    for brief, entry in report["briefs"].items():
        for build in entry["builds"]:
            build["seed"] = f"7/{brief}/{build['epoch']}"
            build["course_sha256"] = hashlib.sha256(f"{label}/{brief}/{build['epoch']}".encode()).hexdigest()
    report["models"] = {"generate": "claude-sonnet-5-5"}
    report["prompts"] = {"dir": prompts, "sha256": {"lesson.yaml": hashlib.sha256(prompts.encode()).hexdigest()}}
    return report


def pair() -> Pair:
    return good("baseline", "prompts"), good("candidate", "candidate-prompts", drop=0.1)


def first(report: dict[str, Any]) -> list[dict[str, Any]]:
    builds: list[dict[str, Any]] = report["briefs"]["brief-0"]["builds"]
    return builds


def _same_epoch_twice(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    first(cand)[1] = copy.deepcopy(first(cand)[0])
    return base, cand


def _same_course_and_seed_twice(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    first(cand)[1].update(seed=first(cand)[0]["seed"], course_sha256=first(cand)[0]["course_sha256"])
    return base, cand


def _rescored_course_twice(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    for build in first(cand)[:2]:  # `stay evals score e01/x e02/x`: no seed recorded, one course at two epochs
        build.update(seed=None, course_sha256=first(cand)[0]["course_sha256"])
    return base, cand


def _seed_ignored(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    for build in first(cand):  # the offline backend without --stay-quality builds one course per brief
        build["course_sha256"] = first(cand)[0]["course_sha256"]
    return base, cand


def _interrupted(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    first(cand).pop()
    return base, cand


def _score(value: object) -> Callable[[dict[str, Any], dict[str, Any]], Pair]:
    def broken(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
        first(cand)[0]["scorers"]["a"]["items"][0]["score"] = value
        return base, cand
    return broken


def _seeded_under_another_brief(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    first(cand)[0]["seed"] = f"7/brief-1/{first(cand)[0]['epoch']}"
    return base, cand


def _another_judge(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    first(cand)[0]["scorers"]["a"]["judge"] = "model:claude-haiku-5"
    return base, cand


def _other_models(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    cand["models"] = {"generate": "claude-opus-5-5"}
    return base, cand


def _a_against_a(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    return base, {**copy.deepcopy(base), "label": "candidate"}


def _same_prompts(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    cand["prompts"] = copy.deepcopy(base["prompts"])
    return base, cand


def _judge_failed_more(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    builds = [b for entry in cand["briefs"].values() for b in entry["builds"]]
    items = sum(len(b["scorers"]["a"]["items"]) for b in builds)
    # more than the warning's gap, within the invalid run's limit: a legal run, warned on
    for build in builds[:math.ceil(items * (FAILURE_GAP + MAX_FAILED) / 2)]:
        build["scorers"]["a"]["items"][0].update(score=None, failure="unparseable")
    return base, cand


def _mixed_knobs(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    for build in first(cand):  # two builds of one run made under two --stay-quality knobs
        build["quality"] = {"distractors": 0.2 if build is first(cand)[0] else 0.0}
    cand["quality"] = {"distractors": 0.0}
    return base, cand


def _header_knob_not_the_builds(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    for entry in cand["briefs"].values():
        for build in entry["builds"]:
            build["quality"] = {"distractors": 0.2}
    cand["quality"] = {}
    return base, cand


def _failed_build(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
    first(cand)[0] = failed_entry(InjectedFault("injected error in stage outcomes"), epoch=first(cand)[0]["epoch"],
                                  seed=first(cand)[0]["seed"])
    return base, cand


def _session(key: str, value: str | None, run: int = 1) -> Callable[[dict[str, Any], dict[str, Any]], Pair]:
    """Every build of one run (0 the baseline) recorded in another session (None: none recorded)."""
    def broken(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
        for entry in (base, cand)[run]["briefs"].values():
            for build in entry["builds"]:
                build.pop(key, None)
                build.update({key: value} if value else {})
        return base, cand
    return broken


def _built_by(backend: str, builds: int | None = None) -> Callable[[dict[str, Any], dict[str, Any]], Pair]:
    """The candidate's builds (the first ``builds`` of brief-0; None: all) made by ``backend``."""
    def broken(base: dict[str, Any], cand: dict[str, Any]) -> Pair:
        chosen = first(cand)[:builds] if builds else [b for e in cand["briefs"].values() for b in e["builds"]]
        for build in chosen:
            build["built_by"] = [backend]
        return base, cand
    return broken


BREAKERS: dict[str, list[Callable[[dict[str, Any], dict[str, Any]], Pair]]] = {
    "duplicated-builds": [_same_epoch_twice, _same_course_and_seed_twice],
    "same-courses": [_rescored_course_twice, _seed_ignored],
    "partial-run": [_interrupted],
    "bad-scores": [_score(float("nan")), _score(float("inf")), _score(1.5), _score(-0.5), _score("0.5"),
                   _score(True)],
    "seeded-elsewhere": [_seeded_under_another_brief],
    "judge-fields": [_another_judge],
    "models": [_other_models],
    "quality-knobs": [_mixed_knobs, _header_knob_not_the_builds],
    "failed-builds": [_failed_build],
    "identical-runs": [_a_against_a],
    "identical-prompts": [_same_prompts],
    "failure-rates": [_judge_failed_more],
    "sessions": [_session("judged_in", "s-another-day"), _session("judged_in", None, run=0)],
    "backend": [_built_by("offline"), _built_by("offline", builds=1)],
    "built-apart": [_session("built_in", "s-another-day"), _session("built_in", None, run=0)],
}
CASES = [(check, breaker) for check in CHECKS for breaker in BREAKERS.get(check.name, [])]


def test_every_check_has_a_broken_run() -> None:
    assert set(BREAKERS) == {check.name for check in CHECKS}


def test_a_good_pair_has_no_findings() -> None:
    assert run_checks(("baseline", pair()[0]), ("candidate", pair()[1])) == []
    assert compare(*pair()).warnings == ()


@pytest.mark.parametrize("check, breaker", CASES, ids=[f"{c.name}-{BREAKERS[c.name].index(b)}" for c, b in CASES])
def test_each_broken_run_is_refused_or_warned_on_as_its_check_says(check: Any, breaker: Any) -> None:
    base, cand = breaker(*pair())
    names = ("runs/base.json", "runs/cand.json")
    mine = [f for f in run_checks((f"baseline {names[0]}", base), (f"candidate {names[1]}", cand))
            if f.check == check.name]
    assert mine and all(f.kind == check.kind and "\n" not in f.message for f in mine)
    assert all(f.message.split(":")[0] in (f"baseline {names[0]}", f"candidate {names[1]}") for f in mine)
    if check.kind in (REFUSE, INVALID):
        with pytest.raises(RunsNotComparable if check.kind == REFUSE else InvalidRun) as refused:
            compare(base, cand, names=names)
        assert all(f.message in str(refused.value) for f in mine)
    else:
        assert check.kind == WARN
        assert {f.message for f in mine} <= set(compare(base, cand, names=names).warnings)


def test_a_refusal_names_the_first_problems_and_counts_the_rest() -> None:
    base, cand = pair()
    for entry in cand["briefs"].values():
        entry["builds"].pop()
    with pytest.raises(RunsNotComparable) as refused:
        compare(base, cand)
    assert str(refused.value).count("an interrupted or partial run") == SHOWN
    assert str(refused.value).endswith(f"and {len(cand['briefs']) - SHOWN} more like these")


def test_different_models_pass_with_allow_models_and_are_named() -> None:
    base, cand = _other_models(*pair())
    result = compare(base, cand, allow=["models"])
    assert "claude-sonnet-5-5 -> claude-opus-5-5" in result.allowed["models"]


def test_runs_built_by_other_backends_pass_with_allow_backend_and_are_named() -> None:
    base, cand = _built_by("offline")(*pair())
    assert base["backend"] == cand["backend"]  # the header agrees: only the builds' own record tells
    result = compare(base, cand, allow=["backend"])
    assert "built by offline, baseline baseline by anthropic" in result.allowed["backend"]


def test_allow_backend_compares_and_every_output_says_the_backends_differ(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for name, document in zip(("baseline", "candidate"), _built_by("offline")(*pair()), strict=True):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    markdown, html = tmp_path / "compare.md", tmp_path / "compare.html"
    code = main(["evals", "compare", *paths, "--allow", "backend", "--markdown", str(markdown), "--html", str(html)])
    out, err = capsys.readouterr()
    said = "briefs.*.builds.built_by: built by offline"
    assert code in (0, 1), err
    assert any(line.startswith("allowed: ") and said in line for line in out.splitlines()), out
    assert said in markdown.read_text(encoding="utf-8")
    assert said in html.read_text(encoding="utf-8")


def test_the_command_line_refuses_in_one_line_naming_the_file_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = _score(float("nan"))(*pair())
    paths = []
    for name, document in (("baseline", base), ("candidate", cand)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document))  # NaN, as json.dumps writes it
        paths.append(str(path))
    code = main(["evals", "compare", *paths])
    out, err = capsys.readouterr()
    assert code == exit_code(RunsNotComparable("")) and out == ""
    assert err.count("\n") == 1 and err.startswith("refused: ") and paths[1] in err
    assert "briefs.brief-0.builds[0].scorers.a.items[0].score: nan is not finite" in err


def test_warnings_are_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = _same_prompts(*pair())
    paths = []
    for name, document in (("baseline", base), ("candidate", cand)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    main(["evals", "compare", *paths])
    out, _err = capsys.readouterr()
    assert f"warning: candidate {paths[1]}: prompts.sha256: built with the same prompt files" in out
