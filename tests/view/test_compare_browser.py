"""The comparison page of two real offline runs in a real browser (Debian's Chromium,
driven by Playwright, as tests/view/test_browser.py does, and skipped as it is), opened
from disk under its own Content-Security-Policy: the filters change what is visible,
with JavaScript on and off; both runs' items sit side by side; the prompt diff and the
provenance notes are on screen; an item's link opens the lesson its judge read; and
nothing is refused or logged as an error."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from stay.cli import main
from stay.scoring._compare_page import PACKAGED
from stay.stages import packaged_prompts_dir
from stay.testing import heuristic_judge
from stay.view import PAIR_KINDS
from tests.scoring.test_compare_detail import runs_with_courses
from tests.view.test_browser import Watch, browser, screenshot  # noqa: F401  (browser: the module's fixture)

EDIT = "\nEvery lesson ends with one worked example.\n"
OFFLINE_BLIND = "the offline backend does not read prompt text: this comparison cannot see a prompt change"


def _with_edited_prompt(candidate: Path, tmp_path: Path) -> Path:
    """The candidate run as if built from a copy of the prompts with content.md edited: its
    ledgers' and header's hash of content.md are the edited file's, its directory the copy."""
    prompts = tmp_path / "edited-prompts"
    shutil.copytree(packaged_prompts_dir(), prompts)
    edited = (prompts / "content.md").read_text() + EDIT
    (prompts / "content.md").write_text(edited)
    document = json.loads(candidate.read_text())
    digest = hashlib.sha256(edited.encode()).hexdigest()
    for brief in document["briefs"].values():
        for build in brief["builds"]:
            for record in build["built_with"].values():
                if "prompts/content.md" in record:
                    record["prompts/content.md"] = digest[:len(record["prompts/content.md"])]
    short = document["prompts"]["sha256"]["content.md"]
    document["prompts"] |= {"dir": str(prompts), "sha256": {**document["prompts"]["sha256"],
                                                            "content.md": digest[:len(short)]}}
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(document))
    return path


@pytest.fixture(scope="module")
def compare_page_file(tmp_path_factory: pytest.TempPathFactory, eval_reports: tuple[Path, Path]) -> Path:
    tmp = tmp_path_factory.mktemp("compare-page")
    baseline, candidate = runs_with_courses(tmp, eval_reports)  # each build names its course, as the suite's do
    assert json.loads(baseline.read_text())["prompts"]["dir"] == PACKAGED  # the diff's left side is on disk
    page = tmp / "compare.html"
    assert main(["evals", "compare", str(baseline), str(_with_edited_prompt(candidate, tmp)), "--html", str(page),
                 "--permutations", "999", "--allow", "uncalibrated"]) == 1
    return page


def _visible(page: Any) -> int:
    return int(page.evaluate("[...document.querySelectorAll('.pair')].filter(e => e.offsetParent !== null).length"))


def _filters_show_their_kind(page: Any) -> dict[str, int]:
    everything = page.locator(".pair").count()
    assert everything > 0 and _visible(page) == everything
    seen = {}
    for kind in PAIR_KINDS:
        label = page.locator(f'label[for="show-{kind}"]')
        label.click()
        expected = page.locator(f".pair.is-{kind}").count()
        assert _visible(page) == expected and label.inner_text() == f"{kind} ({expected})"
        seen[kind] = expected
    page.locator('label[for="show-all"]').click()
    assert _visible(page) == everything
    return seen


def test_the_compare_page_filters_its_side_by_side_items_under_its_policy(browser: Any,  # noqa: F811
                                                                          compare_page_file: Path) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    watch = Watch("file://")
    watch.attach(page)
    page.goto(compare_page_file.as_uri())
    seen = _filters_show_their_kind(page)
    assert seen["changed"] > 0 and seen["passed"] > 0  # the degraded distractors changed; the rest did not
    # a degraded distractor: both runs have the item
    pair = page.locator("#pairs-distractor_quality .pair.is-changed:has(.side-baseline .side-head)").first
    assert pair.locator(".side").count() == 2 and pair.locator(".side-candidate .side-head").is_visible()
    shown = pair.locator(".side-candidate details.shown")
    assert not shown.locator("pre").is_visible()
    shown.locator("summary").click()
    assert "wrong_option" in shown.locator("pre").inner_text()  # what the distractor's judge was shown
    assert page.locator("table.brief-means tbody tr").count() == 2  # the fixture's two briefs
    diff = page.locator("#prompts pre.diff, section.prompt-file pre.diff").first
    assert diff.is_visible() and "+Every lesson ends with one worked example." in diff.inner_text()
    notes = page.locator("#notes ~ ul.notes").inner_text()
    assert OFFLINE_BLIND in notes and "prompt files that differ between the runs: content.md" in notes
    facts = page.locator("dl.facts").inner_text()
    assert "Backend\noffline" in facts and heuristic_judge().name in facts
    page.locator('label[for="show-changed"]').click()
    page.locator("#side-by-side").scroll_into_view_if_needed()
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")  # nothing spills sideways
    screenshot(page, "evals-compare-side-by-side.png")
    assert watch.problems == []
    page.close()


def test_the_filters_work_with_javascript_off(browser: Any, compare_page_file: Path) -> None:  # noqa: F811
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.goto(compare_page_file.as_uri())
    counts = {kind: page.locator(f".pair.is-{kind}").count() for kind in PAIR_KINDS}
    for kind in PAIR_KINDS:
        page.locator(f'label[for="show-{kind}"]').click()
        visible = sum(page.locator(".pair").nth(n).is_visible() for n in range(page.locator(".pair").count()))
        assert visible == counts[kind]
    page.locator('label[for="show-all"]').click()
    link = page.locator("p.lesson-link a").first
    lesson = page.locator(str(link.get_attribute("href")))
    assert not lesson.is_visible()
    link.click()
    assert lesson.locator("pre").is_visible()  # a link opens its lesson without a script too
    context.close()


def test_an_items_link_opens_the_lesson_its_judge_read(browser: Any, compare_page_file: Path) -> None:  # noqa: F811
    from stay.scoring import CourseOnDisk

    page = browser.new_page(viewport={"width": 1400, "height": 900})
    watch = Watch("file://")
    watch.attach(page)
    page.goto(compare_page_file.as_uri())
    link = page.locator(".side-baseline p.lesson-link a").first
    anchor = str(link.get_attribute("href")).removeprefix("#")
    lesson = page.locator(f"#{anchor}")
    assert anchor.startswith("lesson-") and not lesson.is_visible()  # collapsed until asked for
    link.click()
    assert lesson.is_visible() and lesson.locator("pre").is_visible()
    lesson_id = link.locator("code").inner_text()
    shown = lesson.locator("pre").inner_text()
    # the lesson's text as the baseline's course holds it (any of its builds: the page shows each text once)
    courses = compare_page_file.parent / "baseline"
    bodies = {lsn.content.body for course in courses.glob("e*/*") for lsn in CourseOnDisk.load(course).lessons
              if lsn.id == lesson_id and lsn.content is not None}
    assert shown in bodies or shown.strip() in {b.strip() for b in bodies}
    assert page.evaluate(f"document.getElementById('{anchor}').getBoundingClientRect().top < innerHeight")
    screenshot(page, "evals-compare-lesson.png")
    assert watch.problems == []
    page.close()
