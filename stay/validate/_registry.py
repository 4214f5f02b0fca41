"""Rules, findings, and the decorator every rule family declares its rules with.

A rule is a function from a loaded ``Course`` to one finding per subject the contract's
"per" column names, fired or not; ``@rule(code, severity, owner, template)`` binds it to
its row, and its docstring (required) says what it checks and why. Its group (``contract``
unless declared ``group=Group.STAY``) is declared here alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from stay.errors import GraphError
from stay.validate._course import Course
from stay.validate._defect import Owner, Severity

__all__ = ["Check", "Finding", "Group", "Rule", "Severity", "finding", "rule"]


class Finding(NamedTuple):
    """One evaluation of a rule on one subject; a defect when ``fired``.

    A named tuple, not a dataclass: a course makes thousands of these, most of them
    passes, and a tuple is several times cheaper to create."""

    path: str
    subject: str
    fired: bool
    values: Mapping[str, object] = {}  # never mutated; a tuple field cannot take a factory
    owner: Owner | None = None
    """Overrides the rule's owner (the schema rules: the stage that writes the file)."""


Check = Callable[[Course], Iterator[Finding]]


class Group(StrEnum):
    """Which rules a rule stands with; a group's name is also a selector (``--select stay``)."""

    CONTRACT = "contract"
    """The contract's rules: exactly the frozen reference's, held to it by parity
    (``--select contract``)."""
    STAY = "stay"
    """Rules stay adds beyond the contract: every command runs them, parity never compares them."""


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    severity: Severity
    owner: Owner | None
    """None for the schema rules, owned by the stage that writes the file."""
    template: str
    check: Check
    doc: str
    group: Group

    def __call__(self, course: Course) -> Iterator[Finding]:
        return self.check(course)


def rule(code: str, severity: Severity, owner: Owner | None, template: str, *,
         group: Group = Group.CONTRACT) -> Callable[[Check], Rule]:
    """Declare a rule: its row (of the contract, or of stay's own rules), its group, and
    the function that evaluates it."""

    # contract is the default so the contract's rules say nothing extra; a new rule that
    # forgets group=Group.STAY is caught, as the reference does not know it (test_registry.py)
    def declare(check: Check) -> Rule:
        doc = (check.__doc__ or "").strip()
        if not doc:
            raise GraphError(f"rule {code} has no docstring saying what it checks and why")
        return Rule(code, severity, owner, template, check, doc, Group(group))

    return declare


def finding(path: str, subject: str, fired: bool, /, **values: object) -> Finding:
    """A finding whose message fills the rule's template with ``values``."""
    return Finding(path, subject, fired, values)
