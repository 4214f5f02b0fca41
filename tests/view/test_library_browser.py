"""A library of courses in a real browser: a learner opens the listing, follows a course
to its home page and on to a lesson, and comes back by the "All courses" link; nothing
fails to load on the way. The fixtures are tests/view/test_browser.py's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from stay.view._site import LISTING, render_library
from tests.view.test_browser import Watch, browser, screenshot, serve  # noqa: F401

PHONE = 390
"""The phone width issue 25 measures pages at."""


def test_open_the_listing_and_follow_a_course_to_a_lesson(browser: Any, serve: Any,  # noqa: F811
                                                           built_course: Path, tmp_path: Path) -> None:
    courses = tmp_path / "courses"
    shutil.copytree(built_course, courses / built_course.name)
    library = render_library(courses, tmp_path / "site")
    base = serve(tmp_path / "site")
    page = browser.new_page()
    watch = Watch(base)
    watch.attach(page)
    page.goto(base + LISTING)
    assert page.locator("h1").inner_text() == "Courses"
    row = library.rows[0]
    screenshot(page, "library-listing.png")
    page.get_by_role("main").get_by_role("link", name=row.title, exact=True).click()  # the header lists it too
    page.wait_for_url(f"{base}{row.slug}/index.html")
    assert page.locator("h1").inner_text() == row.title
    lesson = page.locator("ol.lessons a").first
    title = lesson.inner_text()
    lesson.click()
    page.wait_for_url(f"{base}{row.slug}/{row.lessons[0]}.html")
    assert title in page.locator("h1").inner_text()
    page.get_by_role("link", name="All courses").click()
    page.wait_for_url(base + LISTING)
    assert watch.problems == []
    page.close()


def test_the_listing_fits_a_phone(browser: Any, serve: Any, built_course: Path, tmp_path: Path) -> None:  # noqa: F811
    """At 390 px nothing on the listing scrolls sideways, a long title and audience included."""
    courses = tmp_path / "courses"
    shutil.copytree(built_course, courses / built_course.name)
    render_library(courses, tmp_path / "site")
    page = browser.new_page(viewport={"width": PHONE, "height": 800})
    page.goto(serve(tmp_path / "site") + LISTING)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE
    page.close()
