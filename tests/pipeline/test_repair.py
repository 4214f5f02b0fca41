"""Bounded repair, routed on owner, driven by defects the offline backend injects."""

from __future__ import annotations

from pathlib import Path

import pytest

from stay.pipeline import approve, build_course, run_command
from stay.testing import RiggedBackend
from tests.conftest import ROOT
from tests.pipeline.test_build import quiet

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"  # 6 lessons


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAY_REPAIR_ROUNDS", raising=False)


def _codes(result: object) -> list[str]:
    return [d.code for d in result.validation.defects]  # type: ignore[attr-defined]


def test_fixable_defects_are_repaired_until_nothing_remains(tmp_path: Path) -> None:
    # the first answer of each damaged stage is damaged; a repair's answer is not
    backend = RiggedBackend(defects={"banned-phrase": 6, "missing-why-wrong": 6, "exercise-level": 6,
                                      "vague-criterion": 1})
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    report = result.repair
    assert report is not None and report.stop == "nothing remains"
    (only,) = report.rounds
    assert only.actionable_before > 0 and only.actionable_after == 0
    assert len(only.regenerated) == 6 * 3 + 1  # every lesson's three files, and the capstone
    assert result.validation is not None and result.validation.defects == ()


def test_a_round_that_reduces_no_count_stops_repair(tmp_path: Path) -> None:
    backend = RiggedBackend(defects={"banned-phrase": None})  # every answer, repairs included
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert result.repair is not None and result.repair.stop == "a round reduced no count"
    assert [(r.actionable_before, r.actionable_after) for r in result.repair.rounds] == [(6, 6)]
    assert _codes(result) == ["les009"] * 6


def test_the_round_limit_stops_repair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAY_REPAIR_ROUNDS", "1")
    backend = RiggedBackend(defects={"banned-phrase": 8})  # 6 in the wave, 2 of the 6 repairs
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert result.repair is not None and result.repair.stop == "round limit"
    assert [(r.actionable_before, r.actionable_after) for r in result.repair.rounds] == [(6, 2)]
    again = run_command("repair", result.slug, courses_dir=tmp_path, progress=quiet)
    assert again.repair is not None and again.repair.stop == "nothing remains"


def test_a_defect_owned_by_a_gated_stage_is_reported_never_repaired(tmp_path: Path) -> None:
    backend = RiggedBackend(defects={"banned-verb": None})
    result = build_course(HTTP, courses_dir=tmp_path, yes=False, backend=backend, progress=quiet)
    assert result.stopped_at == "design gate"
    outcomes = (result.course_dir / "outcomes.yaml").read_bytes()
    approve(result.slug, "design", courses_dir=tmp_path, by="reviewer")  # --yes would refuse the FAIL; a person signs
    done = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert done.repair is not None and done.repair.stop == "nothing actionable"
    assert done.repair.rounds == ()
    assert [(d.code, d.owner) for d in done.repair.unrepaired] == [("out005", "outcomes")]
    assert (result.course_dir / "outcomes.yaml").read_bytes() == outcomes


def test_a_retrieval_defect_goes_through_the_glossary_to_the_introducing_quiz(tmp_path: Path) -> None:
    backend = RiggedBackend(defects={"no-retrieval": 6})
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert result.repair is not None and result.repair.stop == "nothing remains"
    (only,) = result.repair.rounds
    assert only.actionable_before == 6  # one ret001 per lesson's term
    assert all(path.endswith(".quiz.yaml") for path in only.regenerated)
    assert len(only.regenerated) == 6


def test_repair_never_touches_an_approved_file(tmp_path: Path) -> None:
    backend = RiggedBackend(defects={"banned-phrase": None})
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    gated = [p for p in (result.course_dir).rglob("*") if p.name.endswith(".plan.yaml")
             or p.name in ("audience.yaml", "curriculum.yaml", "outcomes.yaml", "assessment.yaml")]
    before = {p: p.read_bytes() for p in gated}
    run_command("repair", result.slug, courses_dir=tmp_path, backend=backend, progress=quiet)
    assert {p: p.read_bytes() for p in gated} == before
    from stay.pipeline import gate_status

    assert gate_status(result.slug, courses_dir=tmp_path) == {"design": "approved", "plan": "approved"}
