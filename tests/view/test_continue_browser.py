""""Continue where you left off" in a real browser: after a learner opens lessons, the link
on the listing (``stay view --all``) and on the course's index names the last lesson by its
title and opens it; a stored page that is no lesson of that course shows no link, and a
title is shown as text, never as markup. The titles come from the courses' own curricula,
never from the viewer. The fixtures are test_browser's (Chromium, the loopback server) and
conftest's ``rendered_sites``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import stay.artefacts as artefacts
from stay.view._site import render_library
from tests.conftest import SAMPLE
from tests.view.sites import FLAG, LIBRARY, PAYLOADS, library_lessons
from tests.view.test_browser import Watch, browser, serve  # noqa: F401  (the module's fixtures)
from tests.view.test_progress_bar_browser import finish_by_the_pages, key

COURSES = library_lessons()
"""slug -> (title, lesson ids), in the listing's order (by slug)."""
SAMPLE_SLUG, SHORT_SLUG = sorted(COURSES)
CONTINUE = "Continue where you left off"


def titles(course: Path) -> dict[str, str]:
    """Lesson id -> title, from the course's curriculum."""
    modules = artefacts.load(course / "curriculum.yaml", artefacts.Curriculum).modules
    return {lesson.id: lesson.title for module in modules for lesson in module.lessons}


def stored(last: str | None) -> str:
    return json.dumps({"v": 1, "opened": [], "finished": [], "quiz": {}, "exercises": [], "last": last})


def shows(title: str) -> str:
    """What the link says for a lesson of that title."""
    return f"{CONTINUE}: {title}"


def link(page: Any, slug: str) -> Any:
    return page.locator(f'a.continue[data-course="{slug}"]')


@pytest.fixture
def listing(browser: Any, serve: Any, rendered_sites: Path) -> Iterator[tuple[Any, str, Watch]]:  # noqa: F811
    """A fresh context (its own, empty localStorage) on the library's site, watched."""
    base = serve(rendered_sites / LIBRARY)
    context = browser.new_context()
    page = context.new_page()
    watch = Watch(base)
    watch.attach(page)
    yield page, base, watch
    context.close()


def test_the_continue_link_names_the_last_lesson_by_its_title_and_opens_it(listing: tuple[Any, str, Watch]) -> None:
    page, base, watch = listing
    page.goto(base + "index.html")
    assert [link(page, slug).is_visible() for slug in COURSES] == [False] * len(COURSES)  # nothing opened yet
    lessons = COURSES[SAMPLE_SLUG][1]
    finish_by_the_pages(page, base, SAMPLE_SLUG, 1, open_only=1)  # finish the first, open the second
    last, title = lessons[1], titles(SAMPLE)[lessons[1]]
    assert title != last  # the title is not the id, or this proves nothing
    on_listing = link(page, SAMPLE_SLUG)
    assert on_listing.is_visible() and on_listing.inner_text() == shows(title)
    assert on_listing.get_attribute("href") == f"{SAMPLE_SLUG}/{last}.html"
    assert not link(page, SHORT_SLUG).is_visible()  # another course's progress is not this one's
    on_listing.click()
    page.wait_for_url(f"{base}{SAMPLE_SLUG}/{last}.html")
    assert title in page.get_by_role("heading", level=1).inner_text()
    page.goto(f"{base}{SAMPLE_SLUG}/index.html")  # the course's own index says the same
    on_index = link(page, SAMPLE_SLUG)
    assert on_index.is_visible() and on_index.inner_text() == shows(title)
    on_index.click()
    page.wait_for_url(f"{base}{SAMPLE_SLUG}/{last}.html")
    assert watch.problems == []


def _not_lessons() -> dict[str, str]:
    """Stored pages that are no lesson of the short course: a lesson only the sample has, a
    page of the course that is not a lesson, and a made-up lesson."""
    only_sample = [lesson for lesson in COURSES[SAMPLE_SLUG][1] if lesson not in COURSES[SHORT_SLUG][1]]
    assert only_sample  # the two courses differ, or the first case proves nothing
    return {"another course's lesson": f"{only_sample[0]}.html", "not a lesson": "status.html",
            "no such lesson": "zz-l99.html"}


@pytest.mark.parametrize("last", list(_not_lessons().values()), ids=list(_not_lessons()))
def test_a_stored_page_that_is_no_lesson_of_the_course_shows_no_link(listing: tuple[Any, str, Watch],
                                                                      last: str) -> None:
    page, base, watch = listing
    page.goto(base + "index.html")
    first = COURSES[SAMPLE_SLUG][1][0]
    values = {SHORT_SLUG: stored(last), SAMPLE_SLUG: stored(f"{first}.html")}  # the sample's: shown
    for slug, value in values.items():
        page.evaluate("([key, value]) => localStorage.setItem(key, value)", [key(slug), value])
    page.reload()
    assert not link(page, SHORT_SLUG).is_visible()
    assert link(page, SAMPLE_SLUG).inner_text() == shows(titles(SAMPLE)[first])
    page.goto(f"{base}{SHORT_SLUG}/index.html")
    assert not link(page, SHORT_SLUG).is_visible()
    assert watch.problems == []


def test_a_title_is_shown_as_text_never_as_markup(browser: Any, serve: Any, tmp_path: Path) -> None:  # noqa: F811
    courses = tmp_path / "courses"
    course = courses / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    curriculum = yaml.safe_load((course / "curriculum.yaml").read_text(encoding="utf-8"))
    lesson = curriculum["modules"][0]["lessons"][0]
    lesson["title"] = f"\"Quotes' & {' '.join(PAYLOADS)}"
    (course / "curriculum.yaml").write_text(yaml.safe_dump(curriculum, sort_keys=False), encoding="utf-8")
    render_library(courses, tmp_path / "site")
    base = serve(tmp_path / "site")
    context = browser.new_context()
    page = context.new_page()
    watch = Watch(base)
    watch.attach(page)
    page.goto(base + "index.html")
    page.evaluate("([key, value]) => localStorage.setItem(key, value)", [key(SAMPLE.name), stored(
        f"{lesson['id']}.html")])
    for home in ("index.html", f"{SAMPLE.name}/index.html"):
        page.goto(base + home)
        shown = link(page, SAMPLE.name)
        assert shown.inner_text() == shows(titles(course)[lesson["id"]])
        assert shown.locator("*").count() == 0  # no element made of the title
        assert page.evaluate(FLAG) is None  # no payload ran
    assert watch.problems == []
    context.close()
