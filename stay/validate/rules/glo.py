"""glo: the glossary is exactly the introduced terms, each with its introducing lesson: a merge that lost,
duplicated or misattributed a term, or a plan edited after the merge, is caught."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stay.validate._course import Course, Finding, Severity, finding, rule
from stay.validate._text import norm, show

FAIL, WARN = Severity.FAIL, Severity.WARN
G = "glossary.yaml"


def _firsts(course: Course) -> list[dict[str, Any]]:
    """The first glossary entry for each norm(term), in file order."""
    firsts: dict[str, dict[str, Any]] = {}
    for entry in course.glossary_file.data["terms"]:
        firsts.setdefault(norm(entry["term"]), entry)
    return list(firsts.values())


@rule("glo001", WARN, "glossary", "the course has no glossary")
def glo001(course: Course) -> Iterator[Finding]:
    """Plans introduce terms but there is no usable glossary (mid-run, a WARN)."""
    if course.curriculum_file.usable:
        has_terms = any(lesson.plan.data["new_terms"] for lesson in course.planned_lessons)
        yield finding(G, "-", has_terms and not course.glossary_file.usable)


@rule("glo002", FAIL, "glossary", "term '{t}' introduced in {id} is missing from the glossary")
def glo002(course: Course) -> Iterator[Finding]:
    """An introduced term has no glossary entry."""
    if course.glossary_file.usable and course.curriculum_file.usable:
        present = {norm(entry["term"]) for entry in course.glossary_file.data["terms"]}
        for term, intro in course.introduced.items():
            yield finding(G, show(intro.term), term not in present,
                          t=intro.term, id=intro.lesson.id)


@rule("glo003", FAIL, "glossary", "glossary says '{t}' is introduced in {x}; its plan is {id}")
def glo003(course: Course) -> Iterator[Finding]:
    """A glossary entry names another introducing lesson than the plans do."""
    if course.glossary_file.usable and course.curriculum_file.usable:
        for entry in _firsts(course):
            intro = course.introduced.get(norm(entry["term"]))
            if intro is not None:
                yield finding(G, show(entry["term"]), entry["introduced_in"] != intro.lesson.id,
                              t=entry["term"], x=entry["introduced_in"], id=intro.lesson.id)


@rule("glo004", WARN, "glossary", "glossary term '{t}' is not introduced by any plan")
def glo004(course: Course) -> Iterator[Finding]:
    """A glossary entry no plan introduces (mid-run, a plan may not be written yet)."""
    if course.glossary_file.usable and course.curriculum_file.usable:
        for entry in _firsts(course):
            yield finding(G, show(entry["term"]), norm(entry["term"]) not in course.introduced,
                          t=entry["term"])


@rule("glo005", FAIL, "glossary", "duplicate glossary term '{t}'")
def glo005(course: Course) -> Iterator[Finding]:
    """Two glossary entries share a term (after norm)."""
    if course.glossary_file.usable:
        seen: set[str] = set()
        for entry in course.glossary_file.data["terms"]:
            term = norm(entry["term"])
            yield finding(G, show(entry["term"]), term in seen, t=entry["term"])
            seen.add(term)
