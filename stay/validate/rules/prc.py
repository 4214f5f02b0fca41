"""prc: practice counts in the time budget (group ``stay``): each exercise and the capstone carry ``minutes``
within house style's bounds, and lessons + exercises + capstone fit the brief's ``time_available``.
A missing ``minutes`` counts as none in the sums (prc002's or prc003's defect)."""

from __future__ import annotations

from collections.abc import Iterator

from stay._duration import parse_duration
from stay.errors import BriefError
from stay.validate._course import Course, Finding, Group, Severity, finding, rule
from stay.validate._text import show

FAIL, WARN = Severity.FAIL, Severity.WARN


def _minutes(value: object) -> int:
    """A ``minutes`` value as the sums count it: a whole number of minutes, else none."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _time_available(course: Course) -> int | None:
    """The brief's time in minutes, from course.yaml; None when it cannot be read (man's defect)."""
    manifest = course.manifest_file
    brief = manifest.data.get("brief") if manifest.usable and isinstance(manifest.data, dict) else None
    text = brief.get("time_available") if isinstance(brief, dict) else None
    try:
        return parse_duration(text) if isinstance(text, str) else None
    except BriefError:
        return None


@rule("prc001", FAIL, "capstone", "lessons ({lessons} minutes), exercises ({exercises}) and the capstone "
                                  "({capstone}) total {t} minutes, past the brief's {b}: shorten the capstone "
                                  "or the exercises", group=Group.STAY)
def prc001(course: Course) -> Iterator[Finding]:
    """The lessons, the exercises and the capstone take longer than the brief's time_available.
    Reported on project.yaml, owned by the capstone: cur004 holds the lessons to their share,
    so the excess is practice, and the capstone, written for what is left, gives way."""
    available = _time_available(course)
    if available is None or not course.curriculum_file.usable:
        return
    lessons = sum(_minutes(lesson.minutes) for lesson in course.lessons)
    exercises = sum(_minutes(exercise.get("minutes")) for lesson in course.lessons if lesson.exercises.usable
                    for exercise in lesson.exercises.data["exercises"])
    capstone = _minutes(course.project_file.data.get("minutes")) if course.project_file.usable else 0
    total = lessons + exercises + capstone
    yield finding(course.project_file.path, "minutes", total > available, lessons=lessons, exercises=exercises,
                  capstone=capstone, t=total, b=available)


@rule("prc002", WARN, "exercises", "exercise {id} is {n} minutes; house style allows {min} to {max}",
      group=Group.STAY)
def prc002(course: Course) -> Iterator[Finding]:
    """An exercise's estimated minutes are missing or outside house style's exercise bounds."""
    lo, hi = course.data["exercise.min_minutes"], course.data["exercise.max_minutes"]
    for lesson in course.lessons:
        if lesson.exercises.usable:
            for exercise in lesson.exercises.data["exercises"]:
                minutes = exercise.get("minutes")
                yield finding(lesson.exercises.path, show(exercise["id"]),
                              not lo <= _minutes(minutes) <= hi,
                              id=exercise["id"], n=minutes if _minutes(minutes) else "no", min=lo, max=hi)


@rule("prc003", WARN, "capstone", "the capstone is {n} minutes; house style allows {min} to {max}",
      group=Group.STAY)
def prc003(course: Course) -> Iterator[Finding]:
    """The capstone's estimated minutes are missing or outside house style's capstone bounds."""
    if course.project_file.usable:
        lo, hi = course.data["capstone.min_minutes"], course.data["capstone.max_minutes"]
        minutes = course.project_file.data.get("minutes")
        yield finding(course.project_file.path, "minutes", not lo <= _minutes(minutes) <= hi,
                      n=minutes if _minutes(minutes) else "no", min=lo, max=hi)
