"""The validator's report in a notebook: ``_repr_html_`` and ``_repr_markdown_`` show the
counts, the checks run and the defects by owner, escape whatever a course holds, give the
same string for the same report, and cost the validator no import."""

from __future__ import annotations

import html.parser
import os
import subprocess
import sys
from pathlib import Path

from stay.validate import CourseReport, Defect, Severity, ValidationReport, validate_courses
from tests.conftest import ROOT, SAMPLE
from tests.fixtures.rules import make_fixture

HOSTILE = "<script>alert('x')</script> | *bold* [link](javascript:alert(1)) `code` &amp;"


def _report() -> ValidationReport:
    defects = (
        Defect("course.yaml", "man001", "-", f"title {HOSTILE}", Severity.FAIL, "manifest"),
        Defect("modules/m01/m01-l01.quiz.yaml", "qz003", "q1", "two correct options", Severity.FAIL, "quiz"),
        Defect("modules/m01/m01-l01.quiz.yaml", "qz003", "q2", "two correct options", Severity.FAIL, "quiz"),
        Defect("modules/m01/m01-l01.md", "les004", "-", "over budget", Severity.WARN, "content"),
    )
    hostile = CourseReport(dir=f"courses/{HOSTILE}", slug=HOSTILE, strict=False, evaluated={"man001": 3, "qz003": 7},
                           passed={"man001": 2, "qz003": 5}, defects=defects)
    clean = CourseReport(dir="courses/clean", slug="clean", strict=False, evaluated={"man001": 3},
                         passed={"man001": 3}, defects=())
    return ValidationReport((hostile, clean), strict=False)


class _Tables(html.parser.HTMLParser):
    """The text of every table cell, row by row, and every tag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.rows[-1].append("")

    def handle_data(self, data: str) -> None:
        if self.rows and self.tags[-1] in ("td", "th"):
            self.rows[-1][-1] += data


def test_the_html_shows_counts_checks_and_defects_by_owner() -> None:
    page = _report()._repr_html_()
    tables = _Tables()
    tables.feed(page)
    assert "stay validate: 2 courses, 3 FAIL, 1 WARN, 13 checks run" in page
    rows = tables.rows
    assert ["courses/clean", "0", "0", "3", "3", "1"] in rows
    assert [f"courses/{HOSTILE}", "3", "1", "10", "7", "2"] in rows  # the hostile text, shown as text
    owners = rows[rows.index(["owner", "FAIL", "WARN", "codes"]) + 1:][:3]
    assert owners == [["manifest", "1", "0", "man001"], ["content", "0", "1", "les004"], ["quiz", "2", "0", "qz003 x2"]]
    assert ["courses/" + HOSTILE, "FAIL", "man001", "course.yaml", "-", f"title {HOSTILE}"] in rows
    assert set(tables.tags) == {"div", "p", "strong", "table", "thead", "tbody", "tr", "th", "td"}  # nothing else


def test_the_markdown_has_the_same_tables_and_escapes_markup() -> None:
    text = _report()._repr_markdown_()
    assert text.startswith("**stay validate: 2 courses, 3 FAIL, 1 WARN, 13 checks run**\n")
    assert "| owner | FAIL | WARN | codes |\n|:---|---:|---:|:---|\n| manifest | 1 | 0 | man001 |\n" in text
    assert "| quiz | 2 | 0 | qz003 x2 |" in text
    escaped = r"&lt;script&gt;alert('x')&lt;/script&gt; \| \*bold\* \[link\](javascript:alert(1)) \`code\` &amp;amp;"
    assert f"| courses/{escaped} | 3 | 1 | 10 | 7 | 2 |" in text
    assert "<script>" not in text and "[link](" not in text
    for line in text.splitlines():
        if line.startswith("|"):  # a hostile | cannot add a column
            assert line.replace("\\|", "").count("|") in (5, 7, 8)


def test_a_clean_report_says_no_defects_and_a_long_one_says_what_is_left_out() -> None:
    clean = ValidationReport((_report().courses[1],), strict=True)
    assert "No defects." in clean._repr_markdown_() and "<p>No defects.</p>" in clean._repr_html_()
    many = tuple(Defect(f"f{i:02d}.yaml", "qz003", "-", "m", Severity.FAIL, "quiz") for i in range(25))
    long = ValidationReport((CourseReport("c", "c", True, {"qz003": 25}, {"qz003": 0}, many),), strict=True)
    assert "stay validate --strict: 1 course, 25 FAIL" in long._repr_html_()
    assert long._repr_html_().count('<td style="text-align:left">FAIL</td>') == 20 and "5 more defects not shown; to\\_text() lists every one." \
        in long._repr_markdown_()


def test_the_same_report_gives_the_same_strings(tmp_path: Path) -> None:
    course = make_fixture("qz003", tmp_path)
    first, second = validate_courses(course), validate_courses(course)
    assert first.fails >= 1
    assert first._repr_html_() == second._repr_html_() and first._repr_markdown_() == second._repr_markdown_()
    assert "| quiz |" in first._repr_markdown_()
    assert first.courses[0]._repr_markdown_() == first._repr_markdown_()  # one course shows as a report of one


def test_showing_a_report_imports_no_template_engine_and_no_pydantic() -> None:
    code = ("import sys, stay.validate as v; r = v.validate_courses(sys.argv[1]); r._repr_html_(); r._repr_markdown_(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jinja2', 'markupsafe', 'pydantic')))")
    done = subprocess.run([sys.executable, "-c", code, str(SAMPLE)], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.stdout == "[]\n"
