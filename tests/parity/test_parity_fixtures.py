"""Parity on the sample and on one fixture per rule, in both severity modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLE
from tests.fixtures.rules import MUTATIONS, make_fixture
from tests.parity.harness import assert_parity


@pytest.mark.parametrize("strict", [False, True], ids=["normal", "strict"])
def test_sample_course_is_clean_in_both_validators(strict: bool) -> None:
    report = assert_parity(SAMPLE, strict)
    course = report["courses"][0]
    assert course["defects"] == []
    assert len(course["evaluated"]) == 101  # every rule runs on a complete course


@pytest.mark.parametrize("strict", [False, True], ids=["normal", "strict"])
@pytest.mark.parametrize("code", list(MUTATIONS))
def test_rule_fixture_gives_identical_reports(code: str, strict: bool, tmp_path: Path) -> None:
    report = assert_parity(make_fixture(code, tmp_path), strict)
    fired = {defect["code"] for defect in report["courses"][0]["defects"]}
    assert code in fired


@pytest.mark.parametrize("code", list(MUTATIONS)[::9])
def test_remembering_the_references_yaml_changes_none_of_its_reports(code: str, tmp_path: Path) -> None:
    """The harness lets the reference remember what it parsed (``RememberedYaml``): its
    reports must be byte-identical to those of the reference as it ships."""
    from tests.parity.harness import reference_report

    course = make_fixture(code, tmp_path)
    for strict in (False, True):
        assert reference_report(course, strict) == reference_report(course, strict, remembered=False)
