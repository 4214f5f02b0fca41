"""qz: every outcome has a quiz item, and every item is answerable and well formed: a distractor names its
misconception (why_wrong); "all of the above" is banned, as it tests test-taking, not the outcome."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stay.validate._course import Course, Finding, Lesson, Severity, finding, lesson_file_rules, rule
from stay.validate._text import id_matches, norm, show

FAIL = Severity.FAIL
TYPES = ("mcq", "short")


def _options(course: Course) -> Iterator[tuple[Lesson, str, dict[str, Any]]]:
    """Every option of every mcq item: (lesson, subject '<item id> option <k>', option)."""
    for lesson, item in course.entries("quiz", "items"):
        if item["type"] == "mcq":
            for k, option in enumerate(item.get("options") or [], 1):
                yield lesson, f"{show(item['id'])} option {k}", option


qz001, qz002 = lesson_file_rules("qz", "quiz", "quiz", "quiz", (
    "A planned lesson has no usable quiz (mid-run, a WARN).",
    "The quiz names another lesson than the file it sits beside."))


@rule("qz003", FAIL, "quiz", "outcome {o} has no quiz item")
def qz003(course: Course) -> Iterator[Finding]:
    """An outcome of the lesson has no item checking it; every outcome gets one."""
    for lesson, quiz in course.written("quiz"):
        asked = {item.get("outcome") for item in quiz.data["items"] if item.get("outcome") is not None}
        for outcome in course.outcomes_of(lesson.id):
            yield finding(quiz.path, show(outcome["id"]), outcome["id"] not in asked, o=outcome["id"])


@rule("qz004", FAIL, "quiz", "item targets '{o}', which is not an outcome of {id}")
def qz004(course: Course) -> Iterator[Finding]:
    """An item checks an outcome that is not this lesson's."""
    if course.outcomes_file.usable:
        for lesson, quiz in course.written("quiz"):
            own = {outcome["id"] for outcome in course.outcomes_of(lesson.id)}
            for item in quiz.data["items"]:
                if item.get("outcome") is not None:
                    yield finding(quiz.path, show(item["id"]), item["outcome"] not in own,
                                  o=item["outcome"], id=lesson.id)


@rule("qz005", FAIL, "quiz", "item has neither outcome nor retrieves")
def qz005(course: Course) -> Iterator[Finding]:
    """An item checks neither an outcome nor an earlier term: it assesses nothing declared."""
    for lesson, item in course.entries("quiz", "items"):
        yield finding(lesson.quiz.path, show(item["id"]), item.get("outcome") is None and item.get("retrieves") is None)


@rule("qz006", FAIL, "quiz", "type '{t}' is not mcq or short")
def qz006(course: Course) -> Iterator[Finding]:
    """An item's type is neither mcq nor short, so no viewer can present it."""
    for lesson, item in course.entries("quiz", "items"):
        yield finding(lesson.quiz.path, show(item["id"]), item["type"] not in TYPES, t=item["type"])


@rule("qz007", FAIL, "quiz", "item has {n} options; house style allows {min} to {max}")
def qz007(course: Course) -> Iterator[Finding]:
    """An mcq item has too few options to discriminate, or too many to read (absent: 0)."""
    lo, hi = course.data["quiz.min_options"], course.data["quiz.max_options"]
    for lesson, item in course.entries("quiz", "items"):
        if item["type"] == "mcq":
            n = len(item.get("options") or [])
            yield finding(lesson.quiz.path, show(item["id"]), not lo <= n <= hi, n=n, min=lo, max=hi)


@rule("qz008", FAIL, "quiz", "item has {n} correct options; it needs exactly one")
def qz008(course: Course) -> Iterator[Finding]:
    """An mcq item with options has no correct option, or more than one."""
    for lesson, item in course.entries("quiz", "items"):
        if item["type"] == "mcq" and item.get("options"):
            n = sum(1 for option in item["options"] if option["correct"] is True)
            yield finding(lesson.quiz.path, show(item["id"]), n != 1, n=n)


@rule("qz009", FAIL, "quiz", "distractor '{text}' has no why_wrong")
def qz009(course: Course) -> Iterator[Finding]:
    """A distractor does not say which misconception it embodies."""
    for lesson, subject, option in _options(course):
        if option["correct"] is False:
            yield finding(lesson.quiz.path, subject,
                          option.get("why_wrong") is None, text=option["text"])


@rule("qz010", FAIL, "quiz", "option '{text}' is banned by house style")
def qz010(course: Course) -> Iterator[Finding]:
    """An option is "all/none of the above" (one trailing '.' ignored)."""
    banned = course.data["quiz.banned_options"]
    for lesson, subject, option in _options(course):
        yield finding(lesson.quiz.path, subject, norm(option["text"]).removesuffix(".") in banned, text=option["text"])


@rule("qz011", FAIL, "quiz", "option '{text}' repeats an earlier option")
def qz011(course: Course) -> Iterator[Finding]:
    """Two options of an item read the same (after norm)."""
    for lesson, item in course.entries("quiz", "items"):
        if item["type"] != "mcq":
            continue
        seen: set[str] = set()
        for k, option in enumerate(item.get("options") or [], 1):
            text = norm(option["text"])
            yield finding(lesson.quiz.path, f"{show(item['id'])} option {k}", text in seen, text=option["text"])
            seen.add(text)


@rule("qz012", FAIL, "quiz", "short item has no answer")
def qz012(course: Course) -> Iterator[Finding]:
    """A short-answer item has no model answer to mark against."""
    for lesson, item in course.entries("quiz", "items"):
        if item["type"] == "short":
            yield finding(lesson.quiz.path, show(item["id"]), item.get("answer") is None)


@rule("qz013", FAIL, "quiz", "item id '{x}' does not match '{id}-q<n>'")
def qz013(course: Course) -> Iterator[Finding]:
    """An item id is not the lesson id followed by -q<n>, n from 1."""
    for lesson, item in course.entries("quiz", "items"):
        yield finding(lesson.quiz.path, show(item["id"]),
                      not id_matches(item["id"], lesson.id, "q"), x=item["id"], id=lesson.id)


@rule("qz014", FAIL, "quiz",
      "item retrieves '{t}', which is not introduced in this or an earlier lesson")
def qz014(course: Course) -> Iterator[Finding]:
    """A retrieval item asks about a term no lesson up to this one has introduced."""
    for lesson, item in course.entries("quiz", "items"):
        retrieves = item.get("retrieves")
        if retrieves is not None:
            fired = not course.introduced_before(retrieves, lesson.pos, inclusive=True)
            yield finding(lesson.quiz.path, show(item["id"]), fired, t=retrieves)
