"""`stay evals compare` on hand-made reports: the verdicts, the gate, and every guard
that makes it refuse instead of answering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stay.cli import main
from stay.errors import InvalidRun, RunsNotComparable
from stay.scoring._compare import BETTER, BUILDS, INCONCLUSIVE, ITEMS, SAME, WORSE, compare, item_changes
from tests.scoring.reports import calibration, make_report, steady, with_


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], baseline: dict[str, Any], candidate: dict[str, Any],
        *args: str) -> tuple[int, str, str]:
    paths = []
    for name, document in (("baseline", baseline), ("candidate", candidate)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    (tmp_path / "calibration.json").write_text(json.dumps(calibration(candidate)))  # its judge may gate
    code = main(["evals", "compare", *paths, *args])
    out, err = capsys.readouterr()
    return code, out, err


def verdicts(baseline: dict[str, Any], candidate: dict[str, Any], **options: Any) -> dict[str, str]:
    return {r.scorer: r.verdict for r in compare(baseline, candidate, **options).scorers}


BASE = make_report(steady(), label="baseline")


def test_equal_quality_is_no_detectable_difference_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(tmp_path, capsys, BASE, make_report(steady(), label="candidate"))
    assert code == 0
    assert out.count(SAME) == 2 and "worse" not in out.split("verdict", 1)[1]
    assert "stratified" not in out or "within each brief" in out  # the method is said, in words


def test_a_regression_is_worse_and_fires_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    candidate = make_report(steady(drop={"a": 0.25}), label="candidate")
    code, out, _err = run(tmp_path, capsys, BASE, candidate)
    assert code == 1
    assert "regression: a -0.250 (Holm-adjusted p" in out
    result = {r.scorer: r for r in compare(BASE, candidate).scorers}
    assert result["a"].verdict == WORSE and result["b"].verdict == SAME
    assert result["a"].test == BUILDS and result["a"].units == (24, 24)
    assert result["a"].high < 0 and result["a"].p_adjusted < 0.05 and result["a"].p_adjusted >= result["a"].p


def test_an_improvement_is_better_and_passes_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(tmp_path, capsys, make_report(steady(drop={"b": 0.25}), label="baseline"),
                          make_report(steady(), label="candidate"))
    assert code == 0 and BETTER in out


def test_holm_adjusts_across_scorers() -> None:
    scorers = ("a", "b", "c", "d", "e")
    result = compare(make_report(steady(scorers=scorers)), make_report(steady(scorers=scorers, drop={"a": 0.1}),
                                                                       label="c"))
    a = next(r for r in result.scorers if r.scorer == "a")
    assert a.p_adjusted == pytest.approx(min(1.0, 5 * a.p_worse))  # the smallest p is multiplied by the five tests


@pytest.mark.parametrize("allow, change, named", [
    ("judge", {"judge": "offline heuristic judge (not a model)", "judge_model": None}, "judge differs"),
    ("judge-model", {"judge_model": "claude-opus-5-5"}, "judge-model differs (baseline claude-sonnet-5-5, "
                                                        "candidate claude-opus-5-5)"),
    ("backend", {"backend": "offline"}, "backend differs (baseline anthropic, candidate offline)"),
    ("scorers", {"scorers": {"a": 2, "b": 3}}, "scorer versions differ (b v2 -> v3)"),
])
def test_each_guard_refuses_with_exit_2_naming_the_difference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], allow: str, change: dict[str, Any], named: str) -> None:
    # the judge fields are each scorer's too (a header that disagrees with them is refused on its own)
    judged = {k: v for k, v in change.items() if k in ("judge", "judge_model")}
    candidate = with_(make_report(steady(), label="candidate", **judged),
                      **{k: v for k, v in change.items() if k not in judged})
    code, out, err = run(tmp_path, capsys, BASE, candidate)
    assert code == 2 and out == ""
    assert err.startswith("refused: cannot compare") and named in err and f"--allow {allow}" in err
    if allow == "judge":
        candidate = with_(candidate, judge_model="claude-sonnet-5-5")
    code, out, _err = run(tmp_path, capsys, BASE, candidate, "--allow", allow)
    assert code == 0 and f"allowed: {named.split(' (')[0]}" in out


def test_two_differences_are_named_together_and_need_both_allowed(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    candidate = with_(make_report(steady(), label="candidate", judge_model="claude-opus-5-5"), backend="offline")
    code, _out, err = run(tmp_path, capsys, BASE, candidate, "--allow", "backend")
    assert code == 2 and "judge-model differs" in err and "backend" not in err.split("--allow")[-1]
    assert run(tmp_path, capsys, BASE, candidate, "--allow", "backend,judge-model")[0] == 0


def test_missing_briefs_are_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    builds = steady()
    del builds["brief-5"], builds["brief-2"]
    code, _out, err = run(tmp_path, capsys, BASE, make_report(builds, label="candidate"))
    assert code == 2 and "brief sets differ (missing from the candidate: brief-2, brief-5)" in err
    code, out, _err = run(tmp_path, capsys, BASE, make_report(builds, label="candidate"), "--allow", "briefs")
    assert code == 0 and "briefs left out (baseline only): brief-2, brief-5" in out


def test_a_candidate_that_scored_nothing_is_invalid_not_a_pass(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    empty = {brief: [{"a": [], "b": epoch["b"]} for epoch in epochs] for brief, epochs in steady().items()}
    code, out, err = run(tmp_path, capsys, BASE, make_report(empty, label="candidate"))
    assert code == 5 and out == ""
    assert "refused: invalid run" in err and "a scored nothing in brief brief-0" in err
    no_builds = with_(make_report(steady(), label="candidate"))
    for brief in no_builds["briefs"].values():
        brief["builds"] = []
    assert run(tmp_path, capsys, BASE, no_builds)[0] == 5


def fail(builds: dict[str, Any], scorer: str, every: int, how: str) -> dict[str, Any]:
    """Every ``every``-th item of ``scorer`` replaced by a judge failure."""
    count = 0
    for epochs in builds.values():
        for epoch in epochs:
            for i in range(len(epoch[scorer])):
                count += 1
                if count % every == 0:
                    epoch[scorer][i] = how
    return builds


@pytest.mark.parametrize("every, how, code", [(1, "error", 5), (1, "unparseable", 5), (9, "error", 5),
                                              (10, "unparseable", 0), (20, "error", 0)])
def test_more_than_a_tenth_of_failed_judge_items_makes_a_run_invalid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], every: int, how: str, code: int) -> None:
    candidate = make_report(fail(steady(), "b", every, how), label="candidate")
    got, out, err = run(tmp_path, capsys, BASE, candidate)
    assert got == code
    if code == 5:
        share = 288 // every
        assert (f"candidate {tmp_path / 'candidate.json'}: b has {share} of 288 judge items failed" in err
                and "over the 10% limit" in err)
    else:
        unparseable, errors = (288 // every, 0) if how == "unparseable" else (0, 288 // every)
        assert (f"judge failures, candidate ({tmp_path / 'candidate.json'}): {unparseable} unparseable, {errors} "
                "model or API errors, of 576 items") in out


def test_failed_items_are_left_out_of_the_means_not_scored_zero() -> None:
    perfect = {f"brief-{b}": [{"a": [1.0] * 12} for _e in range(4)] for b in range(6)}
    candidate = make_report(fail(perfect, "a", 20, "error"), label="c")
    result = compare(make_report({b: [{"a": [1.0] * 12}] * 4 for b in perfect}), candidate).scorers[0]
    assert result.candidate == result.baseline == 1.0  # 5% errors, none counted as a zero


def test_rescoring_the_same_content_pairs_items_by_content(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    harsher = steady(drop={"a": 0.25})
    baseline = make_report(steady(), label="baseline", content="course")
    candidate = make_report(harsher, label="candidate", content="course", judge_model="claude-opus-5-5",
                            reasons="stricter")
    code, out, err = run(tmp_path, capsys, baseline, candidate)
    assert code == 2 and "judge-model differs" in err
    # two judges: no one calibration covers both, so the gate is told to accept that too
    code, out, _err = run(tmp_path, capsys, baseline, candidate, "--allow", "judge-model,uncalibrated", "--items", "3")
    assert code == 1
    result = {r.scorer: r for r in compare(baseline, candidate, allow=["judge-model"]).scorers}
    assert result["a"].test == ITEMS and result["a"].verdict == WORSE and result["a"].units == (288, 288)
    assert result["b"].test == ITEMS and (result["b"].difference, result["b"].low, result["b"].high) == (0, 0, 0)
    assert "items matched by content, per scorer: a 288 of 288, b 288 of 288" in out
    assert out.count(": 1.00 -> 0.00") == 3  # the three that changed most, each with both reasons
    assert "    baseline judge:  judged a-" in out and "    candidate judge: stricter a-" in out


def test_items_are_matched_by_content_never_by_id() -> None:
    baseline = make_report(steady(scorers=("a",)), content="course")
    candidate = make_report(steady(scorers=("a",)), content="course", label="c")
    for brief in candidate["briefs"].values():
        for build in brief["builds"]:
            items = build["scorers"]["a"]["items"]
            ids = [item["item"] for item in items]
            for item, new_id in zip(items, reversed(ids), strict=True):
                item["item"] = new_id  # after a regeneration, an id names other content
    changes, coverage = item_changes(baseline, candidate)
    assert changes == [] and coverage == {"a": (288, 288)}
    assert compare(baseline, candidate).scorers[0].difference == 0


def test_an_item_diff_of_regenerated_courses_says_nothing_is_matched(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(tmp_path, capsys, BASE, make_report(steady(drop={"a": 0.25}), label="candidate"),
                          "--items")
    assert code == 1 and "no item is content-matched: the runs judged different content" in out


def test_runs_that_share_unchanged_artefacts_say_so() -> None:
    records = {"modules/m01-x/m01-l01.quiz.yaml": {"prompt": "q1", "references": "r", "schema": "s", "model": "m"},
               "modules/m01-x/m01-l01.md": {"prompt": "c1", "references": "r", "schema": "s", "model": "m"}}
    changed = {**records, "modules/m01-x/m01-l01.md": {**records["modules/m01-x/m01-l01.md"], "prompt": "c2"}}
    baseline, candidate = make_report(steady(briefs=2)), make_report(steady(briefs=2), label="c")
    assert compare(baseline, candidate).unchanged == {}  # no record, nothing claimed
    for document, recorded in ((baseline, records), (candidate, changed)):
        for brief in document["briefs"].values():
            for build in brief["builds"]:
                build["built_with"] = recorded
    assert compare(baseline, candidate).unchanged == {"brief-0": ("modules/m01-x/m01-l01.quiz.yaml",),
                                                      "brief-1": ("modules/m01-x/m01-l01.quiz.yaml",)}


def test_the_markdown_report_has_the_table_the_notes_the_chart_and_the_items(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = make_report(steady(), content="course")
    candidate = make_report(steady(drop={"a": 0.25}), content="course", judge_model="claude-opus-5-5", label="c")
    path = tmp_path / "compare.md"
    code, out, _err = run(tmp_path, capsys, baseline, candidate, "--allow", "judge-model,uncalibrated", "--items", "2",
                          "--markdown", str(path))
    text = path.read_text()
    assert code == 1 and f"wrote {path}" in out
    assert "| a | items |" in text and "| **worse** |" in text and "```mermaid\nxychart-beta" in text
    assert "- allowed: judge-model differs" in text and "## Items that changed most" in text


def test_a_run_too_small_to_exclude_a_drop_that_matters_is_inconclusive() -> None:
    noisy = {f"brief-{b}": [{"a": [1.0] * (3 + 5 * ((b + e) % 2)) + [0.0] * (9 - 5 * ((b + e) % 2))}
                            for e in range(2)] for b in range(3)}
    shifted = {brief: [{"a": [0.0, *epoch["a"][1:]]} for epoch in epochs] for brief, epochs in noisy.items()}
    result = compare(make_report(noisy), make_report(shifted, label="c")).scorers[0]
    assert result.verdict == INCONCLUSIVE and result.p > 0.05
    # three briefs, two epochs: the run detects only a drop of two fifths of the scale, and
    # its interval cannot exclude a drop of a fifth of the baseline mean
    assert result.mde is not None and result.mde > 0.4 and result.threshold == pytest.approx(0.2 * 0.4583, abs=1e-3)
    assert result.low < -result.threshold


def test_a_sensitive_run_must_exclude_a_drop_as_large_as_its_mde() -> None:
    result = compare(BASE, make_report(steady(), label="c")).scorers[0]
    assert result.mde is not None and result.baseline is not None and result.low is not None
    assert result.threshold == result.mde < 0.2 * result.baseline
    assert -result.mde < result.low < 0 and result.verdict == SAME


def test_what_cannot_be_read_or_allowed_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = with_(BASE, version=1)
    code, _out, err = run(tmp_path, capsys, old, BASE)
    assert code == 2 and "an eval report of version 1, expected 2" in err
    code, _out, err = run(tmp_path, capsys, BASE, BASE, "--allow", "prompts")
    assert code == 2 and "--allow prompts: not a difference compare can allow" in err
    code, _out, err = run(tmp_path, capsys, BASE, BASE, "--permutations", "10")
    assert code == 2 and "--permutations 10: at least 99" in err


def test_the_library_raises_the_errors_the_command_maps() -> None:
    with pytest.raises(RunsNotComparable):
        compare(BASE, with_(BASE, backend="offline"))
    with pytest.raises(InvalidRun):
        compare(BASE, make_report(fail(steady(), "a", 1, "error")))


def test_the_calibration_benchmark_simulates_real_reports_through_compare(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import sys

    import numpy as np

    from stay.scoring._report import check_report
    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("evals_calibration", ROOT / "benchmarks" / "evals_calibration.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "evals_calibration", bench)  # its dataclasses look themselves up there
    spec.loader.exec_module(bench)
    counts = {"a": (4, 8), "b": (2, 2)}
    document = bench.synthetic_run(np.random.default_rng(0), "x", counts, {"a": np.zeros(2), "b": np.zeros(2)}, 3,
                                   bench.Noise(), {})
    check_report(document)
    assert [len(b["scorers"]["a"]["items"]) for b in document["briefs"]["brief-1"]["builds"]] == [8, 8, 8]
    results = bench.simulate(3, counts, 3, bench.Noise(), {"a": 1.0}, seed=1)
    assert all(next(r for r in c.scorers if r.scorer == "a").candidate == 0.0 for c in results)
