"""Every kind of site the viewer writes, for the browser tests that go through every page
(test_layout_browser.py, test_a11y_browser.py): the sample course, a damaged copy of it,
a hostile copy of it, a tracked copy with stale files (long "changed: ..." lines), a library of two
courses (its listing's progress bars: test_progress_bar_browser.py; the sample there is given
the fixture's data files beside its own, so its pages list more for download), the learners' pages of the
sample and of the library, and the eval report pages (two real offline runs compared and
shown, the comparison's fixed rows, a refused comparison, a minimal run). A page another
part of the viewer adds is checked by those tests without a new one."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

import stay.artefacts as artefacts
from stay.view import render_compare_html, render_compare_refused_html, render_course, render_run_summary_html
from stay.view._site import render_library
from tests.conftest import SAMPLE
from tests.view.report_data import HEADER, ITEMS, ROWS

LESSON_DIR = Path("modules") / "m01-from-url-to-connection"
FLAG = "window.__stayPwned"
"""Every hostile payload sets this; a page that ran any of them has it set."""
PAYLOADS = ("<script>window.__stayPwned = 1</script>", "<img src=x onerror=\"window.__stayPwned = 2\">",
            "[a javascript link](javascript:window.__stayPwned=3)", "<a href=\"javascript:window.__stayPwned=4\">raw</a>")
HOSTILE = " ".join(PAYLOADS)
LIBRARY = "library"
"""The directory of the library's site (``stay view --all``) under the sites' root."""
LEARNER, LEARNER_LIBRARY = "learner", "learner-library"
"""The sample's and the library's learners' pages (``stay view --learner``), under the sites' root."""
SHORT = "http-first-module"
"""The library's second course: the sample cut to its first :data:`SHORT_MODULES` modules,
under a title and slug of its own, so the two courses share some lesson ids but not their
number."""
SHORT_MODULES = 1
SHORT_TITLE = "HTTP, the first module"


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


STALE_PLAN = LESSON_DIR / "m01-l01.plan.yaml"
"""The plan the stale course's author edited by hand: every file made from it is stale."""


def stale_course(tmp: Path) -> Path:
    """The sample, tracked (``stay adopt``), with :data:`STALE_PLAN` edited since: its
    lesson's files are stale, each naming the plan (a long path) as what changed."""
    from stay import adopt

    course = _copy(tmp, "stale")
    adopt(course.name, courses_dir=course.parent)
    with open(course / STALE_PLAN, "a", encoding="utf-8") as plan:
        plan.write("# edited by hand\n")
    return course


def library_courses(tmp: Path) -> Path:
    """A courses directory holding the sample, with the fixture's data files beside its own,
    and :data:`SHORT`."""
    from tests.fixtures.rules.ast import with_data_files

    courses = tmp / LIBRARY
    courses.mkdir()
    shutil.copytree(SAMPLE, courses / SAMPLE.name)
    with_data_files(courses / SAMPLE.name)
    short = courses / SHORT
    shutil.copytree(SAMPLE, short)
    curriculum = yaml.safe_load((short / "curriculum.yaml").read_text(encoding="utf-8"))
    for module in curriculum["modules"][SHORT_MODULES:]:
        shutil.rmtree(short / "modules" / f"{module['id']}-{module['slug']}")
    curriculum["modules"] = curriculum["modules"][:SHORT_MODULES]
    (short / "curriculum.yaml").write_text(yaml.safe_dump(curriculum, sort_keys=False), encoding="utf-8")
    title = artefacts.load(SAMPLE / "course.yaml", artefacts.CourseManifest).title
    _replace(short / "course.yaml", f"title: {title}\n", f"title: {SHORT_TITLE}\n")
    return courses


def library_lessons() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each course of the library, by slug: its title and lesson ids, read from the sample's
    own files (the cut :func:`library_courses` makes), never from the viewer."""
    modules = artefacts.load(SAMPLE / "curriculum.yaml", artefacts.Curriculum).modules
    title = artefacts.load(SAMPLE / "course.yaml", artefacts.CourseManifest).title
    return {SAMPLE.name: (title, tuple(lesson.id for module in modules for lesson in module.lessons)),
            SHORT: (SHORT_TITLE, tuple(lesson.id for module in modules[:SHORT_MODULES] for lesson in module.lessons))}


def write_sites(root: Path, sources: Path, eval_reports: tuple[Path, Path]) -> Path:
    """Every kind of site under ``root`` (the courses copied under ``sources``)."""
    from stay.cli import main

    render_course(SAMPLE, root / "sample")
    render_course(damaged_course(sources), root / "damaged")
    render_course(hostile_course(sources), root / "hostile")
    render_course(stale_course(sources), root / "stale")
    render_library(library_courses(sources), root / LIBRARY)
    render_course(SAMPLE, root / LEARNER, learner=True)  # stay view --learner: the pages a course publishes
    render_library(sources / LIBRARY, root / LEARNER_LIBRARY, learner=True)
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
    assert {page.split("/")[0] for page in pages} == {"sample", "damaged", "hostile", "stale", LIBRARY, LEARNER,
                                                      LEARNER_LIBRARY, "reports"}
    return pages
