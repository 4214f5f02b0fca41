"""Pages for learners and pages for authors (issue 35, item 6): a lesson is headed by its
title and named in its module by the module's title; the course home shows what to learn,
how long it takes and where to continue, and leaves the brief, the validator and the
ledger to the author's pages; ``stay view --learner`` writes the learners' pages alone,
with no link to an author's page or to a page it did not write. Everything expected is
read from the courses' own files or from the default render, never from the viewer's lists."""

from __future__ import annotations

import html
import html.parser
import posixpath
import re
import shutil
from pathlib import Path

import pytest

import stay.artefacts as artefacts
from stay.pipeline import build_course
from stay.view import build_site, render_course
from stay.view._env import environment
from stay.view._library import render_library
from tests.conftest import ROOT, SAMPLE, run_stay
from tests.view.conftest import authors_nav, page_text, quiet
from tests.view.test_site import _Anchors

GATED_BRIEF = ROOT / "examples" / "briefs" / "sourdough-for-busy-bakers.yaml"
MINUTES = environment().filters["minutes"]
"""How the pages write a number of minutes ("2 h 40 min")."""


@pytest.fixture(scope="module")
def courses(tmp_path_factory: pytest.TempPathFactory, built_course: Path) -> Path:
    """A course stay built (its ledger, and a review page that waits for nothing) and one
    stopped at the design gate (a review that waits)."""
    courses = tmp_path_factory.mktemp("learner") / "courses"
    courses.mkdir()
    shutil.copytree(built_course, courses / built_course.name)
    gated = build_course(GATED_BRIEF, courses_dir=courses, backend="offline", progress=quiet)
    assert not gated.complete and "design gate" in str(gated.reason)
    return courses


def _curriculum(course: Path) -> artefacts.Curriculum:
    curriculum = artefacts.load(course / "curriculum.yaml")
    assert isinstance(curriculum, artefacts.Curriculum)
    return curriculum


@pytest.mark.parametrize("learner", [False, True])
def test_a_lesson_page_is_headed_by_its_title_under_its_modules_title(learner: bool) -> None:
    site = build_site(SAMPLE, learner=learner)
    lessons = [(module, lesson) for module in _curriculum(SAMPLE).modules for lesson in module.lessons]
    assert lessons
    for module, lesson in lessons:
        page = site[f"{lesson.id}.html"].decode()
        (heading,) = re.findall(r"<h1>(.*?)</h1>", page, re.DOTALL)
        assert html.unescape(heading) == lesson.title  # the title alone: no id before it
        crumbs = re.search(r'<nav class="crumbs" aria-label="Breadcrumbs">(.*?)</nav>', page, re.DOTALL)
        assert crumbs is not None
        assert f'<a href="index.html#{module.id}">{html.escape(module.title)}</a>' in crumbs.group(1)
        assert page_text(crumbs.group(1)) == f"Home › {module.title} › {lesson.title}"


def test_the_home_shows_what_to_learn_how_long_and_where_to_continue_and_no_authors_matter() -> None:
    site = build_site(SAMPLE)
    home = site["index.html"].decode()
    text = page_text(home)
    curriculum = _curriculum(SAMPLE)
    lessons = [lesson for module in curriculum.modules for lesson in module.lessons]
    outcomes = artefacts.load(SAMPLE / "outcomes.yaml")
    assert isinstance(outcomes, artefacts.Outcomes)
    total = MINUTES(sum(lesson.minutes for lesson in lessons))
    assert f"Time {total}: {len(lessons)} lessons in {len(curriculum.modules)} modules" in text
    outline = "".join(re.findall(r'<ol class="lessons">(.*?)</ol>', home, re.DOTALL))
    items = re.findall(r"<li>\s*<a href=\"([^\"]+)\">([^<]*)</a>\s*<span class=\"minutes\">([^<]*)</span>(.*?)</li>\s*"
                       r"(?=<li>|$)", outline, re.DOTALL)
    assert [(href, html.unescape(title), shown) for href, title, shown, _ in items] == [
        (f"{lesson.id}.html", lesson.title, MINUTES(lesson.minutes)) for lesson in lessons]
    for (_, _, _, rest), lesson in zip(items, lessons, strict=True):  # each lesson's outcomes, under it
        taught = [o.text for o in outcomes.outcomes if o.lesson == lesson.id]
        assert taught and [html.unescape(t) for t in re.findall(r"<li id=\"[^\"]+\">(.*?)</li>", rest)] == taught
    assert len(re.findall(r'<a class="continue" data-course="[^"]+"', home)) == 1  # progress.js fills it
    manifest = artefacts.load(SAMPLE / "course.yaml")
    audience = artefacts.load(SAMPLE / "audience.yaml")
    assert isinstance(manifest, artefacts.CourseManifest) and isinstance(audience, artefacts.Audience)
    authors_only = [manifest.brief.time_available, *(manifest.brief.constraints or []),
                    *(audience.misconceptions or []), *audience.goals, "Validator", "Ledger", "budget"]
    assert [shown for shown in authors_only if shown in text] == []
    status = page_text(site["status.html"])
    assert [shown for shown in authors_only if shown not in status] == []
    nav = authors_nav(home)  # the author's pages are one discreet link away
    assert nav is not None and re.findall(r'href="([^"]+)"', nav) == ["status.html", "outcomes.html"]


def _pages(site: Path) -> dict[str, _Anchors]:
    pages = {}
    for path in sorted(site.rglob("*.html")):
        parser = _Anchors()
        parser.feed(path.read_text(encoding="utf-8"))
        pages[path.relative_to(site).as_posix()] = parser
    return pages


def _written(site: Path) -> set[str]:
    return {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file() and p.name != ".stay-site"}


def test_stay_view_learner_writes_the_learners_pages_alone_and_links_to_nothing_else(courses: Path,
                                                                                    tmp_path: Path) -> None:
    full, learner = tmp_path / "full", tmp_path / "learner"
    render_library(courses, full)
    done = run_stay("view", "--all", "--learner", "--courses-dir", str(courses), "--out", str(learner))
    assert done.returncode == 0, done.stderr
    slugs = sorted(p.name for p in courses.iterdir())
    assert len(slugs) == 2
    authors: set[str] = set()
    for slug in slugs:
        course = courses / slug
        lesson_pages = {f"{lesson.id}.html" for module in _curriculum(course).modules for lesson in module.lessons}
        pages = {p.name for p in (learner / slug).glob("*.html")}
        assert pages == {"index.html", "glossary.html", "capstone.html", *lesson_pages}, slug
        every = {p.name for p in (full / slug).glob("*.html")}
        nav = authors_nav((full / slug / "index.html").read_bytes())
        assert nav is not None
        linked = set(re.findall(r'href="([^"#]+)', nav))  # the author's pages, as the default render links them
        assert pages < every and linked <= every - pages and {"status.html", "outcomes.html"} <= linked, slug
        authors |= every - pages
        # the same course, alone, over its full render: the author's pages go, the rest are the library's
        alone = render_course(course, tmp_path / "alone" / slug)
        done = run_stay("view", slug, "--learner", "--courses-dir", str(courses), "--out", str(alone))
        assert done.returncode == 0, done.stderr
        assert {p.name for p in alone.glob("*.html")} == pages
        assert authors_nav((alone / "index.html").read_bytes()) is None
    assert "review.html" in authors  # the review pages are the author's too
    written = _written(learner)
    found = _pages(learner)
    wrong = []
    for name, page in found.items():
        for href in page.local:
            target, _, fragment = href.partition("#")
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target)) if target else name
            if (resolved not in written or posixpath.basename(resolved) in authors
                    or (fragment and fragment not in found[resolved].ids)):
                wrong.append((name, href))
    assert sum(len(page.local) for page in found.values()) > len(found)
    assert wrong == []
    listing = page_text((learner / "index.html").read_bytes())
    assert "Status" not in listing and "budget" not in listing  # the courses' health is the author's
