"""``stay.compare_runs`` and ``stay.read_run``: eval comparison from Python, the same
comparison ``stay evals compare`` makes from the same files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import stay
from stay.cli import main
from stay.scoring._compare import compare
from stay.scoring._judges import standings
from tests.scoring.reports import calibration, make_report, steady, with_

DROP = {"a": 0.25}
BASE = make_report(steady(), label="baseline")
WORSE = make_report(steady(drop=DROP), label="candidate")


def _written(tmp_path: Path, **documents: dict[str, Any]) -> list[Path]:
    paths = []
    for name, document in documents.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document))
        paths.append(path)
    return paths


def test_compare_runs_is_the_commands_comparison_of_the_same_files(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = _written(tmp_path, baseline=BASE, candidate=WORSE)
    assert stay.compare_runs(base, cand).regressions == []  # no calibration: a model judge's scorer does not gate
    (tmp_path / "calibration.json").write_text(json.dumps(calibration(WORSE)))  # beside the candidate: read
    found = stay.compare_runs(base, cand)
    assert isinstance(found, stay.Comparison)
    assert found == compare(stay.read_run(base), stay.read_run(cand), names=(str(base), str(cand)),
                            standing=standings(BASE, WORSE, calibration(WORSE)))
    assert found.regressions == sorted(DROP)  # the scorer the candidate dropped, and only it
    code = main(["evals", "compare", str(base), str(cand)])
    out = capsys.readouterr().out
    assert code == found.exit_code and all(f"regression: {name} " in out for name in found.regressions)
    # reports already read compare the same
    assert stay.compare_runs(stay.read_run(base), stay.read_run(cand), calibration=calibration(WORSE)).scorers == \
        found.scorers


def test_compare_runs_refuses_what_the_runs_cannot_answer_naming_the_files(tmp_path: Path) -> None:
    base, cand = _written(tmp_path, baseline=BASE, candidate=with_(WORSE, backend="offline"))
    with pytest.raises(stay.UsageError) as refused:
        stay.compare_runs(base, cand)
    assert str(base) in str(refused.value) and str(cand) in str(refused.value) and "backend" in str(refused.value)
    assert stay.compare_runs(base, cand, allow=("backend",), calibration=calibration(WORSE)).regressions == sorted(DROP)
    with pytest.raises(ValueError, match="alpha"):
        stay.compare_runs(base, cand, alpha=2.0)


def test_read_run_refuses_a_file_that_is_not_a_report_in_one_line(tmp_path: Path) -> None:
    (not_one,) = _written(tmp_path, other={"version": -1})
    for path in (not_one, tmp_path / "missing.json"):
        with pytest.raises(stay.UsageError) as refused:
            stay.read_run(path)
        assert str(path) in str(refused.value) and "\n" not in str(refused.value)
    assert stay.read_run(_written(tmp_path, baseline=BASE)[0]) == BASE
