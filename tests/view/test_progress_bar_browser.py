"""The listing's progress bars in a real browser (``stay view --all``, filled by
progress.js from localStorage): a learner finishes lessons through the pages, or a known
value is stored, and each course's bar shows exactly its share finished, in its text and
in what Chromium's accessibility tree announces; two courses never mix; a damaged,
over-bound or junk-filled value counts as nothing, raises nothing and is left as it was;
without JavaScript the bar's fallback text shows. Expected values come from the courses'
own files (tests/view/sites.py's ``library_lessons``). The fixtures are test_browser's
(Chromium, the loopback server) and conftest's ``rendered_sites``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stay.view
from tests.view.sites import LIBRARY, library_lessons
from tests.view.test_a11y_browser import RUN_AXE, WCAG21_AA, axe_source  # noqa: F401  (its fixture)
from tests.view.test_browser import Watch, browser, serve, watched_context  # noqa: F401  (the module's fixtures)

COURSES = library_lessons()
"""slug -> (title, lesson ids), in the listing's order (by slug)."""
SAMPLE_SLUG, SHORT_SLUG = sorted(COURSES)
PROGRESS_JS = Path(stay.view.__file__).parent / "static" / "progress.js"
_BOUND = re.search(r"var MAX_CHARS = (\d+);", PROGRESS_JS.read_text(encoding="utf-8"))
assert _BOUND, "progress.js no longer declares MAX_CHARS: read its bound from where it is"
TOO_LONG = int(_BOUND.group(1))
"""progress.js's bound on a stored value: a longer one was not written by it."""
JUNK = 10_000


def key(slug: str) -> str:
    return f"stay:progress:{slug}"


def stored(finished: list[str], opened: list[str] | None = None) -> str:
    return json.dumps({"v": 1, "opened": finished if opened is None else opened, "finished": finished, "quiz": {},
                       "exercises": [], "last": None})


def seed(page: Any) -> None:
    """Every other lesson of the sample finished; every lesson of the short course and, under
    its key, the sample's lessons it does not have (not its lessons: never to be counted)."""
    sample, short = COURSES[SAMPLE_SLUG][1], COURSES[SHORT_SLUG][1]
    others = [lesson for lesson in sample if lesson not in short]
    assert others  # the two courses differ, or this proves nothing
    values = {SAMPLE_SLUG: stored(list(sample[::2])), SHORT_SLUG: stored([*others, *short], opened=others)}
    for slug, value in values.items():
        page.evaluate("([key, value]) => localStorage.setItem(key, value)", [key(slug), value])


@pytest.fixture
def listing(browser: Any, serve: Any, rendered_sites: Path) -> Iterator[tuple[Any, str, Watch]]:  # noqa: F811
    """A fresh context (its own, empty localStorage) on the library's site, watched."""
    base = serve(rendered_sites / LIBRARY)
    with watched_context(browser, base) as ([page], watch):
        yield page, base, watch


def bars(page: Any) -> dict[str, dict[str, Any]]:
    """Each course's bar on the open listing, by slug: its text, its share (the element's
    own position), and the progressbar Chromium's accessibility tree exposes for it."""
    found: dict[str, dict[str, Any]] = {}
    for slug in COURSES:
        bar = page.locator(f'.progress[data-course="{slug}"]')
        meter = bar.locator("progress")
        found[slug] = {"text": bar.inner_text().strip(), "share": meter.evaluate("m => m.position")}
    nodes = page.context.new_cdp_session(page).send("Accessibility.getFullAXTree")["nodes"]
    announced = [node for node in nodes if node.get("role", {}).get("value") == "progressbar"]
    assert len(announced) == len(COURSES)
    for slug, node in zip(sorted(COURSES), announced, strict=True):  # the tree keeps the page's order
        properties = {p["name"]: p["value"].get("value") for p in node.get("properties", [])}
        found[slug]["aria"] = {"name": node["name"]["value"], "now": node["value"]["value"],
                               "max": properties.get("valuemax"), "description": node.get("description", {}).get("value")}
    return found


def expected(slug: str, finished: int, opened: int) -> dict[str, Any]:
    title, lessons = COURSES[slug]
    text = f"{finished} of {len(lessons)} lessons finished; {opened} opened."
    return {"text": text, "share": finished / len(lessons),
            "aria": {"name": f"Lessons finished: {title}", "now": finished, "max": len(lessons), "description": text}}


def finish_by_the_pages(page: Any, base: str, slug: str, finish: int, open_only: int) -> None:
    """From the listing, as a learner: follow the course, open its first lessons one after
    the other (by the pager), press "Mark this lesson finished" on the first ``finish`` of
    them, and come back by "All courses"."""
    title, lessons = COURSES[slug]
    page.get_by_role("main").get_by_role("link", name=title, exact=True).click()
    page.wait_for_url(f"{base}{slug}/index.html")
    page.locator("ol.lessons a").first.click()
    for n, lesson in enumerate(lessons[:finish + open_only]):
        page.wait_for_url(f"{base}{slug}/{lesson}.html")
        if n < finish:
            page.get_by_role("button", name="Mark this lesson finished").click()
            page.get_by_text("You finished this lesson.").wait_for()
        if n + 1 < finish + open_only:
            page.locator("a[rel=next]").first.click()  # the pager (a lesson has one above and below)
    page.get_by_role("link", name="All courses").click()
    page.wait_for_url(base + "index.html")


def test_lessons_finished_through_the_pages_fill_that_courses_bar_and_no_other(
        listing: tuple[Any, str, Watch]) -> None:
    page, base, watch = listing
    page.goto(base + "index.html")
    assert bars(page) == {slug: expected(slug, 0, 0) for slug in COURSES}
    sample = len(COURSES[SAMPLE_SLUG][1])
    finish = sample // 2
    finish_by_the_pages(page, base, SAMPLE_SLUG, finish, open_only=1)
    assert bars(page) == {SAMPLE_SLUG: expected(SAMPLE_SLUG, finish, finish + 1),
                          SHORT_SLUG: expected(SHORT_SLUG, 0, 0)}
    # the short course's lessons have the same ids as the sample's first ones: still its own
    every = len(COURSES[SHORT_SLUG][1])
    finish_by_the_pages(page, base, SHORT_SLUG, every, open_only=0)
    assert bars(page) == {SAMPLE_SLUG: expected(SAMPLE_SLUG, finish, finish + 1),
                          SHORT_SLUG: expected(SHORT_SLUG, every, every)}
    assert watch.problems == []


def test_coming_back_by_the_browsers_back_button_shows_the_new_count(listing: tuple[Any, str, Watch]) -> None:
    """Back to the listing after finishing a lesson shows it counted. (Headless Chromium
    loads the listing again here rather than restoring it from its back-forward cache, so
    this does not reach progress.js's pageshow refresh; checked by disabling it.)"""
    page, base, watch = listing
    page.goto(base + "index.html")
    title, lessons = COURSES[SHORT_SLUG]
    page.get_by_role("main").get_by_role("link", name=title, exact=True).click()
    page.wait_for_url(f"{base}{SHORT_SLUG}/index.html")
    page.locator("ol.lessons a").first.click()
    page.wait_for_url(f"{base}{SHORT_SLUG}/{lessons[0]}.html")
    page.get_by_role("button", name="Mark this lesson finished").click()
    page.get_by_text("You finished this lesson.").wait_for()
    page.go_back()
    page.go_back()
    page.wait_for_url(base + "index.html")
    assert bars(page) == {SAMPLE_SLUG: expected(SAMPLE_SLUG, 0, 0), SHORT_SLUG: expected(SHORT_SLUG, 1, 1)}
    assert watch.problems == []


def test_a_lesson_finished_in_another_tab_fills_the_open_listings_bar(listing: tuple[Any, str, Watch]) -> None:
    page, base, watch = listing
    page.goto(base + "index.html")
    other = page.context.new_page()  # the same browser's other tab: the same localStorage
    _title, lessons = COURSES[SAMPLE_SLUG]
    other.goto(f"{base}{SAMPLE_SLUG}/{lessons[-1]}.html")
    other.get_by_role("button", name="Mark this lesson finished").click()
    other.get_by_text("You finished this lesson.").wait_for()
    bar = page.locator(f'.progress[data-course="{SAMPLE_SLUG}"]')
    bar.get_by_text(expected(SAMPLE_SLUG, 1, 1)["text"]).wait_for(timeout=5000)  # no reload
    assert bars(page) == {SAMPLE_SLUG: expected(SAMPLE_SLUG, 1, 1), SHORT_SLUG: expected(SHORT_SLUG, 0, 0)}
    other.close()
    assert watch.problems == []


def test_a_stored_value_fills_each_bar_with_exactly_its_share(listing: tuple[Any, str, Watch]) -> None:
    page, base, watch = listing
    page.goto(base + "index.html")
    seed(page)
    page.reload()
    sample, short = COURSES[SAMPLE_SLUG][1], COURSES[SHORT_SLUG][1]
    assert bars(page) == {SAMPLE_SLUG: expected(SAMPLE_SLUG, len(sample[::2]), len(sample[::2])),
                          SHORT_SLUG: expected(SHORT_SLUG, len(short), 0)}
    assert watch.problems == []


def test_the_filled_listing_passes_axe(browser: Any, serve: Any, rendered_sites: Path,  # noqa: F811
                                       axe_source: str) -> None:  # noqa: F811
    """test_a11y_browser checks the listing as a first visit draws it (every bar empty);
    this checks it with bars part and wholly filled."""
    base = serve(rendered_sites / LIBRARY)
    context = browser.new_context(bypass_csp=True)  # to inject axe; progress.js is the site's own file
    page = context.new_page()
    page.goto(base + "index.html")
    seed(page)
    page.reload()
    assert [bar["aria"]["now"] for bar in bars(page).values()] != [0] * len(COURSES)
    page.add_script_tag(content=axe_source)
    assert page.evaluate(RUN_AXE, WCAG21_AA) == []
    context.close()


def _junk() -> list[str]:
    """Ids that are no lesson of either course: near misses of real ones, then many more."""
    near = [variant for lesson in COURSES[SAMPLE_SLUG][1]
            for variant in (lesson.upper(), f"{lesson}.html", f"{lesson} ", f"{lesson}-x", lesson.replace("-l0", "-l"))]
    return [*near, *(f"junk-{n:05d}" for n in range(JUNK - len(near)))]


DAMAGED = {
    "not JSON": "{not json",
    "a list": "[]",
    "another version": json.dumps({"v": 2, "opened": ["m01-l01"], "finished": ["m01-l01"]}),
    "finished not a list": json.dumps({"v": 1, "opened": "m01-l01", "finished": "m01-l01"}),
    "over the bound": json.dumps({"v": 1, "opened": [], "finished": list(COURSES[SAMPLE_SLUG][1]),
                                  "pad": "x" * TOO_LONG}),
    f"{JUNK} junk ids": json.dumps({"v": 1, "opened": [], "finished": _junk(), "quiz": {}, "exercises": [],
                                   "last": None}),
}
assert len(DAMAGED[f"{JUNK} junk ids"]) < TOO_LONG  # within the bound: the ids themselves must be refused


@pytest.mark.parametrize("value", list(DAMAGED.values()), ids=list(DAMAGED))
def test_a_damaged_over_bound_or_junk_value_leaves_the_bar_at_zero_and_the_value_kept(
        listing: tuple[Any, str, Watch], value: str) -> None:
    page, base, watch = listing
    page.goto(base + "index.html")
    for slug in COURSES:
        page.evaluate("([key, value]) => localStorage.setItem(key, value)", [key(slug), value])
    page.reload()
    assert bars(page) == {slug: expected(slug, 0, 0) for slug in COURSES}
    kept = page.evaluate("keys => keys.map(k => localStorage.getItem(k))", [key(slug) for slug in COURSES])
    assert kept == [value] * len(COURSES)  # read, never rewritten or removed
    assert watch.problems == []


def test_without_javascript_each_bar_shows_its_fallback_text(browser: Any, serve: Any,  # noqa: F811
                                                              rendered_sites: Path) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(serve(rendered_sites / LIBRARY) + "index.html")
    for slug, (_title, lessons) in COURSES.items():
        bar = page.locator(f'.progress[data-course="{slug}"]')
        assert bar.inner_text().strip() == f"{len(lessons)} lessons"
        assert bar.locator("progress").count() == 0
    assert page.get_by_role("progressbar").count() == 0
    context.close()
