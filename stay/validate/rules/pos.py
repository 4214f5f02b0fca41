"""pos: the correct option of a multiple-choice item is not always in the same place (group ``stay``): a quiz
whose every answer is A is answered by clicking A. The file is the course, so the file is checked, not a
viewer's shuffle. Only items with exactly one correct option count (none or several is qz008's defect)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stay.validate._course import Course, Finding, Group, Lesson, Severity, finding, rule
from stay.validate._text import show

WARN = Severity.WARN
AT_LEAST = 2
"""One item's position is no pattern: a quiz or module is checked from two items up."""


def _letter(position: int) -> str:
    return chr(ord("A") + position)


def _positions(lesson: Lesson) -> list[int]:
    """The 0-based position of the correct option of each mcq item of a usable quiz."""
    if not lesson.quiz.usable:
        return []
    found = []
    for item in lesson.quiz.data["items"]:
        options: list[dict[str, Any]] = (item.get("options") or []) if item["type"] == "mcq" else []
        correct = [k for k, option in enumerate(options) if option.get("correct") is True]
        if len(correct) == 1:
            found.append(correct[0])
    return found


@rule("pos001", WARN, "quiz", "every correct answer of its {n} mcq items is option {letter}: "
                              "vary which option is correct", group=Group.STAY)
def pos001(course: Course) -> Iterator[Finding]:
    """One quiz puts the correct option of every mcq item (two or more) in the same
    position, so always picking that letter scores full marks."""
    for lesson in course.planned_lessons:
        positions = _positions(lesson)
        if len(positions) >= AT_LEAST:
            yield finding(lesson.quiz.path, show(lesson.id), len(set(positions)) == 1, n=len(positions),
                          letter=_letter(positions[0]))


@rule("pos002", WARN, "quiz", "every correct answer of its {n} mcq items ({quizzes}) is option {letter}: "
                              "vary which option is correct", group=Group.STAY)
def pos002(course: Course) -> Iterator[Finding]:
    """One module puts the correct option of every mcq item in the same position, across
    two or more quizzes: quizzes of one mcq item each show no pattern alone, while a
    learner going through the module learns it. Items that all sit in one quiz are that
    quiz's pos001, not said twice (two quizzes asking means two items or more)."""
    for module, module_dir in zip(course.modules, course.module_dirs, strict=True):
        quizzes = {lesson.quiz.path: _positions(lesson) for lesson in course.planned_lessons
                   if lesson.module_dir == module_dir}
        asked = {path: positions for path, positions in quizzes.items() if positions}
        positions = [position for found in asked.values() for position in found]
        if len(asked) >= AT_LEAST:
            names = ", ".join(path.rpartition("/")[2] for path in asked)
            yield finding(module_dir, show(module["id"]), len(set(positions)) == 1, n=len(positions),
                          quizzes=names, letter=_letter(positions[0]))
