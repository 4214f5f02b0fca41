"""out: each outcome is one observable behaviour, at a declared Bloom level. bloom-verbs.yaml is the table
the outcomes stage is prompted with; a verb off its level, or an internal state ("understand"), is caught."""

from __future__ import annotations

from collections.abc import Iterator

from stay.validate._course import Course, Finding, Severity, finding, rule
from stay.validate._text import first_word, id_matches, norm, show, words

FAIL, WARN = Severity.FAIL, Severity.WARN
O = "outcomes.yaml"  # noqa: E741


@rule("out001", FAIL, "outcomes", "outcome id '{id}' does not match '{lesson}-o<n>'")
def out001(course: Course) -> Iterator[Finding]:
    """An outcome id is not its lesson id followed by -o<n>, n from 1."""
    for outcome in course.outcomes:
        fired = not id_matches(outcome["id"], outcome["lesson"], "o")
        yield finding(O, show(outcome["id"]), fired, id=outcome["id"], lesson=outcome["lesson"])


@rule("out002", FAIL, "outcomes", "outcome names lesson '{lesson}', which is not in the curriculum")
def out002(course: Course) -> Iterator[Finding]:
    """An outcome belongs to a lesson the curriculum does not have."""
    if course.curriculum_file.usable:
        for outcome in course.outcomes:
            lesson = outcome["lesson"]
            yield finding(O, show(outcome["id"]), lesson not in course.lesson_ids, lesson=lesson)


@rule("out003", FAIL, "outcomes", "bloom level '{bloom}' is not one of {order}")
def out003(course: Course) -> Iterator[Finding]:
    """An outcome's level is not one of the levels in bloom-verbs.yaml's order."""
    order = course.data.order
    for outcome in course.outcomes:
        bloom = outcome["bloom"]
        yield finding(O, show(outcome["id"]), bloom not in order, bloom=bloom, order=order)


@rule("out004", FAIL, "outcomes", "text should open with its verb '{verb}', found '{first}'")
def out004(course: Course) -> Iterator[Finding]:
    """The outcome text does not open with its declared verb, so the verb checked is not
    the behaviour a reader sees."""
    for outcome in course.outcomes:
        first = first_word(outcome["text"])
        verb = outcome["verb"]
        yield finding(O, show(outcome["id"]), first != norm(verb), verb=verb, first=first)


@rule("out005", FAIL, "outcomes", "verb '{verb}' names an internal state; use an observable verb")
def out005(course: Course) -> Iterator[Finding]:
    """The verb names an internal state (know, understand): nothing a learner does shows it."""
    banned = course.data.banned
    for outcome in course.outcomes:
        verb = outcome["verb"]
        yield finding(O, show(outcome["id"]), norm(verb) in banned, verb=verb)


@rule("out006", FAIL, "outcomes", "verb '{verb}' is not a {bloom}-level verb in bloom-verbs.yaml")
def out006(course: Course) -> Iterator[Finding]:
    """The verb is not listed under the outcome's declared level.

    Evaluated only for outcomes with a known level and an unbanned verb, which
    out003 and out005 already report otherwise.
    """
    data = course.data
    for outcome in course.outcomes:
        bloom, verb = outcome["bloom"], outcome["verb"]
        if bloom in data.order and norm(verb) not in data.banned:
            yield finding(O, show(outcome["id"]), norm(verb) not in data.levels.get(bloom, []), verb=verb, bloom=bloom)


@rule("out007", FAIL, "outcomes", "lesson {id} has {n} outcomes; house style allows 1 to {max}")
def out007(course: Course) -> Iterator[Finding]:
    """A curriculum lesson has no outcome, or more than a lesson can teach."""
    if course.curriculum_file.usable and course.outcomes_file.usable:
        most = course.data["lesson.max_outcomes"]
        for lesson in course.lessons:
            n = len(course.outcomes_of(lesson.id))
            yield finding(O, show(lesson.id), not 1 <= n <= most, id=lesson.id, n=n, max=most)


@rule("out008", FAIL, "outcomes", "duplicate outcome id '{id}'")
def out008(course: Course) -> Iterator[Finding]:
    """Two outcomes share an id, so evidence and quiz items cannot say which they mean."""
    seen: set[str] = set()
    for outcome in course.outcomes:
        yield finding(O, show(outcome["id"]), outcome["id"] in seen, id=outcome["id"])
        seen.add(outcome["id"])


@rule("out009", WARN, "outcomes", "outcome joins two verbs ('{first}' and '{w}'); split it")
def out009(course: Course) -> Iterator[Finding]:
    """The text joins a second verb with 'and'/'or': two behaviours, assessed as one.

    The first verb-table word at index 2 or later that follows 'and' or 'or'.
    """
    verbs = course.data.all_verbs
    for outcome in course.outcomes:
        text = words(norm(outcome["text"]))
        joined = next((w for i, w in enumerate(text)
                       if i >= 2 and text[i - 1] in ("and", "or") and w in verbs), None)
        yield finding(O, show(outcome["id"]), joined is not None,
                      first=first_word(outcome["text"]), w=joined)
