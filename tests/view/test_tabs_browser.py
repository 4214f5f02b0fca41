"""A lesson page keeps up with the learner's other tabs (progress.js's and quiz.js's
``storage`` listeners): two pages of one browser context (one localStorage) on the same
lesson; what one stores, the other shows without a reload, and a save in either is made
to what is stored now, so neither erases the other's progress. A damaged value written
by another tab is not applied: the page keeps what it shows, and nothing throws. Lessons,
quiz items and exercises come from the sample's own files. The fixtures are
test_browser's (Chromium, the loopback server) and conftest's ``rendered_sites``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stay.artefacts as artefacts
from tests.conftest import SAMPLE
from tests.view.test_browser import Watch, browser, serve, watched_context  # noqa: F401  (the module's fixtures)
from tests.view.test_learner_browser import _answer, _choices, _lessons, _right, _wrong

KEY = f"stay:progress:{SAMPLE.name}"
LESSON, OTHER = _lessons()[:2]
WAIT = 5000  # ms for another tab's storage event to reach a page


def _exercise() -> str:
    exercises = artefacts.load(next(SAMPLE.glob(f"modules/*/{LESSON}.exercises.yaml")))
    assert isinstance(exercises, artefacts.Exercises)
    return exercises.exercises[0].id


@pytest.fixture
def tabs(browser: Any, serve: Any, rendered_sites: Path) -> Iterator[tuple[Any, Any, str, Watch]]:  # noqa: F811
    """Tabs A and B of one fresh context, both on the sample's first lesson, both watched."""
    base = serve(rendered_sites / "sample")
    with watched_context(browser, base, pages=2) as (pages, watch):
        for page in pages:
            page.goto(f"{base}{LESSON}.html")
        yield pages[0], pages[1], base, watch


def _stored(page: Any) -> Any:
    return json.loads(page.evaluate(f"localStorage.getItem({json.dumps(KEY)})"))


def _pressed(page: Any) -> str | None:
    return page.locator("button.finish").get_attribute("aria-pressed")  # type: ignore[no-any-return]


def _wait_pressed(page: Any, value: str) -> None:
    page.wait_for_function("v => document.querySelector('button.finish').getAttribute('aria-pressed') === v",
                           arg=value, timeout=WAIT)


def test_finished_in_one_tab_shows_finished_in_the_other_and_its_toggle_keeps_it(
        tabs: tuple[Any, Any, str, Watch]) -> None:
    a, b, _base, watch = tabs
    box = f"input[data-exercise='{_exercise()}']"
    assert _pressed(b) == "false"
    a.get_by_role("button", name="Mark this lesson finished").click()
    a.locator(box).check()
    _wait_pressed(b, "true")  # no reload
    b.get_by_text("You finished this lesson.").wait_for(timeout=WAIT)
    b.wait_for_function("s => document.querySelector(s).checked", arg=box, timeout=WAIT)
    # B's toggle now un-finishes, as it shows; pressed again, it finishes: the other tab's
    # exercise tick is kept through both of B's saves, and A follows B
    b.get_by_role("button", name="Mark this lesson finished").click()
    _wait_pressed(a, "false")
    b.get_by_role("button", name="Mark this lesson finished").click()
    _wait_pressed(a, "true")
    stored = _stored(b)
    assert stored["finished"] == [LESSON]
    assert stored["exercises"] == [_exercise()]
    first = _choices()[0]
    _answer(a, first, _right(first))
    explanation = b.locator(f"#{first.id} .explanation")
    explanation.wait_for(timeout=WAIT)
    # a reset in another tab (its key removed) shows here as no progress: the question open again
    a.evaluate(f"localStorage.removeItem({json.dumps(KEY)})")
    _wait_pressed(b, "false")
    b.wait_for_function("s => !document.querySelector(s).checked", arg=box, timeout=WAIT)
    explanation.wait_for(state="hidden", timeout=WAIT)
    assert b.locator(f"#{first.id} input[type=radio]:checked").count() == 0
    assert b.locator(f"#{first.id} input[type=radio]:disabled").count() == 0
    _answer(b, first, _wrong(first))  # and can be answered again
    assert _stored(b)["quiz"] == {first.id: _wrong(first)}
    assert watch.problems == []


def test_the_toggle_makes_the_change_it_shows_even_before_the_other_tabs_event(
        tabs: tuple[Any, Any, str, Watch]) -> None:
    """A write this page has not heard of yet (made here, so no storage event reaches it):
    "Mark this lesson finished", shown unpressed, finishes the lesson; it never un-finishes
    what the other tab finished."""
    _a, b, _base, watch = tabs
    value = {**_stored(b), "finished": [LESSON]}
    b.evaluate("([key, value]) => localStorage.setItem(key, value)", [KEY, json.dumps(value)])
    assert _pressed(b) == "false"
    b.get_by_role("button", name="Mark this lesson finished").click()
    assert _pressed(b) == "true"
    assert _stored(b)["finished"] == [LESSON]
    assert watch.problems == []


def test_an_answer_in_one_tab_shows_in_the_other_and_both_tabs_answers_are_kept(
        tabs: tuple[Any, Any, str, Watch]) -> None:
    a, b, base, watch = tabs
    first, second = _choices()[:2]
    _answer(a, first, _wrong(first))
    a.goto(f"{base}{OTHER}.html")  # A goes on, and finishes another lesson
    a.get_by_role("button", name="Mark this lesson finished").click()
    a.get_by_text("You finished this lesson.").wait_for()
    # B, open since before, shows A's answer as answered: it cannot be asked (and stored) again
    question = b.locator(f"#{first.id}")
    question.locator("li.option").nth(_wrong(first)).locator(".verdict").wait_for(timeout=WAIT)
    assert question.locator("input[type=radio]").nth(_wrong(first)).is_checked()
    assert question.locator("button.check-answer").is_disabled()
    _answer(b, second, _right(second))
    # read where it was written: Chromium hands one tab's localStorage write to another tab's
    # renderer a moment later, so A sees it once it arrives (waited for below), not at once
    raw = b.evaluate(f"localStorage.getItem({json.dumps(KEY)})")
    stored = json.loads(raw)
    assert stored["quiz"] == {first.id: _wrong(first), second.id: _right(second)}
    a.wait_for_function("([key, value]) => localStorage.getItem(key) === value", arg=[KEY, raw], timeout=WAIT)
    assert stored["finished"] == [OTHER]
    assert _pressed(b) == "false"  # B's lesson was never finished
    assert watch.problems == []


DAMAGED = {"not JSON": "{not json", "another version": json.dumps({"v": 2, "finished": []}), "a list": "[]"}


@pytest.mark.parametrize("value", list(DAMAGED.values()), ids=list(DAMAGED))
def test_a_damaged_value_from_another_tab_leaves_the_page_as_it_was(tabs: tuple[Any, Any, str, Watch],
                                                                    value: str) -> None:
    a, b, _base, watch = tabs
    first = _choices()[0]
    box = f"input[data-exercise='{_exercise()}']"
    a.get_by_role("button", name="Mark this lesson finished").click()
    a.locator(box).check()
    _answer(a, first, _right(first))
    b.locator(f"#{first.id} .explanation").wait_for(timeout=WAIT)  # B follows the valid value
    _wait_pressed(b, "true")
    # a listener added after the page's own runs after them: once it has seen the damaged
    # value, so have progress.js and quiz.js
    b.evaluate("() => addEventListener('storage', e => { window.__seen = e.newValue; })")
    a.evaluate("([key, value]) => localStorage.setItem(key, value)", [KEY, value])
    b.wait_for_function("v => window.__seen === v", arg=value, timeout=WAIT)
    assert _pressed(b) == "true"
    assert b.locator(box).is_checked()
    assert b.locator(f"#{first.id} .explanation").is_visible()
    assert b.evaluate(f"localStorage.getItem({json.dumps(KEY)})") == value  # read, never rewritten
    assert watch.problems == []
