"""The compare command detects an injected 20% degradation, and nothing between two
identical runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stay.scoring._compare import compare, sign_test
from tests.conftest import ROOT

EVAL_BRIEFS = sorted((ROOT / "evals" / "briefs").glob("*.yaml"))


def _run_suite(tmp: Path, label: str, quality: dict[str, float]) -> Path:
    output = tmp / f"{label}.json"
    args = [sys.executable, "-m", "pytest", "evals/", "-q", "-p", "no:cacheprovider", "--stay-backend", "offline",
            "--stay-label", label, "--stay-output", str(output), "--stay-courses", str(tmp / "courses" / label)]
    for key, value in quality.items():
        args += ["--stay-quality", f"{key}={value}"]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    return output


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("evals")
    return {
        "baseline": _run_suite(tmp, "baseline", {}),
        "again": _run_suite(tmp, "again", {}),
        "degraded": _run_suite(tmp, "degraded", {"distractors": 0.2, "untaught": 0.2, "exercises": 0.2}),
    }


def test_the_report_records_scores_items_models_prompt_hashes_and_usage(reports: dict[str, Path]) -> None:
    report = json.loads(reports["baseline"].read_text())
    assert len(report["briefs"]) == len(EVAL_BRIEFS) >= 6
    assert report["models"]["judging"] and report["judge"].startswith("offline heuristic judge (not a model)")
    assert {"common.md", "content.md", "reference/bloom-verbs.yaml"} <= set(report["prompts"]["sha256"])
    entry = next(iter(report["briefs"].values()))
    assert entry["build"]["usage"]["input_tokens"] > 0 and "cost" in entry["build"]
    item = entry["scorers"]["outcome_coverage"]["items"][0]
    assert {"item", "score", "reason"} <= set(item)


def test_two_identical_runs_write_the_same_report_bytes_but_the_label(reports: dict[str, Path]) -> None:
    a = json.loads(reports["baseline"].read_text())
    b = json.loads(reports["again"].read_text())
    a.pop("label"), b.pop("label")
    assert a == b


def test_identical_runs_show_no_detectable_difference(reports: dict[str, Path]) -> None:
    baseline = json.loads(reports["baseline"].read_text())
    again = json.loads(reports["again"].read_text())
    assert {r.verdict for r in compare(baseline, again)} == {"no detectable difference"}


def test_a_20_percent_degradation_is_detected_at_p_below_005(reports: dict[str, Path]) -> None:
    baseline = json.loads(reports["baseline"].read_text())
    degraded = json.loads(reports["degraded"].read_text())
    results = {r.scorer: r for r in compare(baseline, degraded)}
    for scorer in ("distractor_quality", "outcome_coverage", "exercise_alignment"):
        assert results[scorer].verdict == "worse" and results[scorer].p_value < 0.05, results[scorer]
        assert results[scorer].difference is not None and results[scorer].difference < 0
    assert results["validator"].verdict == "no detectable difference"  # the validator cannot see it


def test_the_command_gates_a_regression_and_writes_markdown(reports: dict[str, Path], tmp_path: Path) -> None:
    markdown = tmp_path / "compare.md"
    worse = subprocess.run([sys.executable, "-m", "stay.cli", "evals", "compare", str(reports["baseline"]),
                            str(reports["degraded"]), "--markdown", str(markdown)],
                           cwd=ROOT, capture_output=True, text=True, check=False)
    assert worse.returncode == 1 and "regression: distractor_quality" in worse.stdout
    text = markdown.read_text()
    assert "| distractor_quality |" in text and "```mermaid\nxychart-beta" in text
    same = subprocess.run([sys.executable, "-m", "stay.cli", "evals", "compare", str(reports["baseline"]),
                           str(reports["again"])], cwd=ROOT, capture_output=True, text=True, check=False)
    assert same.returncode == 0 and "worse" not in same.stdout
    better = subprocess.run([sys.executable, "-m", "stay.cli", "evals", "compare", str(reports["degraded"]),
                             str(reports["baseline"])], cwd=ROOT, capture_output=True, text=True, check=False)
    assert better.returncode == 0 and "better" in better.stdout


def test_rescoring_saved_courses_needs_no_generation(reports: dict[str, Path], tmp_path: Path) -> None:
    courses = sorted(p for p in (reports["degraded"].parent / "courses" / "degraded").iterdir() if p.is_dir()
                     and not p.name.startswith("."))
    output = tmp_path / "rescored.json"
    done = subprocess.run([sys.executable, "-m", "stay.cli", "evals", "score", *map(str, courses), "--output",
                           str(output), "--backend", "offline"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    rescored = json.loads(output.read_text())
    assert all(not entry["built"] for entry in rescored["briefs"].values())
    degraded = json.loads(reports["degraded"].read_text())
    assert rescored["means"] == degraded["means"]


@pytest.mark.parametrize("better, worse, p", [(0, 0, 1.0), (5, 5, 1.0), (0, 6, 0.03125), (0, 16, 2 * 0.5**16),
                                              (1, 9, 0.021484375)])
def test_the_exact_sign_test(better: int, worse: int, p: float) -> None:
    assert sign_test(better, worse) == pytest.approx(p)
