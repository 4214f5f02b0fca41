"""Every rule, on its own fixture: it fires, and what it reports is snapshotted."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from stay.validate import RULES, Severity, validate_course
from tests.fixtures.mutations import MUTATIONS, make_fixture


def test_there_is_one_fixture_per_registered_rule() -> None:
    assert list(MUTATIONS) == list(RULES)


@pytest.mark.parametrize("code", list(RULES))
def test_rule_fires_on_its_fixture(code: str, tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    report = validate_course(make_fixture(code, tmp_path))
    own = [defect for defect in report.defects if defect.code == code]
    assert own, f"{code} did not fire on its fixture"
    rule = RULES[code]
    assert all(defect.severity is rule.severity for defect in own)
    assert rule.owner is None or all(defect.owner == rule.owner for defect in own)
    assert report.evaluated[code] >= len(own)
    assert [defect.as_dict() for defect in report.defects] == snapshot


@pytest.mark.parametrize("code", ["out006", "les007", "glo004"])
def test_strict_promotes_every_warning(code: str, tmp_path: Path) -> None:
    course = make_fixture(code, tmp_path)
    normal = validate_course(course)
    strict = validate_course(course, strict=True)
    assert [(d.code, d.message) for d in strict.defects] == [(d.code, d.message) for d in normal.defects]
    assert all(d.severity is Severity.FAIL for d in strict.defects)
    assert strict.evaluated == normal.evaluated and strict.passed == normal.passed
