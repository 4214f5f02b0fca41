"""Every rule has one fixture, in the module of its family, and strict mode promotes warnings.

Each family's rules are run on their fixtures, and snapshotted, by the family's own
test module: ``tests/validate/rules/test_<prefix>.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stay.validate import RULES, Severity, validate_course
from stay.validate._check import FAMILIES, family_rules, prefix_of
from tests.fixtures.rules import FAMILIES as FIXTURE_FAMILIES
from tests.fixtures.rules import MUTATIONS, codes_of, make_fixture

TESTS = Path(__file__).resolve().parent / "rules"


def test_there_is_one_fixture_per_registered_rule() -> None:
    assert list(MUTATIONS) == list(RULES)


@pytest.mark.parametrize("family", FAMILIES, ids=prefix_of)
def test_each_family_has_its_rule_module_fixture_module_and_test_module(family: object) -> None:
    prefix = prefix_of(family)  # type: ignore[arg-type]
    assert codes_of(prefix) == [rule.code for rule in family_rules(family)]  # type: ignore[arg-type]
    assert all(code.startswith(prefix) and code[len(prefix):].isdigit() for code in codes_of(prefix))
    assert (TESTS / f"test_{prefix}.py").is_file()
    assert list(FIXTURE_FAMILIES) == [prefix_of(f) for f in FAMILIES]


@pytest.mark.parametrize("code", ["out006", "les007", "glo004"])
def test_strict_promotes_every_warning(code: str, tmp_path: Path) -> None:
    course = make_fixture(code, tmp_path)
    normal = validate_course(course)
    strict = validate_course(course, strict=True)
    assert [(d.code, d.message) for d in strict.defects] == [(d.code, d.message) for d in normal.defects]
    assert all(d.severity is Severity.FAIL for d in strict.defects)
    assert strict.evaluated == normal.evaluated and strict.passed == normal.passed
