"""ret: every introduced term is asked about again, in its lesson's quiz or a later one (retrieval
practice moves it into long-term memory)."""

from __future__ import annotations

from collections.abc import Iterator

from stay.validate._course import Course, Finding, Severity, finding, rule
from stay.validate._text import mentions_normed, norm, show

WARN = Severity.WARN


@rule("ret001", WARN, "quiz", "term '{t}' introduced in {id} is never asked about in a quiz")
def ret001(course: Course) -> Iterator[Finding]:
    """No usable quiz of the introducing lesson or a later one retrieves the term or
    mentions it in a stem. Repair hands it to the introducing lesson's quiz."""
    if not course.introduced:
        return
    # per lesson position, (norm(retrieves) or None, norm(stem)) of each usable quiz item
    asked: list[list[tuple[str | None, str]]] = []
    for lesson in course.lessons:
        items = lesson.quiz.data["items"] if lesson.quiz.usable else []
        asked.append([(None if item.get("retrieves") is None else norm(item["retrieves"]), norm(item["stem"]))
                      for item in items])
    for term, intro in course.introduced.items():
        fired = not any(retrieves == term or mentions_normed(stem, intro.term)
                        for items in asked[intro.lesson.pos:] for retrieves, stem in items)
        yield finding(intro.lesson.quiz.path, show(intro.term), fired, t=intro.term, id=intro.lesson.id)
