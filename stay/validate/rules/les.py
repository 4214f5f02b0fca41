"""les: the lesson's prose follows its plan (headings, so the viewer's outline is the plan's; length, from
its minutes) and the house style the writing stage was prompted with."""

from __future__ import annotations

from collections.abc import Iterator

from stay.validate._course import Course, Finding, Lesson, Severity, finding, lesson_file_rules, rule
from stay.validate._text import Body, mentions_normed, quoted, show, times

FAIL, WARN = Severity.FAIL, Severity.WARN


def _written(course: Course) -> Iterator[tuple[Lesson, Body]]:
    return ((lesson, md.body) for lesson, md in course.written("md") if md.body is not None)


les001, les002 = lesson_file_rules("les", "md", "content", "front matter", (
    "A planned lesson has no usable .md (mid-run, a WARN).",
    "The front matter names another lesson than the file it sits in."))


@rule("les003", FAIL, "content", "title headings [{found}] should be [{title}]")
def les003(course: Course) -> Iterator[Finding]:
    """The level-1 headings are not exactly one, equal to the plan's title."""
    for lesson, body in _written(course):
        found = [text for level, text in body.headings if level == 1]
        title = lesson.plan.data["title"].strip()
        yield finding(lesson.md.path, "title", found != [title],
                      found=" | ".join(found), title=title)


@rule("les004", FAIL, "content", "sections [{found}] should be [{expected}]")
def les004(course: Course) -> Iterator[Finding]:
    """The level-2 headings are not the plan's section headings, in order."""
    for lesson, body in _written(course):
        found = [text for level, text in body.headings if level == 2]
        expected = [section["heading"].strip() for section in lesson.plan.data["sections"]]
        yield finding(lesson.md.path, "sections", found != expected,
                      found=" | ".join(found), expected=" | ".join(expected))


@rule("les005", FAIL, "content", "lesson is {w} words; {m} minutes allows at most {max}")
def les005(course: Course) -> Iterator[Finding]:
    """More prose words than the plan's minutes allow: the lesson cannot be read in time."""
    per_minute = course.data["prose.max_words_per_minute"]
    for lesson, body in _written(course):
        minutes = lesson.plan.data["minutes"]
        most = times(minutes, per_minute)
        yield finding(lesson.md.path, "length", body.prose_words > most,
                      w=body.prose_words, m=minutes, max=most)


@rule("les006", WARN, "content", "lesson is {w} words; {m} minutes expects at least {min}")
def les006(course: Course) -> Iterator[Finding]:
    """Fewer prose words than the plan's minutes expect: the lesson is probably thin."""
    per_minute = course.data["prose.min_words_per_minute"]
    for lesson, body in _written(course):
        minutes = lesson.plan.data["minutes"]
        least = times(minutes, per_minute)
        yield finding(lesson.md.path, "length", body.prose_words < least,
                      w=body.prose_words, m=minutes, min=least)


@rule("les007", WARN, "content", "paragraph is {n} words; house style allows {max}")
def les007(course: Course) -> Iterator[Finding]:
    """A paragraph is longer than house style allows (advisory)."""
    most = course.data["prose.max_paragraph_words"]
    for lesson, body in _written(course):
        for k, n in enumerate(body.paragraph_words, 1):
            yield finding(lesson.md.path, f"paragraph {k}", n > most, n=n, max=most)


@rule("les008", WARN, "content", "sentence is {n} words; house style allows {max}")
def les008(course: Course) -> Iterator[Finding]:
    """A sentence is longer than house style allows (advisory)."""
    most = course.data["prose.max_sentence_words"]
    for lesson, body in _written(course):
        for k, paragraph_words in enumerate(body.paragraph_words, 1):
            if paragraph_words <= most:  # no sentence is longer than its paragraph: each passes, uncounted
                for s in range(1, body.sentence_count(k - 1) + 1):
                    yield finding(lesson.md.path, f"paragraph {k} sentence {s}", False)
                continue
            for s, n in enumerate(body.sentence_words(k - 1), 1):
                yield finding(lesson.md.path, f"paragraph {k} sentence {s}", n > most,
                              n=n, max=most)


@rule("les009", FAIL, "content", "banned phrases: {phrases}")
def les009(course: Course) -> Iterator[Finding]:
    """The prose uses phrases house style bans ("simply", "obviously"): they tell a
    struggling learner the struggle is their fault."""
    banned = course.data["prose.banned_phrases"]
    for lesson, body in _written(course):
        phrases = sorted(p for p in banned if mentions_normed(body.normed_prose, p))
        yield finding(lesson.md.path, "prose", bool(phrases), phrases=quoted(phrases))


@rule("les010", FAIL, "content", "new term '{t}' is never used in the lesson")
def les010(course: Course) -> Iterator[Finding]:
    """A term the plan introduces never appears in the lesson that introduces it."""
    for lesson, body in _written(course):
        for entry in lesson.plan.data["new_terms"]:
            yield finding(lesson.md.path, show(entry["term"]),
                          not mentions_normed(body.normed_text, entry["term"]), t=entry["term"])


@rule("les011", WARN, "content", "code block has no language")
def les011(course: Course) -> Iterator[Finding]:
    """A code block has no info string, so it cannot be highlighted (advisory)."""
    for lesson, body in _written(course):
        for k, info in enumerate(body.code_infos, 1):
            yield finding(lesson.md.path, f"code block {k}", info == "")
