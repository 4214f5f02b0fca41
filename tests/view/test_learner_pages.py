"""Pages for learners and pages for authors (issue 35, item 6): a lesson is headed by its
title and named in its module by the module's title; the course home shows what to learn,
how long it takes and where to continue, and leaves the brief, the validator and the
ledger to the author's pages; ``stay view --learner`` writes the learners' pages alone,
with no link to an author's page or to a page it did not write. Data files (issue 35,
item 3): each page links for download the ones its text names, the home all of them.
Everything expected is read from the courses' own files (or the fixture's tables of the
data files it wrote) or from the default render, never from the viewer's lists."""

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
from stay.view._site import render_library
from tests.conftest import ROOT, SAMPLE, run_stay
from tests.fixtures.rules._edit import lesson_file
from tests.fixtures.rules.ast import (
    ALL_DATA,
    DATA,
    LOG,
    MISSING,
    NAMED,
    SAMPLE_DATA,
    SAMPLE_NAMED,
    named_in,
    with_data_files,
    without_data_files,
)
from tests.fixtures.rules.ast import name as name_data_file
from tests.view.conftest import authors_nav, page_text, quiet
from tests.view.test_site import _Anchors

GATED_BRIEF = ROOT / "examples" / "briefs" / "sourdough-for-busy-bakers.yaml"
MINUTES = environment().filters["minutes"]
"""How the pages write a number of minutes ("2 h 40 min")."""


@pytest.fixture(scope="module")
def courses(tmp_path_factory: pytest.TempPathFactory, built_course: Path) -> Path:
    """A course stay built (its ledger, and a review page that waits for nothing), given data
    files to download, and one stopped at the design gate (a review that waits)."""
    courses = tmp_path_factory.mktemp("learner") / "courses"
    courses.mkdir()
    shutil.copytree(built_course, courses / built_course.name)
    with_data_files(courses / built_course.name)
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
    with_data = [slug for slug in slugs if (courses / slug / "assets").is_dir()]
    assert with_data and {f"{slug}/{path}" for slug in with_data for path in DATA} <= written  # the downloads
    listing = page_text((learner / "index.html").read_bytes())
    assert "Status" not in listing and "budget" not in listing  # the courses' health is the author's


_DATA_LIST = re.compile(r'<section class="data-files" aria-labelledby="data-files-heading">(.*?)</section>', re.DOTALL)


def data_links(page: bytes) -> list[str]:
    """The downloads a page's "Data files" list links, in order; each link's text is the
    file's name and it carries ``download``."""
    found = _DATA_LIST.findall(page.decode())
    assert len(found) <= 1
    links = re.findall(r'<a href="([^"]+)" download>([^<]+)</a>', found[0]) if found else []
    assert all(posixpath.basename(href) == text for href, text in links)
    return [href for href, _ in links]


_SOURCES = (".md", ".exercises.yaml", ".quiz.yaml")
"""A lesson page's sources, in the order its list takes the names they hold."""


def expected_lists(data: dict[str, bytes], *tables: dict[str, tuple[tuple[str, str], ...]]) -> dict[str, list[str]]:
    """The "Data files" list each page should show, from the data files and the tables of
    where text names them (the sample's own first: each is named in the text as committed,
    and the fixture names its files after that text): the home, every file in name order;
    a lesson page, those its body, exercises and quiz name, in that order; the capstone,
    those project.yaml names."""
    places = []
    for rank, table in enumerate(tables):
        for path, where in table.items():
            for lesson_id, suffix in where:
                text = named_in(SAMPLE, lesson_id, suffix).read_text(encoding="utf-8") if not rank else ""
                page = f"{lesson_id}.html" if lesson_id else "capstone.html"
                places.append((page, _SOURCES.index(suffix) if lesson_id else 0, rank, text.find(path), path))
    expected: dict[str, list[str]] = {"index.html": sorted(data)}
    for page, *_order, path in sorted(places):
        if path not in expected.setdefault(page, []):
            expected[page].append(path)
    return expected


@pytest.mark.parametrize("learner", [False, True])
def test_each_page_links_for_download_the_data_files_its_text_names(learner: bool, tmp_path: Path) -> None:
    """A lesson page lists the data files its body, exercises and quiz name; the capstone,
    those project.yaml names; the home, every one: the sample's own and the fixture's. Each
    link is the file's course path, which the site holds byte for byte. A path named with
    no file there, and an entry of assets/ that is no data file, are offered nowhere (the
    validator names both)."""
    course = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    with_data_files(course)
    name_data_file(course, MISSING, "m01-l01", ".md")
    (course / "assets" / "linked.csv").symlink_to("request-log.csv")
    name_data_file(course, "assets/linked.csv", "m01-l01", ".md")
    site = build_site(course, learner=learner)
    shown = {page: data_links(data) for page, data in site.items() if page.endswith(".html")}
    assert {page: links for page, links in shown.items() if links} == expected_lists(ALL_DATA, SAMPLE_NAMED, NAMED)
    assert {path: data for path, data in site.items() if path.startswith("assets/")} == ALL_DATA
    text = lesson_file(course, "m01-l01", ".md").read_text(encoding="utf-8")
    assert all(named in text for named in (LOG, MISSING, "assets/linked.csv"))  # all named: one offered, two not


@pytest.mark.parametrize("learner", [False, True])
def test_the_samples_pages_link_its_own_data_files(learner: bool) -> None:
    """The sample as committed: the home lists the data files its example.yaml writes, and
    each lesson that names one lists it, copied into the site byte for byte."""
    assert SAMPLE_DATA
    site = build_site(SAMPLE, learner=learner)
    shown = {page: data_links(data) for page, data in site.items() if page.endswith(".html")}
    assert {page: links for page, links in shown.items() if links} == expected_lists(SAMPLE_DATA, SAMPLE_NAMED)
    assert {path: data for path, data in site.items() if "/" in path} == SAMPLE_DATA


def test_a_course_without_data_files_shows_no_data_list(tmp_path: Path) -> None:
    """The sample with its assets/ and the sentences naming its files removed."""
    course = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    without_data_files(course)
    site = build_site(course)
    assert not [page for page, data in site.items() if page.endswith(".html") and data_links(data)]
    assert not [path for path in site if "/" in path] and not set(SAMPLE_DATA) & set(site)
