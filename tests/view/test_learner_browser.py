"""A learner in a real browser: quizzes that test (nothing shows the right option
before an answer), a score per quiz, short answers that need an answer first, and
progress kept in localStorage through a reload, reset from the course index, and
never broken by damaged or missing storage. The fixtures (Debian's Chromium through
Playwright, a loopback server, the rendered sample) are test_browser's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stay.artefacts as artefacts
from stay.view._load import load_course
from tests.conftest import SAMPLE
from tests.view.test_browser import Watch, browser, sample_site, screenshot, serve, watched_context  # noqa: F401

SLUG = SAMPLE.name
KEY = f"stay:progress:{SLUG}"
LESSON = "m01-l01"


def _quiz(lesson: str = LESSON) -> artefacts.Quiz:
    path = next(SAMPLE.glob(f"modules/*/{lesson}.quiz.yaml"))
    quiz = artefacts.load(path)
    assert isinstance(quiz, artefacts.Quiz)
    return quiz


def _choices(lesson: str = LESSON) -> list[artefacts.QuizItem]:
    return [item for item in _quiz(lesson).items if item.type == "mcq" and item.options]


def _right(item: artefacts.QuizItem) -> int:
    assert item.options is not None
    return next(i for i, o in enumerate(item.options) if o.correct)


def _wrong(item: artefacts.QuizItem) -> int:
    assert item.options is not None
    return next(i for i, o in enumerate(item.options) if not o.correct)


def _lessons() -> list[str]:
    return [lesson.id for lesson in load_course(SAMPLE).lessons if lesson.page]


@pytest.fixture
def site(browser: Any, serve: Any, sample_site: Path) -> Iterator[tuple[Any, str, Watch]]:  # noqa: F811
    """A fresh browser context (its own, empty localStorage) on the sample, watched."""
    base = serve(sample_site)
    with watched_context(browser, base) as ([page], watch):
        yield page, base, watch


def _answer(page: Any, item: artefacts.QuizItem, option: int) -> None:
    page.locator(f"label[for='{item.id}-o{option}']").click()
    page.locator(f"#{item.id} button.check-answer").click()


def _score(page: Any) -> str:
    return str(page.locator("#quiz .score").inner_text()).strip()


def _expected_score(right: int, answered: int, total: int) -> str:
    left = total - answered
    if left:
        return f"Score so far: {right} of {answered} answered right; {left} question{'s' if left > 1 else ''} to go."
    return f"Score: {right} of {total} right."


def test_answering_shows_the_verdict_the_right_option_and_the_explanation_never_before(
        site: tuple[Any, str, Watch]) -> None:
    page, base, watch = site
    page.goto(base + f"{LESSON}.html")
    items = _choices()
    item = items[0]
    assert item.options is not None
    wrong, right = _wrong(item), _right(item)
    question = page.locator(f"#{item.id}")
    assert question.locator("fieldset legend").inner_text().strip() == item.stem.strip()
    assert question.locator("input[type=radio]").count() == len(item.options)
    seen = str(page.locator("#quiz").inner_text())
    # before any answer: no verdict, no explanation, no marked option, and nothing to open that shows one
    for option in item.options:
        assert not option.why_wrong or option.why_wrong not in seen
    assert item.explanation.strip() not in seen and "Correct." not in seen and "right answer" not in seen
    assert page.locator("#quiz details:visible").count() == 0
    assert _score(page) == ""
    check = question.locator("button.check-answer")
    assert check.is_disabled()  # nothing chosen yet
    radios = question.locator("input[type=radio]")
    radios.first.focus()
    page.keyboard.press("Space")
    page.keyboard.press("ArrowDown")  # moving through the options with the keys answers nothing
    assert radios.nth(1).is_checked() and check.is_enabled()
    assert not question.locator(".explanation").is_visible() and not question.locator(".verdict:visible").count()

    _answer(page, item, wrong)
    chosen = question.locator("li.option").nth(wrong)
    assert chosen.locator(".verdict").inner_text() == f"Not this one. {item.options[wrong].why_wrong}"
    assert question.locator("li.option").nth(right).locator(".right-answer").is_visible()
    assert question.locator(".explanation").inner_text().endswith(item.explanation.strip())
    assert question.locator("input:disabled").count() == len(item.options) - 1  # answered once
    assert page.locator("#quiz .score").get_attribute("aria-live") == "polite"
    assert _score(page) == _expected_score(0, 1, len(items))
    screenshot(page, "learner-quiz-answered.png")
    assert watch.problems == []


def test_the_score_counts_right_and_wrong_answers(site: tuple[Any, str, Watch]) -> None:
    page, base, watch = site
    page.goto(base + f"{LESSON}.html")
    items = _choices()
    assert len(items) >= 3  # a wrong, a right, and one more
    _answer(page, items[0], _wrong(items[0]))
    _answer(page, items[1], _right(items[1]))
    assert page.locator(f"#{items[1].id} li.option").nth(_right(items[1])).locator(".verdict").inner_text() \
        == "Correct."
    assert _score(page) == _expected_score(1, 2, len(items))
    for item in items[2:]:
        _answer(page, item, _right(item))
    assert _score(page) == _expected_score(len(items) - 1, len(items), len(items))
    assert watch.problems == []


def test_answers_progress_and_exercises_survive_a_reload_and_reset_clears_them(site: tuple[Any, str, Watch]) -> None:
    page, base, watch = site
    lessons = _lessons()
    items = _choices()
    page.goto(base + f"{lessons[1]}.html")  # opened, not finished
    page.goto(base + f"{LESSON}.html")
    _answer(page, items[0], _wrong(items[0]))
    exercise = artefacts.load(next(SAMPLE.glob(f"modules/*/{LESSON}.exercises.yaml")))
    assert isinstance(exercise, artefacts.Exercises)
    done = page.locator(f"input[data-exercise='{exercise.exercises[0].id}']")
    done.check()
    page.locator("button.finish").click()
    score = _score(page)

    page.reload()
    question = page.locator(f"#{items[0].id}")
    assert question.locator("input[type=radio]").nth(_wrong(items[0])).is_checked()
    assert question.locator("li.option").nth(_wrong(items[0])).locator(".verdict").is_visible()
    assert question.locator(".explanation").is_visible()
    assert _score(page) == score == _expected_score(0, 1, len(items))
    assert done.is_checked()
    assert page.locator("button.finish").get_attribute("aria-pressed") == "true"
    stored = json.loads(page.evaluate(f"localStorage.getItem({json.dumps(KEY)})"))
    assert stored == {"v": 1, "opened": [lessons[1], LESSON], "finished": [LESSON],
                      "quiz": {items[0].id: _wrong(items[0])}, "exercises": [exercise.exercises[0].id],
                      "last": f"{LESSON}.html"}

    page.goto(base + "index.html")
    assert page.locator(".progress .progress-text").inner_text() == \
        f"1 of {len(lessons)} lessons finished; 2 opened."
    assert page.locator(".progress progress").evaluate("e => [e.value, e.max]") == [1, len(lessons)]
    link = page.locator("a.continue")
    assert link.is_visible() and link.get_attribute("href") == f"{LESSON}.html"
    screenshot(page, "learner-course-index.png")
    page.once("dialog", lambda dialog: dialog.dismiss())  # asked first: saying no keeps everything
    page.locator("button.reset-progress").click()
    assert page.evaluate(f"localStorage.getItem({json.dumps(KEY)})") is not None
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("button.reset-progress").click()
    assert page.locator(".progress .progress-text").inner_text() == f"0 of {len(lessons)} lessons finished; 0 opened."
    assert not link.is_visible()

    page.goto(base + f"{LESSON}.html")
    assert not question.locator("input[type=radio]").nth(_wrong(items[0])).is_checked()
    assert not question.locator(".explanation").is_visible() and _score(page) == ""
    assert not done.is_checked() and page.locator("button.finish").get_attribute("aria-pressed") == "false"
    assert watch.problems == []


def test_a_short_answer_needs_text_before_the_model_answer_shows(site: tuple[Any, str, Watch]) -> None:
    page, base, watch = site
    page.goto(base + f"{LESSON}.html")
    item = next(i for i in _quiz().items if i.type == "short")
    assert item.answer is not None
    question = page.locator(f"#{item.id}")
    button = question.locator("button.show-answer")
    model = question.locator(".model-answer")
    assert button.is_visible() and button.is_disabled() and not model.is_visible()
    assert item.answer not in str(page.locator("#quiz").inner_text())
    field = question.get_by_label("Your answer")
    field.fill("   ")
    assert button.is_disabled()
    field.fill("lang=en, install")
    assert button.is_enabled()
    button.click()
    assert model.inner_text() == f"Model answer: {item.answer}"
    assert question.locator(".explanation").is_visible()
    page.reload()
    assert field.input_value() == "lang=en, install" and model.is_visible()
    assert watch.problems == []


DAMAGED = ["{not json", "null", "[]", '"text"', json.dumps({"v": 2, "opened": ["m01-l01"]}), "x" * 300_000,
           json.dumps({"v": 1, "opened": "m01-l01", "finished": [1, None, {"a": 1}, "zz-l99", "m01-l02"],
                       "quiz": {"m01-l01-q1": 99, "m01-l01-q3": -1, "m01-l01-q2": ["a"], "__proto__": 1,
                                "zz-q1": 0},
                       "exercises": {"m01-l01-e1": True}, "last": "javascript:alert(1)"})]


@pytest.mark.parametrize("value", DAMAGED, ids=range(len(DAMAGED)))
def test_a_damaged_stored_value_is_treated_as_no_progress(site: tuple[Any, str, Watch], value: str) -> None:
    page, base, watch = site
    page.goto(base + "index.html")
    page.evaluate("([key, value]) => localStorage.setItem(key, value)", [KEY, value])
    page.reload()
    lessons = _lessons()
    finished = 1 if "m01-l02" in value and '"v": 1' in value else 0  # a listed lesson is the one entry kept
    assert page.locator(".progress .progress-text").inner_text() == \
        f"{finished} of {len(lessons)} lessons finished; 0 opened."
    assert not page.locator("a.continue").is_visible()
    page.goto(base + f"{LESSON}.html")
    assert page.locator("#quiz .quiz-item.answered").count() == 0
    item = _choices()[0]
    _answer(page, item, _right(item))  # and the quiz still works, and keeps what it is given
    assert page.locator(f"#{item.id} .explanation").is_visible()
    stored = json.loads(page.evaluate(f"localStorage.getItem({json.dumps(KEY)})"))
    assert stored["quiz"][item.id] == _right(item) and stored["last"] == f"{LESSON}.html"
    assert not set(stored["quiz"]) & {"m01-l01-q2", "m01-l01-q3", "__proto__"}  # malformed: dropped
    assert watch.problems == []


UNAVAILABLE = {
    # where storage is blocked (cookies off, some private modes): reading window.localStorage throws
    "blocked": "Object.defineProperty(window, 'localStorage', "
               "{get() { throw new DOMException('denied', 'SecurityError'); }});",
    # a full quota: every write throws
    "full": "Storage.prototype.setItem = function () { throw new DOMException('full', 'QuotaExceededError'); };",
}


@pytest.mark.parametrize("how", sorted(UNAVAILABLE))
def test_storage_that_is_blocked_or_full_leaves_the_pages_working(browser: Any, serve: Any,  # noqa: F811
                                                                   sample_site: Path, how: str) -> None:  # noqa: F811
    base = serve(sample_site)
    context = browser.new_context()
    context.add_init_script(UNAVAILABLE[how])
    page = context.new_page()
    watch = Watch(base)
    watch.attach(page)
    page.goto(base + "index.html")
    assert page.locator(".progress .progress-text").inner_text().startswith("0 of ")
    page.goto(base + f"{LESSON}.html")
    item = _choices()[0]
    _answer(page, item, _right(item))
    assert page.locator(f"#{item.id} .explanation").is_visible()
    page.locator("button.finish").click()
    assert page.locator("button.finish").get_attribute("aria-pressed") == "true"
    assert watch.problems == []
    context.close()


def test_without_javascript_one_disclosure_reveals_the_answers(browser: Any, serve: Any,  # noqa: F811
                                                               sample_site: Path) -> None:  # noqa: F811
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(serve(sample_site) + f"{LESSON}.html")
    item = _choices()[0]
    assert item.options is not None
    page.locator(f"label[for='{item.id}-o{_wrong(item)}']").click()
    assert page.locator(f"#{item.id} input[type=radio]").nth(_wrong(item)).is_checked()  # the choice is made
    key = page.locator("#quiz details.answers")
    assert key.is_visible() and key.get_attribute("open") is None
    assert item.explanation.strip() not in str(page.locator("#quiz").inner_text())
    key.locator("summary").click()
    shown = str(key.inner_text())
    assert f"Right answer: {'ABCDEFGHIJKLMNOPQRSTUVWXYZ'[_right(item)]}. {item.options[_right(item)].text}" in shown
    assert item.explanation.strip() in shown and str(item.options[_wrong(item)].why_wrong) in shown
    # the controls that need script to keep anything are not offered
    for control in ("button.check-answer", "button.finish", "button.show-answer", "input[data-exercise]",
                    "button.reset-progress"):
        assert page.locator(control).first.is_hidden(), control
    solution = page.locator(f"#{LESSON}-e1 details.solution")  # exercises' disclosures need no script either
    solution.locator("summary").click()
    assert "Z%C3%BCrich" in solution.inner_text()
    page.goto(page.url.replace(f"{LESSON}.html", "index.html"))
    assert page.locator(".progress").inner_text().startswith(f"{len(_lessons())} lessons.")
    context.close()


def test_progress_too_long_to_load_again_is_not_saved(site: tuple[Any, str, Watch]) -> None:
    """A value load() would throw away (over its bound) is never written: the last
    progress that fits stays, rather than every answer being lost on the next load."""
    page, base, watch = site
    page.goto(base + f"{LESSON}.html")
    item = _choices()[0]
    _answer(page, item, _right(item))
    kept = page.evaluate(f"localStorage.getItem({json.dumps(KEY)})")
    slug = KEY.removeprefix("stay:progress:")
    saved = page.evaluate("([slug]) => { var s = window.stayProgress.load(slug);"
                          " s.opened = s.opened.concat(Array(30000).fill('m01-l01'));"
                          " return window.stayProgress.save(slug, s); }", [slug])
    assert saved is False
    assert page.evaluate(f"localStorage.getItem({json.dumps(KEY)})") == kept
    page.reload()
    assert page.locator(f"#{item.id}.answered").count() == 1
    assert watch.problems == []
