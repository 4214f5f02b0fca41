"""asm: every outcome has exactly one evidence entry, with the methods its level needs. Backward design:
evidence is decided before lessons are planned; an outcome at apply or above is also performed in an exercise."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stay.validate._course import Course, Finding, Severity, finding, rule
from stay.validate._text import show

FAIL = Severity.FAIL
S = "assessment.yaml"
METHODS = ("quiz", "exercise", "capstone")


def _evidence(course: Course) -> list[dict[str, Any]]:
    return course.assessment_file.data["evidence"] if course.assessment_file.usable else []


@rule("asm001", FAIL, "assessment", "outcome {id} has no evidence entry")
def asm001(course: Course) -> Iterator[Finding]:
    """An outcome no evidence entry names: nothing would show it was learnt."""
    if course.assessment_file.usable and course.outcomes_file.usable:
        named = {entry["outcome"] for entry in _evidence(course)}
        for outcome in course.outcomes:
            yield finding(S, show(outcome["id"]), outcome["id"] not in named, id=outcome["id"])


@rule("asm002", FAIL, "assessment", "evidence names unknown outcome '{o}'")
def asm002(course: Course) -> Iterator[Finding]:
    """An evidence entry names an outcome outcomes.yaml does not have."""
    if course.outcomes_file.usable:
        for entry in _evidence(course):
            oid = entry["outcome"]
            yield finding(S, show(oid), oid not in course.outcome_first, o=oid)


@rule("asm003", FAIL, "assessment", "outcome {o} has more than one evidence entry")
def asm003(course: Course) -> Iterator[Finding]:
    """Two entries for one outcome: which methods apply is ambiguous."""
    seen: set[str] = set()
    for entry in _evidence(course):
        oid = entry["outcome"]
        yield finding(S, show(oid), oid in seen, o=oid)
        seen.add(oid)


@rule("asm004", FAIL, "assessment", "unknown method '{m}'; use quiz, exercise or capstone")
def asm004(course: Course) -> Iterator[Finding]:
    """A method is not quiz, exercise or capstone; the first such is reported."""
    for entry in _evidence(course):
        methods = entry["methods"]
        unknown = next((m for m in methods if m not in METHODS), None)
        yield finding(S, show(entry["outcome"]), unknown is not None, m=unknown)


@rule("asm005", FAIL, "assessment",
      "outcome {o} is not assessed by quiz; every outcome gets a quiz item")
def asm005(course: Course) -> Iterator[Finding]:
    """A known outcome's methods lack quiz; every outcome gets a quiz item."""
    if course.outcomes_file.usable:
        for entry in _evidence(course):
            oid = entry["outcome"]
            if oid in course.outcome_first:
                yield finding(S, show(oid), "quiz" not in entry["methods"], o=oid)


@rule("asm006", FAIL, "assessment", "outcome {o} is at level {bloom} but no exercise assesses it")
def asm006(course: Course) -> Iterator[Finding]:
    """An outcome at apply or above is not assessed by an exercise: a quiz item cannot
    show a learner performing it."""
    if course.outcomes_file.usable:
        for entry in _evidence(course):
            oid = entry["outcome"]
            if oid in course.outcome_first:
                bloom = course.outcome_first[oid]["bloom"]
                if course.data.apply_or_above(bloom):
                    yield finding(S, show(oid), "exercise" not in entry["methods"], o=oid, bloom=bloom)
