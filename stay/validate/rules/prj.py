"""prj: the capstone spans every module (a milestone each) and its rubric is observable and complete:
criteria free of vague words ("good") are ones two markers apply the same way."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from stay.validate._course import Course, Finding, Severity, finding, is_str, rule
from stay.validate._text import mentions, quoted, show

FAIL, WARN = Severity.FAIL, Severity.WARN
J = "project.yaml"
_MILESTONE_ID = re.compile(r"p[1-9][0-9]*")
_RUBRIC_ID = re.compile(r"r[1-9][0-9]*")


def _project(course: Course) -> dict[str, Any] | None:
    return course.project_file.data if course.project_file.usable else None


def _entries(course: Course, key: str) -> list[dict[str, Any]]:
    """The capstone's milestones or rubric; none without a usable project.yaml."""
    return course.project_file.data[key] if course.project_file.usable else []


@rule("prj001", WARN, "capstone", "the course has no capstone project")
def prj001(course: Course) -> Iterator[Finding]:
    """A course with a usable curriculum has no usable project.yaml (mid-run, a WARN)."""
    if course.curriculum_file.usable:
        yield finding(J, "-", not course.project_file.usable)


@rule("prj002", FAIL, "capstone", "module {id} is not covered by any milestone")
def prj002(course: Course) -> Iterator[Finding]:
    """A curriculum module is in no milestone: the capstone skips what it taught."""
    project = _project(course)
    if project is not None:
        covered = {m for milestone in project["milestones"] for m in milestone["modules"]}
        for module in course.modules:
            yield finding(J, show(module["id"]), module["id"] not in covered, id=module["id"])


@rule("prj003", FAIL, "capstone", "milestone names unknown module '{m}'")
def prj003(course: Course) -> Iterator[Finding]:
    """A milestone names a module the curriculum does not have; the first is reported."""
    if course.curriculum_file.usable:
        known = [module["id"] for module in course.modules]
        for milestone in _entries(course, "milestones"):
            unknown = next((m for m in milestone["modules"] if m not in known), None)
            yield finding(J, show(milestone["id"]), unknown is not None, m=unknown)


@rule("prj004", FAIL, "capstone", "criterion uses vague words: {words}")
def prj004(course: Course) -> Iterator[Finding]:
    """A rubric criterion uses words house style calls vague: markers would disagree."""
    vague_words = course.data["rubric.vague_words"]
    for criterion in _entries(course, "rubric"):
        vague = sorted(w for w in vague_words if mentions(criterion["criterion"], w))
        yield finding(J, show(criterion["id"]), bool(vague), words=quoted(vague))


@rule("prj005", FAIL, "capstone", "criterion names unknown outcome '{o}'")
def prj005(course: Course) -> Iterator[Finding]:
    """A criterion names an outcome outcomes.yaml does not have; the first is reported."""
    if course.outcomes_file.usable:
        for criterion in _entries(course, "rubric"):
            unknown = next((o for o in criterion["outcomes"] if o not in course.outcome_first), None)
            yield finding(J, show(criterion["id"]), unknown is not None, o=unknown)


@rule("prj006", FAIL, "capstone", "criterion is missing levels: {levels}")
def prj006(course: Course) -> Iterator[Finding]:
    """A criterion lacks a description for one of house style's rubric levels."""
    levels = course.data["rubric.levels"]
    for criterion in _entries(course, "rubric"):
        missing = [level for level in levels if not is_str(criterion["levels"].get(level))]
        yield finding(J, show(criterion["id"]), bool(missing), levels=missing)


@rule("prj007", FAIL, "capstone",
      "outcome {o} is assessed by the capstone but no rubric criterion names it")
def prj007(course: Course) -> Iterator[Finding]:
    """Assessment says the capstone assesses an outcome, but no criterion marks it."""
    project = _project(course)
    if project is not None and course.assessment_file.usable and course.outcomes_file.usable:
        capstone = {entry["outcome"] for entry in course.assessment_file.data["evidence"]
                    if "capstone" in entry["methods"]}
        named = {oid for criterion in project["rubric"] for oid in criterion["outcomes"]}
        for outcome in course.outcomes:
            if outcome["id"] in capstone:
                yield finding(J, show(outcome["id"]), outcome["id"] not in named,
                              o=outcome["id"])


@rule("prj008", FAIL, "capstone", "milestone id '{x}' does not match 'p<n>'")
def prj008(course: Course) -> Iterator[Finding]:
    """A milestone id is not p<n>, n from 1."""
    for milestone in _entries(course, "milestones"):
        yield finding(J, show(milestone["id"]), _MILESTONE_ID.fullmatch(milestone["id"]) is None, x=milestone["id"])


@rule("prj009", FAIL, "capstone", "rubric id '{x}' does not match 'r<n>'")
def prj009(course: Course) -> Iterator[Finding]:
    """A rubric criterion id is not r<n>, n from 1."""
    for criterion in _entries(course, "rubric"):
        yield finding(J, show(criterion["id"]), _RUBRIC_ID.fullmatch(criterion["id"]) is None, x=criterion["id"])


@rule("prj010", FAIL, "capstone", "the capstone has no milestones")
def prj010(course: Course) -> Iterator[Finding]:
    """The capstone has no milestones, so nothing paces the work."""
    project = _project(course)
    if project is not None:
        yield finding(J, "milestones", not project["milestones"])


@rule("prj011", FAIL, "capstone", "the capstone has no rubric")
def prj011(course: Course) -> Iterator[Finding]:
    """The capstone has no rubric, so it cannot be marked."""
    project = _project(course)
    if project is not None:
        yield finding(J, "rubric", not project["rubric"])
