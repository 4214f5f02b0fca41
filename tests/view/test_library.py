"""A library of courses: ``stay view --all`` (or no slug) renders every course in a courses
directory as one site, a listing at ``<out>/index.html`` and each course under
``<out>/<slug>/``. The courses are built offline by stay; the expected rows are read from
the courses' own files."""

from __future__ import annotations

import html.parser
import os
import shutil
from pathlib import Path

import pytest

from stay.artefacts import CourseManifest, Curriculum, load
from stay.errors import UsageError
from stay.pipeline import build_course
from stay.view import _site, render_course
from stay.view._env import STATIC_FILES
from stay.view._site import LISTING, MARKER, build_library, render_library
from tests.conftest import ROOT, run_stay
from tests.view.conftest import page_text, quiet

GATED_BRIEF = ROOT / "examples" / "briefs" / "sourdough-for-busy-bakers.yaml"
BROKEN = "broken-course"
NOT_A_COURSE = "notes"
LINKED = "linked-course"


@pytest.fixture(scope="module")
def library_dir(tmp_path_factory: pytest.TempPathFactory, built_course: Path) -> Path:
    """A courses directory as a person has one: a complete course, one stopped at the design
    gate, one whose manifest is damaged, a directory that is no course, a loose file and a
    symlink to a course."""
    courses = tmp_path_factory.mktemp("library") / "courses"
    courses.mkdir()
    shutil.copytree(built_course, courses / built_course.name)
    gated = build_course(GATED_BRIEF, courses_dir=courses, backend="offline", progress=quiet)
    assert not gated.complete and "design gate" in str(gated.reason)
    (courses / BROKEN).mkdir()
    (courses / BROKEN / "course.yaml").write_text("title: [unclosed\n")
    (courses / NOT_A_COURSE).mkdir()
    (courses / NOT_A_COURSE / "todo.txt").write_text("not a course\n")
    (courses / "README.md").write_text("my courses\n")
    os.symlink(courses / built_course.name, courses / LINKED)
    return courses


def courses_in(courses: Path) -> list[Path]:
    """The courses a person sees in the directory: real directories holding a course.yaml."""
    return sorted(p for p in courses.iterdir() if not p.is_symlink() and (p / "course.yaml").exists())


def tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.progress: list[dict[str, str | None]] = []
        self.continues: list[str] = []
        """The course of each "continue where you left off" link (hidden until progress.js fills it)."""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href"):
            self.hrefs.append(str(found["href"]))
        if tag == "a" and found.get("class") == "continue" and "hidden" in found:
            self.continues.append(str(found["data-course"]))
        if tag == "div" and found.get("class") == "progress":
            self.progress.append(found)


def parsed(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def library_site(library_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("library-site") / "site"
    render_library(library_dir, out)
    return out


def test_the_listing_lists_every_course_with_its_title_counts_and_health(library_dir: Path, library_site: Path,
                                                                        built_course: Path) -> None:
    listing = parsed(library_site / LISTING)
    text = page_text((library_site / LISTING).read_bytes())
    expected = courses_in(library_dir)
    homes = [h for h in listing.hrefs if h.endswith("/index.html")]  # the title, then the hidden continue link
    assert list(dict.fromkeys(homes)) == [f"{c.name}/index.html" for c in expected]
    assert listing.continues == [c.name for c in expected]
    for course in expected:
        if course.name == BROKEN:
            continue
        manifest = load(course / "course.yaml")
        curriculum = load(course / "curriculum.yaml")
        assert isinstance(manifest, CourseManifest) and isinstance(curriculum, Curriculum)
        lessons = [lesson for module in curriculum.modules for lesson in module.lessons]
        assert f"{manifest.title} For {manifest.brief.audience}" in text
        assert f"Modules {len(curriculum.modules)} Lessons {len(lessons)} Status" in text
        assert f"{len(lessons)} lessons" in text  # the progress bar's fallback, without script
    rows = {row.slug: row.health for row in build_library(library_dir).rows}
    gated = {c.name for c in expected} - {built_course.name, BROKEN}
    assert rows.pop(built_course.name) == "complete"
    assert "damaged" in rows.pop(BROKEN)  # a damaged course is listed, with its problem
    assert rows == dict.fromkeys(gated, "stopped at the design gate") and len(gated) == 1
    assert f"{BROKEN} " in text and "The course manifest cannot be shown" in text


def test_each_row_has_the_progress_element_of_its_lessons(library_dir: Path, library_site: Path) -> None:
    found = {str(p["data-course"]): str(p["data-lessons"]) for p in parsed(library_site / LISTING).progress}
    expected = {}
    for course in courses_in(library_dir):
        try:
            curriculum = load(course / "curriculum.yaml")
        except Exception:
            expected[course.name] = ""
            continue
        assert isinstance(curriculum, Curriculum)
        expected[course.name] = ",".join(lesson.id for module in curriculum.modules for lesson in module.lessons)
    assert found == expected


def test_every_link_of_the_listing_and_back_to_it_resolves(library_dir: Path, library_site: Path) -> None:
    for href in parsed(library_site / LISTING).hrefs:
        assert (library_site / href).is_file(), href
    for course in courses_in(library_dir):
        for page in (library_site / course.name).glob("*.html"):
            assert "../index.html" in parsed(page).hrefs, page  # "All courses", on every page
            assert "All courses" in page.read_text(encoding="utf-8")
    for name in STATIC_FILES:
        assert (library_site / name).is_file()


def test_a_course_alone_has_no_link_to_a_listing(library_dir: Path, tmp_path: Path) -> None:
    single = render_course(courses_in(library_dir)[0], tmp_path / "one")
    assert all("../index.html" not in parsed(page).hrefs for page in single.glob("*.html"))


def test_same_courses_give_the_same_bytes(library_dir: Path, library_site: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    render_library(library_dir, again)
    assert tree(again) == tree(library_site)
    render_library(library_dir, again)  # over itself: nothing changes
    assert tree(again) == tree(library_site)


def test_what_is_no_course_is_skipped_and_said_so(library_dir: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = run_stay("view", "--courses-dir", str(library_dir))  # no slug: every course, into site/
    assert done.returncode == 0, done.stderr
    assert f"skipped {NOT_A_COURSE}: no course.yaml" in done.stderr
    assert f"skipped {LINKED}: a symbolic link" in done.stderr
    assert "README.md" not in done.stderr  # a file is not a directory of courses
    site = tmp_path / "site"
    assert sorted(p.name for p in site.iterdir() if p.is_dir()) == [c.name for c in courses_in(library_dir)]
    assert [line.split(":")[0] for line in done.stdout.splitlines()[:-1]] == [c.name for c in courses_in(library_dir)]
    assert run_stay("view", "--all", "--courses-dir", str(library_dir)).stdout == done.stdout


def test_a_courses_dir_with_no_course_is_refused_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for given in (empty, tmp_path / "absent"):
        done = run_stay("view", "--all", "--courses-dir", str(given), "--out", str(tmp_path / "out"))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    (empty / NOT_A_COURSE).mkdir()
    done = run_stay("view", "--courses-dir", str(empty), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "holds no course" in done.stderr and f"skipped {NOT_A_COURSE}" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_slug_and_all_together_are_refused(library_dir: Path) -> None:
    done = run_stay("view", BROKEN, "--all", "--courses-dir", str(library_dir))
    assert done.returncode == 2 and "not both" in done.stderr


def test_an_earlier_single_course_render_is_taken_over(library_dir: Path, library_site: Path,
                                                       tmp_path: Path) -> None:
    first = courses_in(library_dir)[0]
    render_course(first, tmp_path / "site" / first.name)  # `stay view SLUG`'s default: site/<slug>
    render_library(library_dir, tmp_path / "site")
    assert tree(tmp_path / "site") == tree(library_site)


def test_a_persons_files_stop_the_render_before_anything_is_written(library_dir: Path, tmp_path: Path) -> None:
    first, last = courses_in(library_dir)[0], courses_in(library_dir)[-1]
    out = tmp_path / "site"
    (out / last.name).mkdir(parents=True)
    (out / last.name / "index.html").write_text("my page\n")
    before = tree(out)
    with pytest.raises(UsageError, match="not empty and was not written"):
        render_library(library_dir, out)
    assert tree(out) == before and not (out / first.name).exists() and not (out / MARKER).exists()
    render_course(first, out / first.name)  # beside a person's directory, it is no earlier site
    with pytest.raises(UsageError, match="not empty and was not written"):
        render_library(library_dir, out)


def test_the_listing_loads_progress_js_when_the_package_ships_it(library_dir: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    tag = b'<script src="progress.js" defer></script>'
    shipped = "progress.js" in STATIC_FILES
    assert (tag in build_library(library_dir).listing[LISTING]) == shipped
    # the other case, whichever this branch is in: a stand-in list and file
    others = tuple(n for n in STATIC_FILES if n != "progress.js") + (() if shipped else ("progress.js",))
    monkeypatch.setattr(_site, "STATIC_FILES", others)
    monkeypatch.setattr(_site, "static_text", lambda name: f"/* {name} */")
    listing = build_library(library_dir).listing
    assert (tag in listing[LISTING]) == (not shipped)
    assert set(listing) == {LISTING, *others}
