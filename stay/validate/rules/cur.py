"""cur: the curriculum's shape fits house style and its ids follow the contract. Every other file names
lessons and modules by id: a gap or a misnumbered id silently detaches files from the course."""

from __future__ import annotations

import re
from collections.abc import Iterator

from stay.validate._course import Course, Finding, Severity, finding, rule
from stay.validate._text import show, times

FAIL, WARN = Severity.FAIL, Severity.WARN
K = "curriculum.yaml"
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@rule("cur001", FAIL, "curriculum", "{n} modules; house style allows {min} to {max}")
def cur001(course: Course) -> Iterator[Finding]:
    """The module count is outside house style's course range."""
    if course.curriculum_file.usable:
        lo, hi = course.data["course.min_modules"], course.data["course.max_modules"]
        n = len(course.modules)
        yield finding(K, "modules", not lo <= n <= hi, n=n, min=lo, max=hi)


@rule("cur002", FAIL, "curriculum", "module {id} has {n} lessons; house style allows {min} to {max}")
def cur002(course: Course) -> Iterator[Finding]:
    """A module's lesson count is outside house style's module range."""
    lo, hi = course.data["module.min_lessons"], course.data["module.max_lessons"]
    for module in course.modules:
        n = len(module["lessons"])
        yield finding(K, show(module["id"]), not lo <= n <= hi, id=module["id"], n=n, min=lo, max=hi)


@rule("cur003", FAIL, "curriculum", "lesson {id} is {n} minutes; house style allows {min} to {max}")
def cur003(course: Course) -> Iterator[Finding]:
    """A lesson is shorter or longer than house style allows (attention and load)."""
    lo, hi = course.data["lesson.min_minutes"], course.data["lesson.max_minutes"]
    for module in course.modules:
        for entry in module["lessons"]:
            minutes = entry["minutes"]
            yield finding(K, show(entry["id"]), not lo <= minutes <= hi, id=entry["id"], n=minutes, min=lo, max=hi)


@rule("cur004", FAIL, "curriculum", "the curriculum totals {t} minutes; the audience budget is {b}")
def cur004(course: Course) -> Iterator[Finding]:
    """The lessons add up to more time than the audience has."""
    if course.curriculum_file.usable and course.audience_file.usable:
        total = sum(lesson.minutes for lesson in course.lessons)
        budget = course.audience_file.data["time_budget_minutes"]
        yield finding(K, "minutes", total > budget, t=total, b=budget)


@rule("cur005", WARN, "curriculum",
      "the curriculum totals {t} minutes, under {pct}% of the audience budget of {b}")
def cur005(course: Course) -> Iterator[Finding]:
    """The lessons use too little of the budget: the course probably under-teaches."""
    if course.curriculum_file.usable and course.audience_file.usable:
        total = sum(lesson.minutes for lesson in course.lessons)
        budget = course.audience_file.data["time_budget_minutes"]
        share = course.data["course.min_budget_use"]
        yield finding(K, "minutes", total < times(share, budget),
                      t=total, pct=round(share * 100), b=budget)


@rule("cur006", FAIL, "curriculum", "module id '{id}' should be '{expected}'")
def cur006(course: Course) -> Iterator[Finding]:
    """The i-th module's id is not m<i>, two digits, counted from m01."""
    for i, module in enumerate(course.modules, 1):
        expected = f"m{i:02d}"
        yield finding(K, show(module["id"]), module["id"] != expected, id=module["id"], expected=expected)


@rule("cur007", FAIL, "curriculum", "lesson id '{id}' should be '{expected}'")
def cur007(course: Course) -> Iterator[Finding]:
    """The j-th lesson of a module is not <module id>-l<j>, two digits, from l01."""
    for module in course.modules:
        for j, entry in enumerate(module["lessons"], 1):
            expected = f"{module['id']}-l{j:02d}"
            yield finding(K, show(entry["id"]), entry["id"] != expected, id=entry["id"], expected=expected)


@rule("cur008", FAIL, "curriculum", "module slug '{slug}' is not a valid slug")
def cur008(course: Course) -> Iterator[Finding]:
    """A module slug is not lowercase words joined by hyphens; it names a directory."""
    for module in course.modules:
        slug = module["slug"]
        yield finding(K, show(module["id"]), _SLUG.fullmatch(slug) is None, slug=slug)
