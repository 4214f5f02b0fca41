"""ret: every introduced term is asked about again, in its lesson's quiz or a later one.

Retrieval practice is what moves a term into long-term memory; a term that is
introduced and never asked about again is one the course taught once and dropped.
"""

from __future__ import annotations

from collections.abc import Iterator

from stay.validate._course import Course, Intro
from stay.validate._registry import Finding, Severity, finding, rule
from stay.validate._text import mentions, norm, show

WARN = Severity.WARN


def _asked(course: Course, term: str, intro: Intro) -> bool:
    for lesson in course.lessons[intro.lesson.pos:]:
        if not lesson.quiz.usable:
            continue
        for item in lesson.quiz.data["items"]:
            retrieves = item.get("retrieves")
            if retrieves is not None and norm(retrieves) == term:
                return True
            if mentions(item["stem"], intro.term):
                return True
    return False


@rule("ret001", WARN, "quiz", "term '{t}' introduced in {id} is never asked about in a quiz")
def ret001(course: Course) -> Iterator[Finding]:
    """No usable quiz of the introducing lesson or a later one retrieves the term or
    mentions it in a stem. Repair hands it to the introducing lesson's quiz."""
    for term, intro in course.introduced.items():
        yield finding(intro.lesson.quiz.path, show(intro.term), not _asked(course, term, intro),
                      t=intro.term, id=intro.lesson.id)


RULES = (ret001,)
