"""The review page lists each proposal ``stay revise --show`` left waiting: the file, the
first line of its note, the diff keeping it would make (against the file as it is now,
derived here with difflib from the two texts) and the command that keeps it, which parses
with stay's own parser and keeps it; a stale proposal is marked stale, with no diff and
the command that shows a new one. Every value is escaped."""

from __future__ import annotations

import difflib
import html
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from stay.cli import main
from stay.pipeline import revise
from stay.pipeline._state import proposal_file
from stay.testing import RiggedBackend
from stay.view import build_site
from tests.view.conftest import authors_nav, quiet
from tests.view.test_review import _commands, _offline, _review, at_design, design_copy  # noqa: F401  (fixtures)

TARGET = "curriculum.yaml"
"""A file of the design gate's own phase: the course waits at that gate."""


@pytest.fixture
def course(design_copy: Path) -> Path:  # noqa: F811  (the imported fixture, by its name here)
    """A private copy of the course stopped at the design gate."""
    return design_copy


def _show(course: Path, note: str) -> str:
    revise(course.name, [TARGET], note=note, show=True, courses_dir=course.parent, backend=RiggedBackend(),
           progress=quiet)
    return str(json.loads(proposal_file(course, TARGET).read_text())["text"])


def _section(page: str) -> str:
    found = re.search(r'<section aria-labelledby="review-proposals">(.*?)</section>', page, re.DOTALL)
    assert found is not None, "no proposals section"
    return found.group(1)


def _diff(section: str) -> list[str]:
    (block,) = re.findall(r'<pre class="review-diff">(.*?)</pre>', section, re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "", block)).splitlines()


def test_a_waiting_proposal_is_listed_with_its_diff_and_a_keep_command_that_keeps_it(course: Path) -> None:
    note = "Shorter module summaries, <b>please</b>.\nA second line the page leaves out."
    before = (course / TARGET).read_text()
    text = _show(course, note)
    section = _section(_review(course))
    (said,) = re.findall(r"<q>(.*?)</q>", section, re.DOTALL)
    assert said == html.escape(note.splitlines()[0], quote=False)  # the first line, escaped
    assert "<b>please</b>" not in section
    expected = difflib.unified_diff(before.splitlines(), text.splitlines(), f"{TARGET} (now)",
                                    f"{TARGET} (as proposed)", lineterm="")
    assert _diff(section) == list(expected)
    (command,) = _commands(section)
    words = shlex.split(command)
    assert words[:5] == ["stay", "revise", course.name, TARGET, "--keep"]
    assert main(words[1:]) == 0
    assert (course / TARGET).read_text() == text
    assert 'aria-labelledby="review-proposals"' not in _review(course)


def test_a_stale_proposal_is_marked_stale_with_no_diff_and_the_command_to_show_anew(course: Path) -> None:
    _show(course, "Shorter module summaries.")
    (course / TARGET).write_text((course / TARGET).read_text() + "\n")
    section = _section(_review(course))
    assert f"<code>{TARGET}</code> (stale)" in section and "review-diff" not in section
    (command,) = _commands(section)
    words = shlex.split(command)
    assert words[:4] == ["stay", "revise", course.name, TARGET] and "--show" in words and "--keep" not in words


def test_a_damaged_proposal_is_named_with_the_command_that_shows_a_new_one(course: Path) -> None:
    _show(course, "Shorter module summaries.")
    proposal_file(course, TARGET).write_text("<script>alert(1)</script>")
    section = _section(_review(course))
    assert f"<code>{TARGET}</code> (cannot be read)" in section and "damaged" in section
    assert "<script>" not in section and "review-diff" not in section  # nothing of it is shown
    (command,) = _commands(section)
    words = shlex.split(command)
    assert words[:4] == ["stay", "revise", course.name, TARGET] and "--show" in words and "--keep" not in words


def test_a_course_past_every_gate_still_lists_its_waiting_proposal(built_course: Path, tmp_path: Path) -> None:
    course = tmp_path / "courses" / built_course.name
    shutil.copytree(built_course, course)
    quiz = next(course.glob("modules/*/m01-l02.quiz.yaml")).relative_to(course).as_posix()
    revise(course.name, [quiz], note="Ask about TTLs.", show=True, courses_dir=course.parent,
           backend=RiggedBackend(), progress=quiet)
    page = _review(course)
    assert "Nothing awaits review" in page
    section = _section(page)
    assert f"<code>{quiz}</code>" in section and _diff(section)
    (command,) = _commands(section)
    assert shlex.split(command)[:5] == ["stay", "revise", course.name, quiz, "--keep"]


def test_a_waiting_proposal_past_every_gate_is_reachable_from_the_home_page_and_the_nav(
        built_course: Path, tmp_path: Path) -> None:
    course = tmp_path / "courses" / built_course.name
    shutil.copytree(built_course, course)
    before = build_site(course)
    assert b'href="review.html' not in before["index.html"]  # nothing waits: no page is offered
    quizzes = sorted(path.relative_to(course).as_posix() for path in course.glob("modules/*/*.quiz.yaml"))[:2]
    for count, quiz in enumerate(quizzes, start=1):
        revise(course.name, [quiz], note="Ask about TTLs.", show=True, courses_dir=course.parent,
               backend=RiggedBackend(), progress=quiet)
        site = build_site(course)
        index = site["index.html"].decode()
        callout = re.search(r'<p class="review-callout">(.*?)</p>', index, re.DOTALL)
        assert callout is not None and f"{count} proposal" in callout.group(1)
        assert 'href="review.html#review-proposals"' in callout.group(1)
        for name, page in site.items():  # every page's "For authors" navigation offers the review page
            if name.endswith(".html"):
                assert 'href="review.html"' in (authors_nav(page) or ""), name
