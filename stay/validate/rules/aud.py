"""aud: the audience profile has a real time budget, prior knowledge and goals: every later stage sizes
its work against them."""

from __future__ import annotations

from collections.abc import Iterator

from stay.validate._course import Course, Finding, Severity, finding, rule

FAIL, WARN = Severity.FAIL, Severity.WARN
A = "audience.yaml"


@rule("aud001", FAIL, "audience", "time_budget_minutes must be positive, found {n}")
def aud001(course: Course) -> Iterator[Finding]:
    """The time budget is zero or negative, so no curriculum can fit it."""
    if course.audience_file.usable:
        budget = course.audience_file.data["time_budget_minutes"]
        yield finding(A, "time_budget_minutes", budget <= 0, n=budget)


@rule("aud002", WARN, "audience", "prior_knowledge is empty")
def aud002(course: Course) -> Iterator[Finding]:
    """No prior knowledge is recorded: lessons cannot build on what learners know."""
    if course.audience_file.usable:
        yield finding(A, "prior_knowledge", not course.audience_file.data["prior_knowledge"])


@rule("aud003", FAIL, "audience", "goals is empty")
def aud003(course: Course) -> Iterator[Finding]:
    """No goals: backward design starts from what learners want to do, so nothing can."""
    if course.audience_file.usable:
        yield finding(A, "goals", not course.audience_file.data["goals"])
