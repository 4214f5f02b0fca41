"""Parity on the sample and on one fixture per contract rule, in both severity modes.

Only the contract group is held to the reference (it has no other rules); the codes
come from the registry filtered by group, so a ``stay`` rule adds no case here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from stay.validate import RULES, Group
from tests.conftest import SAMPLE
from tests.fixtures.rules import MUTATIONS, make_fixture
from tests.parity.harness import assert_parity

CONTRACT = [code for code in MUTATIONS if RULES[code].group is Group.CONTRACT]


@pytest.mark.parametrize("strict", [False, True], ids=["normal", "strict"])
def test_sample_course_is_clean_in_both_validators(strict: bool) -> None:
    report = assert_parity(SAMPLE, strict)
    course = report["courses"][0]
    assert course["defects"] == []
    assert sorted(course["evaluated"]) == sorted(CONTRACT)  # every contract rule runs on a complete course


@pytest.fixture(scope="module")
def fixture_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Each rule's fixture, made once for every test here (none writes to it)."""
    made: dict[str, Path] = {}

    def of(code: str) -> Path:
        if code not in made:
            made[code] = make_fixture(code, tmp_path_factory.mktemp(code))
        return made[code]

    return of


@pytest.mark.sweep
@pytest.mark.parametrize("code", CONTRACT)
def test_rule_fixture_gives_identical_reports(code: str, fixture_of: Callable[[str], Path]) -> None:
    for strict in (False, True):  # both severity modes (the failure names which)
        report = assert_parity(fixture_of(code), strict)
        fired = {defect["code"] for defect in report["courses"][0]["defects"]}
        assert code in fired, f"strict={strict}"


@pytest.mark.sweep
@pytest.mark.parametrize("code", CONTRACT[::13])
def test_remembering_the_references_yaml_changes_none_of_its_reports(code: str,
                                                                      fixture_of: Callable[[str], Path]) -> None:
    """The harness lets the reference remember what it parsed (``RememberedYaml``) and
    its functions of text alone: its reports must be byte-identical to those of the
    reference as it ships."""
    from tests.parity.harness import reference_report

    course = fixture_of(code)
    for strict in (False, True):
        assert reference_report(course, strict) == reference_report(course, strict, remembered=False)
