"""The registry's contract group is the contract's rules table, code for code, and the
frozen reference's rules, no more and no fewer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stay.validate import OWNERS, RULES, Group, Severity
from tests.parity.harness import reference

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "contract" / "validator-rules.md"
SHARED_CONTRACT = Path(__file__).resolve().parents[3] / "shared" / "spec" / "validator-rules.md"
_ROW = re.compile(r"^\| (?P<code>[a-z]{2,3}\d{3}) \| (?P<sev>FAIL|WARN) \| (?P<owner>[^|]+) \|"
                  r".*\| `(?P<message>.+?)`(?: \(.*\))? \|$")


def _table() -> list[tuple[str, str, str | None, str]]:
    rows = []
    for line in CONTRACT.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match:
            owner = match["owner"].strip()
            message = match["message"].replace("\\|", "|")
            rows.append((match["code"], match["sev"],
                         None if owner.startswith("file") else owner, message))
    return rows


@pytest.mark.skipif(not SHARED_CONTRACT.is_file(), reason="../shared/spec is not beside this checkout")
def test_vendored_contract_is_the_shared_one() -> None:
    assert CONTRACT.read_bytes() == SHARED_CONTRACT.read_bytes()


def test_contract_table_has_101_rules() -> None:
    assert len(_table()) == 101


def test_the_rule_counts_the_docs_give_are_the_registrys() -> None:
    """Every count of rules the README and docs/ state (the contract's own pages aside) is
    the registry's, so none drifts when a rule is added."""
    root = CONTRACT.parents[2]
    counts = {r"(\d+)\s+(?:validator\s+)?rules\b": len(RULES),
              r"the contract's\s+(\d+)\b": sum(r.group is Group.CONTRACT for r in RULES.values()),
              r"stay's own\s+(\d+)\b": sum(r.group is Group.STAY for r in RULES.values())}
    stated = {pattern: 0 for pattern in counts}
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for pattern, count in counts.items():
            for match in re.finditer(pattern, text):
                assert int(match[1]) == count, f"{page.name}: '{' '.join(match[0].split())}' should say {count}"
                stated[pattern] += 1
    assert all(stated.values()), stated  # the README states each of them


def test_registry_lists_the_contract_codes_severities_owners_and_messages_in_order() -> None:
    registered = [(r.code, str(r.severity), r.owner, r.template) for r in RULES.values()
                  if r.group is Group.CONTRACT]
    assert registered == _table()


def test_the_contract_group_is_exactly_the_rules_the_frozen_reference_knows() -> None:
    """The group is declared on each rule; its membership is derived from the reference
    (its own ``RULES`` table), so a rule added without ``group=Group.STAY`` fails here."""
    contract = [code for code, r in RULES.items() if r.group is Group.CONTRACT]
    assert contract == list(reference().RULES)
    assert all(r.group in tuple(Group) for r in RULES.values())


def test_every_rule_says_what_it_checks_and_has_a_known_owner() -> None:
    for rule in RULES.values():
        assert len(rule.doc) > 20, rule.code
        assert rule.owner is None or rule.owner in OWNERS
        assert rule.severity in (Severity.FAIL, Severity.WARN)
