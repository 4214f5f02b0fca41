"""The pages on a phone, and a hostile lesson, in headless Chromium (see test_browser.py).
The pages are every .html of ``rendered_sites`` (tests/view/sites.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.view.sites import FLAG, STALE_PLAN, every_page
from tests.view.test_browser import Watch, browser, screenshot, serve  # noqa: F401  (the module's fixtures)

PHONE = {"width": 390, "height": 844}
"""An iPhone 12 to 15's viewport in CSS pixels, the width the issue measured at."""


def test_no_page_is_wider_than_a_phone(browser: Any, serve: Any, rendered_sites: Path) -> None:  # noqa: F811
    base = serve(rendered_sites)
    page = browser.new_page(viewport=PHONE)
    watch = Watch(base)
    watch.attach(page)
    widths = {}
    for name in every_page(rendered_sites):
        page.goto(base + name)
        widths[name] = page.evaluate("document.documentElement.scrollWidth")
    assert {name: width for name, width in widths.items() if width > PHONE["width"]} == {}
    page.goto(base + "stale/status.html")  # among them: a status page listing stale files, each naming why
    stale = page.locator("ul.filelist .status-stale").all_inner_texts()
    assert stale and all(STALE_PLAN.as_posix() in text for text in stale), stale
    page.goto(base + "sample/capstone.html")
    screenshot(page, "phone-capstone.png")
    # the rubric stacks: on a phone each level is under the one before it, as wide as the page allows
    boxes = page.eval_on_selector_all("#r1 dl.levels > div", "els => els.map(e => e.getBoundingClientRect().top)")
    assert len(boxes) > 1 and boxes == sorted(boxes) and len(set(boxes)) == len(boxes)
    page.goto(base + "sample/outcomes.html")
    region = page.locator(".scroll", has=page.locator("table.outcome-map"))
    assert region.evaluate("e => e.scrollWidth > e.clientWidth")  # the table is wider: it scrolls in its box
    region.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelector('.scroll').scrollLeft > 0", timeout=5000)
    assert watch.problems == []
    page.close()


def test_a_hostile_lesson_runs_nothing(browser: Any, serve: Any, rendered_sites: Path) -> None:  # noqa: F811
    base = serve(rendered_sites)
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    watch = Watch(base)
    watch.attach(page)
    page.goto(base + "hostile/m01-l01.html")
    assert page.locator("a[href^='javascript:' i]").count() == 0  # javascript: links are not links
    shown = page.locator("main").inner_text()
    assert "<script>window.__stayPwned = 1</script>" in shown  # shown as text, in the lesson and the fields
    lesson, task, stem = (page.locator(sel).inner_text() for sel in (
        "article.lesson", "#m01-l01-e1 .task", "#m01-l01-q1 .stem"))
    for text in (lesson, task, stem):
        assert "a javascript link" in text and "<img src=x onerror=" in text
    clicked = 0
    for text in page.locator("text=a javascript link").all():  # clicking what a link would be does nothing
        if text.is_visible():  # the quiz's verdicts and answer key are hidden until answered: no one clicks them
            text.click()
            clicked += 1
    assert clicked >= 3  # the lesson, the task and the stem at least
    page.locator("#m01-l01-e1 details.solution > summary").click()
    assert page.evaluate(f"typeof {FLAG}") == "undefined"
    assert dialogs == []
    assert watch.problems == []
    page.close()


def test_the_lesson_text_comes_before_the_plan(browser: Any, serve: Any, rendered_sites: Path) -> None:  # noqa: F811
    base = serve(rendered_sites)
    page = browser.new_page(viewport=PHONE)
    for name in sorted(p.name for p in (rendered_sites / "sample").glob("m*-l*.html")):
        page.goto(base + "sample/" + name)
        lesson = page.locator("article.lesson").bounding_box()
        plan = page.locator("#plan").bounding_box()
        assert lesson is not None and plan is not None
        assert lesson["y"] < plan["y"], name  # the text first
        assert page.locator("#plan > summary").inner_text() == "For authors: the plan"
        assert not page.locator("#plan table.sections").is_visible(), name  # folded until opened
        files = page.locator("details.files").bounding_box()
        assert files is not None and lesson["y"] < files["y"], name
    page.locator("#plan > summary").click()
    assert page.locator("#plan table.sections").is_visible()
    page.goto(base + "sample/glossary.html")
    page.locator("dl.glossary a[href*='#terms']").first.click()  # a link into the plan opens it
    page.locator("#terms").wait_for(state="visible", timeout=5000)
    page.close()
