"""pln: each lesson plan agrees with the curriculum and covers its outcomes. The wave writes to the plan, so
a plan's defect passes to four artefacts at once."""

from __future__ import annotations

from collections.abc import Iterator

from stay.validate._course import Course, Finding, Severity, finding, lesson_file_rules, rule
from stay.validate._text import norm, show

FAIL, WARN = Severity.FAIL, Severity.WARN


pln001, pln002 = lesson_file_rules("pln", "plan", "plan", "plan", (
    "A curriculum lesson has no usable plan (mid-run, a WARN).",
    "The plan's lesson field names another lesson than the file it sits in."))


@rule("pln003", FAIL, "plan", "plan title '{t}' differs from the curriculum's '{c}'")
def pln003(course: Course) -> Iterator[Finding]:
    """The plan's title differs from the curriculum's (both stripped)."""
    for lesson in course.planned_lessons:
        t = lesson.plan.data["title"]
        yield finding(lesson.plan.path, "title", t.strip() != lesson.title.strip(),
                      t=t, c=lesson.title)


@rule("pln004", FAIL, "plan", "plan is {p} minutes; the curriculum gives {c}")
def pln004(course: Course) -> Iterator[Finding]:
    """The plan's minutes differ from the curriculum's for the lesson."""
    for lesson in course.planned_lessons:
        p = lesson.plan.data["minutes"]
        yield finding(lesson.plan.path, "minutes", p != lesson.minutes, p=p, c=lesson.minutes)


@rule("pln005", FAIL, "plan", "sections total {s} minutes; the plan is {p}")
def pln005(course: Course) -> Iterator[Finding]:
    """The sections' minutes do not add up to the plan's minutes."""
    for lesson in course.planned_lessons:
        plan = lesson.plan.data
        total = sum(section["minutes"] for section in plan["sections"])
        yield finding(lesson.plan.path, "sections", total != plan["minutes"],
                      s=total, p=plan["minutes"])


@rule("pln006", FAIL, "plan", "outcome {o} is missing from the plan")
def pln006(course: Course) -> Iterator[Finding]:
    """An outcome of the lesson is not in the plan's outcomes, so nothing plans to teach it."""
    for lesson in course.planned_lessons:
        listed = lesson.plan.data["outcomes"]
        for outcome in course.outcomes_of(lesson.id):
            yield finding(lesson.plan.path, show(outcome["id"]), outcome["id"] not in listed, o=outcome["id"])


@rule("pln007", WARN, "plan", "plan lists '{o}', which is not an outcome of {id}")
def pln007(course: Course) -> Iterator[Finding]:
    """The plan lists an outcome that is not the lesson's (mid-run, it may be written yet)."""
    if course.outcomes_file.usable:
        for lesson in course.planned_lessons:
            own = {outcome["id"] for outcome in course.outcomes_of(lesson.id)}
            for listed in lesson.plan.data["outcomes"]:
                yield finding(lesson.plan.path, show(listed), listed not in own,
                              o=listed, id=lesson.id)


@rule("pln008", FAIL, "plan", "outcome {o} is not covered by any section")
def pln008(course: Course) -> Iterator[Finding]:
    """A listed outcome of the lesson is in no section's covers: planned, never taught."""
    for lesson in course.planned_lessons:
        plan = lesson.plan.data
        covered = {oid for section in plan["sections"] for oid in section["covers"]}
        for outcome in course.outcomes_of(lesson.id):
            if outcome["id"] in plan["outcomes"]:
                yield finding(lesson.plan.path, show(outcome["id"]), outcome["id"] not in covered, o=outcome["id"])


@rule("pln009", FAIL, "plan", "section kind '{k}' is not one of {section_kinds}")
def pln009(course: Course) -> Iterator[Finding]:
    """A section's kind is not one of house style's section kinds."""
    kinds = course.data["lesson.section_kinds"]
    for lesson, section in course.entries("plan", "sections"):
        yield finding(lesson.plan.path, show(section["heading"]), section["kind"] not in kinds,
                      k=section["kind"], section_kinds=kinds)


@rule("pln010", WARN, "plan",
      "the last section is '{k}'; a lesson ends with a {last_section_kind} section")
def pln010(course: Course) -> Iterator[Finding]:
    """The last section is not a recap: a lesson ends by consolidating what it taught."""
    last_kind = course.data["lesson.last_section_kind"]
    for lesson in course.planned_lessons:
        sections = lesson.plan.data["sections"]
        if sections:
            k = sections[-1]["kind"]
            yield finding(lesson.plan.path, "sections", k != last_kind,
                          k=k, last_section_kind=last_kind)


@rule("pln011", FAIL, "plan", "the plan has no sections")
def pln011(course: Course) -> Iterator[Finding]:
    """The plan has no sections, so the lesson has no structure to be written to."""
    for lesson in course.planned_lessons:
        yield finding(lesson.plan.path, "sections", not lesson.plan.data["sections"])


@rule("pln012", FAIL, "plan", "section covers '{o}', which the plan does not list")
def pln012(course: Course) -> Iterator[Finding]:
    """A section covers an outcome the plan does not list."""
    for lesson, section in course.entries("plan", "sections"):
        for oid in section["covers"]:
            yield finding(lesson.plan.path, show(section["heading"]), oid not in lesson.plan.data["outcomes"], o=oid)


@rule("pln013", FAIL, "plan", "duplicate section heading '{h}'")
def pln013(course: Course) -> Iterator[Finding]:
    """Two sections share a heading (after norm): the lesson's headings would repeat."""
    for lesson in course.planned_lessons:
        seen: set[str] = set()
        for section in lesson.plan.data["sections"]:
            heading = norm(section["heading"])
            yield finding(lesson.plan.path, show(section["heading"]), heading in seen,
                          h=section["heading"])
            seen.add(heading)
