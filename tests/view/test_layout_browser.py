"""The pages on a phone, and a hostile lesson, in headless Chromium (see test_browser.py).

``rendered_sites`` renders every kind of site the viewer writes into one directory: the
sample course, a damaged copy of it, a hostile copy of it, and the eval report pages
(two real offline runs compared and shown, the comparison's fixed rows, a refused
comparison). The width test, and test_a11y_browser.py, go through every .html file
under it, so a page another part of the viewer adds is checked without a new test.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from stay.view import render_compare_html, render_compare_refused_html, render_course, render_run_summary_html
from tests.conftest import SAMPLE
from tests.view.report_data import HEADER, ITEMS, ROWS
from tests.view.test_browser import Watch, browser, screenshot, serve  # noqa: F401  (the module's fixtures)

PHONE = {"width": 390, "height": 844}
"""An iPhone 12 to 15's viewport in CSS pixels, the width the issue measured at."""

LESSON_DIR = Path("modules") / "m01-from-url-to-connection"
FLAG = "window.__stayPwned"
"""Every hostile payload sets this; a page that ran any of them has it set."""
PAYLOADS = ("<script>window.__stayPwned = 1</script>", "<img src=x onerror=\"window.__stayPwned = 2\">",
            "[a javascript link](javascript:window.__stayPwned=3)", "<a href=\"javascript:window.__stayPwned=4\">raw</a>")
HOSTILE = " ".join(PAYLOADS)


def _copy(tmp: Path, name: str) -> Path:
    course = tmp / name / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    return course


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)  # the sample changed: pick another anchor
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def hostile_course(tmp: Path) -> Path:
    """The sample with every payload in a lesson's Markdown, in the Markdown fields of an
    exercise (task) and a quiz item (stem, explanation), and in Plain option texts."""
    course = _copy(tmp, "hostile")
    lessons = course / LESSON_DIR
    _replace(lessons / "m01-l01.md", "## Where a request begins\n", f"## Where a request begins\n\n{HOSTILE}\n\n")
    quiz = yaml.safe_load((lessons / "m01-l01.quiz.yaml").read_text(encoding="utf-8"))
    item = quiz["items"][0]
    item["stem"] = f"{HOSTILE}\n\n{item['stem']}"
    item["explanation"] = f"{HOSTILE}\n\n{item['explanation']}"
    for option in item["options"]:
        option["text"] = f"{option['text']} {HOSTILE}"
    (lessons / "m01-l01.quiz.yaml").write_text(yaml.safe_dump(quiz, sort_keys=False), encoding="utf-8")
    exercises = yaml.safe_load((lessons / "m01-l01.exercises.yaml").read_text(encoding="utf-8"))
    exercise = exercises["exercises"][0]
    exercise["task"] = f"{HOSTILE}\n\n{exercise['task']}"
    (lessons / "m01-l01.exercises.yaml").write_text(yaml.safe_dump(exercises, sort_keys=False), encoding="utf-8")
    return course


def damaged_course(tmp: Path) -> Path:
    """The sample with files that do not read: bad YAML, a missing file, bytes not UTF-8."""
    course = _copy(tmp, "damaged")
    lessons = course / LESSON_DIR
    (lessons / "m01-l01.quiz.yaml").write_text("items: [unclosed\n", encoding="utf-8")
    (lessons / "m01-l01.exercises.yaml").unlink()
    (lessons / "m01-l02.md").write_bytes(b"---\nlesson: m01-l02\n---\n\xff\xfe not utf-8")
    (lessons / "m01-l03.plan.yaml").write_text("lesson: m01-l03\n", encoding="utf-8")
    (course / "glossary.yaml").write_text("- just\n- a list\n", encoding="utf-8")
    return course


@pytest.fixture(scope="session")
def rendered_sites(tmp_path_factory: pytest.TempPathFactory, eval_reports: tuple[Path, Path]) -> Path:
    from stay.cli import main

    root = tmp_path_factory.mktemp("sites")
    sources = tmp_path_factory.mktemp("courses")
    render_course(SAMPLE, root / "sample")
    render_course(damaged_course(sources), root / "damaged")
    render_course(hostile_course(sources), root / "hostile")
    reports = root / "reports"
    reports.mkdir()
    baseline, candidate = eval_reports
    main(["evals", "compare", str(baseline), str(candidate), "--html", str(reports / "compare.html")])
    main(["evals", "show", str(candidate), "--html", str(reports / "run.html")])
    (reports / "compare-rows.html").write_text(render_compare_html(HEADER, ROWS, ITEMS), encoding="utf-8")
    (reports / "refused.html").write_text(render_compare_refused_html("a.json", "b.json", "no brief in common", 2),
                                          encoding="utf-8")
    (reports / "run-minimal.html").write_text(render_run_summary_html({"label": "minimal"}), encoding="utf-8")
    return root


def every_page(root: Path) -> list[str]:
    """Every page under ``root``, as a path relative to it."""
    pages = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html"))
    assert {page.split("/")[0] for page in pages} == {"sample", "damaged", "hostile", "reports"}
    return pages


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
    for text in page.locator("text=a javascript link").all():  # clicking what a link would be does nothing
        text.click()
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
