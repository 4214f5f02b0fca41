"""exe: every outcome at apply or above is practised, at its own level: only an exercise shows a learner
doing a thing, and one pitched at another level practises something the course never promised."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stay.validate._course import Course, Finding, Lesson, Severity, finding, lesson_file_rules, rule
from stay.validate._text import id_matches, show

FAIL = Severity.FAIL


def _with_outcome(course: Course) -> Iterator[tuple[Lesson, dict[str, Any], dict[str, Any]]]:
    """Every written exercise whose outcome the outcomes file defines, with that outcome's first entry."""
    if course.outcomes_file.usable:
        for lesson, exercise in course.entries("exercises", "exercises"):
            outcome = course.outcome_first.get(exercise["outcome"])
            if outcome is not None:
                yield lesson, exercise, outcome


exe001, exe002 = lesson_file_rules("exe", "exercises", "exercises", "exercises file", (
    "A planned lesson has no usable exercises file (mid-run, a WARN).",
    "The exercises file names another lesson than the file it sits beside."))


@rule("exe003", FAIL, "exercises", "outcome {o} ({bloom}) has no exercise")
def exe003(course: Course) -> Iterator[Finding]:
    """An outcome of the lesson at apply or above has no exercise targeting it."""
    for lesson, file in course.written("exercises"):
        targeted = {exercise["outcome"] for exercise in file.data["exercises"]}
        for outcome in course.outcomes_of(lesson.id):
            if course.data.apply_or_above(outcome["bloom"]):
                yield finding(file.path, show(outcome["id"]),
                              outcome["id"] not in targeted,
                              o=outcome["id"], bloom=outcome["bloom"])


@rule("exe004", FAIL, "exercises", "exercise targets '{o}', which is not an outcome of {id}")
def exe004(course: Course) -> Iterator[Finding]:
    """An exercise targets an outcome that is not this lesson's."""
    if course.outcomes_file.usable:
        for lesson, file in course.written("exercises"):
            own = {outcome["id"] for outcome in course.outcomes_of(lesson.id)}
            for exercise in file.data["exercises"]:
                yield finding(file.path, show(exercise["id"]),
                              exercise["outcome"] not in own, o=exercise["outcome"], id=lesson.id)


@rule("exe005", FAIL, "exercises", "exercise level '{b}' differs from its outcome's '{ob}'")
def exe005(course: Course) -> Iterator[Finding]:
    """An exercise's level differs from its (known) outcome's level."""
    for lesson, exercise, outcome in _with_outcome(course):
        yield finding(lesson.exercises.path, show(exercise["id"]), exercise["bloom"] != outcome["bloom"],
                      b=exercise["bloom"], ob=outcome["bloom"])


@rule("exe006", FAIL, "exercises",
      "exercise targets {o} at level {ob}; exercises are for apply or above")
def exe006(course: Course) -> Iterator[Finding]:
    """An exercise targets an outcome below apply, which a quiz item already checks."""
    for lesson, exercise, outcome in _with_outcome(course):
        yield finding(lesson.exercises.path, show(exercise["id"]), course.data.below_apply(outcome["bloom"]),
                      o=exercise["outcome"], ob=outcome["bloom"])


@rule("exe007", FAIL, "exercises", "exercise id '{x}' does not match '{id}-e<n>'")
def exe007(course: Course) -> Iterator[Finding]:
    """An exercise id is not the lesson id followed by -e<n>, n from 1."""
    for lesson, exercise in course.entries("exercises", "exercises"):
        yield finding(lesson.exercises.path, show(exercise["id"]), not id_matches(exercise["id"], lesson.id, "e"),
                      x=exercise["id"], id=lesson.id)
