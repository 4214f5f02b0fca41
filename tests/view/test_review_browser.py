"""The review page in a real browser (issue 25, items 6 and 8): a reviewer opens the
course stopped at the design gate, follows the index's call-out to the review page,
reads the curriculum and the commands there, and at 390 px the page does not scroll
sideways; nothing errs, nothing is fetched from outside. Each test fails on 23b9272,
which wrote no review page."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

import stay.artefacts as artefacts
from stay.artefacts import Outcomes
from stay.cli import main
from stay.pipeline import approve
from stay.view import render_course
from tests.view.test_browser import SCREENSHOTS, Watch, browser, serve  # noqa: F401
from tests.view.test_review import _stopped


@pytest.fixture(scope="module")
def design_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the course stopped at the design gate, its rendered site)."""
    course = _stopped(tmp_path_factory.mktemp("courses"))
    return course, render_course(course, tmp_path_factory.mktemp("site") / "site")


def test_a_reviewer_follows_the_index_to_the_design_review(browser: Any, serve: Any,  # noqa: F811
                                                           design_site: tuple[Path, Path]) -> None:
    course, site = design_site
    base = serve(site)
    page = browser.new_page()
    watch = Watch(base)
    watch.attach(page)
    page.goto(base + "index.html")
    page.get_by_role("link", name="Review the design gate").click()
    page.wait_for_url(base + "review.html")
    assert page.get_by_role("heading", level=1).inner_text() == "Review: the design gate"
    rows = page.locator("table.review-outcomes tbody tr")
    assert rows.count() == len(artefacts.load(course / "outcomes.yaml", Outcomes).outcomes)
    approve = page.locator("pre.command code").first.inner_text()
    assert shlex.split(approve)[:4] == ["stay", "approve", course.name, "design"]
    assert page.locator('nav a[aria-current="page"]').inner_text() == "Review"
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "review-design.png"), full_page=True)
    print(f"screenshot: {SCREENSHOTS / 'review-design.png'}")
    assert watch.problems == []
    page.close()


def test_the_review_page_does_not_scroll_sideways_at_390_px(browser: Any, serve: Any,  # noqa: F811
                                                            design_site: tuple[Path, Path], tmp_path: Path) -> None:
    """With the widest things it shows: the curriculum, a defects table (six columns) and
    a diff of a long line (a hand edit declined, then replaced by a forced revision)."""
    course = tmp_path / "courses" / design_site[0].name
    shutil.copytree(design_site[0], course)
    curriculum = course / "curriculum.yaml"
    curriculum.write_text(curriculum.read_text().replace("summary: ", "summary: " + "a-very-long-word" * 20, 1))
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="wide")
    assert main(["revise", course.name, "curriculum.yaml", "--force", "--courses-dir", str(course.parent)]) == 0
    outcomes = course / "outcomes.yaml"
    first = artefacts.load(outcomes, Outcomes).outcomes[0]
    outcomes.write_text(outcomes.read_text().replace(f"verb: {first.verb}", "verb: ponder", 1))
    base = serve(render_course(course, tmp_path / "site"))
    page = browser.new_page(viewport={"width": 390, "height": 844})
    response = page.goto(base + "review.html")
    assert response is not None and response.status == 200
    for shown in ("table.review-curriculum", "table.defects"):
        assert page.locator(shown).count() == 1, shown
    # both edited files are diffed: the answer kept the bytes each had (.state/answered/)
    assert page.locator("pre.review-diff").count() == 2
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 390, f"review.html is {wide} px wide at 390 px"
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "review-design-390.png"), full_page=True)
    print(f"screenshot: {SCREENSHOTS / 'review-design-390.png'}")
    page.close()
