"""trm: a term is introduced once, and only relied on after it has been introduced (the glossary, the
retrieval schedule and the load budget assume so)."""

from __future__ import annotations

from collections.abc import Iterator

from stay.validate._course import Course, Finding, Severity, finding, rule
from stay.validate._text import norm, show

FAIL = Severity.FAIL


@rule("trm001", FAIL, "plan", "term '{t}' is introduced again; {first} introduced it first")
def trm001(course: Course) -> Iterator[Finding]:
    """A new term repeats one introduced earlier in lesson order (the same plan included)."""
    seen: set[str] = set()
    for lesson, entry in course.entries("plan", "new_terms"):
        term = norm(entry["term"])
        first = course.introduced[term].lesson.id
        yield finding(lesson.plan.path, show(entry["term"]), term in seen, t=entry["term"], first=first)
        seen.add(term)


@rule("trm002", FAIL, "plan", "prerequisite '{t}' is not introduced in an earlier lesson")
def trm002(course: Course) -> Iterator[Finding]:
    """A prerequisite term is not introduced by any earlier lesson."""
    for lesson, term in course.entries("plan", "prerequisites"):
        yield finding(lesson.plan.path, show(term), not course.introduced_before(term, lesson.pos), t=term)


@rule("trm003", FAIL, "plan", "revisited term '{t}' is not introduced in an earlier lesson")
def trm003(course: Course) -> Iterator[Finding]:
    """A revisited term is not introduced by any earlier lesson, so there is nothing to
    retrieve."""
    for lesson, term in course.entries("plan", "revisits"):
        yield finding(lesson.plan.path, show(term), not course.introduced_before(term, lesson.pos), t=term)
