"""lod: the cognitive load budget, in new terms per lesson and per module, so a plan cannot quietly
front-load vocabulary."""

from __future__ import annotations

from collections.abc import Iterator

from stay.validate._course import Course, Finding, Severity, finding, rule
from stay.validate._text import show

FAIL = Severity.FAIL


@rule("lod001", FAIL, "plan", "lesson introduces {n} new terms; the budget is {max}")
def lod001(course: Course) -> Iterator[Finding]:
    """A plan introduces more new terms than house style allows one lesson."""
    budget = course.data["lesson.max_new_terms"]
    for lesson in course.planned_lessons:
        n = len(lesson.plan.data["new_terms"])
        yield finding(lesson.plan.path, "new_terms", n > budget, n=n, max=budget)


@rule("lod002", FAIL, "plan", "module introduces {n} new terms; the budget is {max}")
def lod002(course: Course) -> Iterator[Finding]:
    """A module's usable plans together introduce more new terms than its budget."""
    budget = course.data["module.max_new_terms"]
    for module, module_dir in zip(course.modules, course.module_dirs, strict=True):
        n = sum(len(lesson.plan.data["new_terms"]) for lesson in course.planned_lessons
                if lesson.module is module)
        yield finding(module_dir, show(module["id"]), n > budget, n=n, max=budget)
