"""The assertion every family's test module makes about each of its rules' fixtures."""

from __future__ import annotations

from pathlib import Path

from syrupy.assertion import SnapshotAssertion

from stay.validate import RULES, Group, validate_course
from tests.fixtures.rules import make_fixture


def assert_fires_on_its_fixture(code: str, tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    """Rule ``code`` fires on its fixture with its own severity and owner, and the whole
    report (every defect, not only its own) equals the family's snapshot. The report
    runs the contract and the rule's own group: a contract rule's snapshot is what
    ``stay validate`` prints, and adding a ``stay`` rule changes no contract snapshot."""
    rule = RULES[code]
    report = validate_course(make_fixture(code, tmp_path), select=(Group.CONTRACT, rule.group))
    own = [defect for defect in report.defects if defect.code == code]
    assert own, f"{code} did not fire on its fixture"
    assert all(defect.severity is rule.severity for defect in own)
    assert rule.owner is None or all(defect.owner == rule.owner for defect in own)
    assert report.evaluated[code] >= len(own)
    assert [defect.as_dict() for defect in report.defects] == snapshot
