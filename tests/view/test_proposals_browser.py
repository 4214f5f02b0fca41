"""The review page with what an author decided on it, in a real browser: a proposal
waiting (with its diff) and files the last answer could not keep, both with long
unbroken words. At 390 px the page does not scroll sideways, and it passes axe-core's
WCAG 2.1 AA rules; nothing errs, nothing is fetched from outside."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from stay.pipeline import _state, approve, revise
from stay.testing import RiggedBackend
from stay.view import render_course
from tests.view.conftest import quiet
from tests.view.test_a11y_browser import RUN_AXE, WCAG21_AA, axe_source  # noqa: F401  (the module's fixture)
from tests.view.test_browser import Watch, browser, serve  # noqa: F401  (the module's fixtures)
from tests.view.test_review import EPOCH, _stopped

LONG = "an-unbroken-word" * 20
"""Wider than a phone: a page that cannot wrap it scrolls sideways."""


@pytest.fixture(scope="module")
def decided(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of a course at the design gate, declined once with files not kept, then
    with a proposal for its curriculum waiting."""
    course = _stopped(tmp_path_factory.mktemp("decided"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", EPOCH)
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        patch.setattr(_state, "MAX_FILE_BYTES", (course / "curriculum.yaml").stat().st_size - 1)
        approve(course.name, "design", courses_dir=course.parent, decline=True, note="again")
        ledger = course / ".state" / "gates.json"
        data = json.loads(ledger.read_text())
        data["gates"]["design"]["not_kept"] = {path: f"{why} {LONG}"
                                               for path, why in data["gates"]["design"]["not_kept"].items()}
        ledger.write_text(json.dumps(data))
        revise(course.name, ["curriculum.yaml"], note=f"Shorter summaries {LONG}", show=True,
               courses_dir=course.parent, backend=RiggedBackend(), progress=quiet)
    site = tmp_path_factory.mktemp("site") / "site"
    shutil.rmtree(site, ignore_errors=True)
    return render_course(course, site)


def test_the_decided_review_page_fits_a_phone_and_passes_axe(browser: Any, serve: Any,  # noqa: F811
                                                             decided: Path, axe_source: str) -> None:  # noqa: F811
    base = serve(decided)
    context = browser.new_context(bypass_csp=True, viewport={"width": 390, "height": 844})
    page = context.new_page()
    watch = Watch(base)
    watch.attach(page)
    response = page.goto(base + "review.html")
    assert response is not None and response.status == 200
    assert page.locator("ul.review-not-kept li").count() >= 1
    assert page.locator("#review-proposals").count() == 1
    assert page.locator("section[aria-labelledby=review-proposals] pre.review-diff").count() == 1
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 390, f"review.html is {wide} px wide at 390 px"
    assert watch.problems == []
    page.add_script_tag(content=axe_source)
    violations = page.evaluate(RUN_AXE, WCAG21_AA)
    assert violations == [], "\n".join(violations)
    context.close()
