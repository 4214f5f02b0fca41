"""``stay.status()`` in a notebook: tables like ``BuildResult``'s, with
everything they hold escaped (a brief's text is the user's, or anyone's)."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path

from markdown_it import MarkdownIt

import stay
from stay import build_course
from tests.conftest import ROOT

FIRST_AID = ROOT / "examples" / "briefs" / "first-aid-at-work.yaml"
MD = MarkdownIt("commonmark", {"html": True}).enable("table")


def test_status_shows_each_artefact_its_state_and_why_with_a_count_per_state(tmp_path: Path) -> None:
    result = build_course(FIRST_AID, courses_dir=tmp_path, backend="offline", progress=lambda _: None)
    (result.course_dir / "audience.yaml").write_text("edited: by hand\n")  # one edited, the rest as built
    found = stay.status(result.slug, courses_dir=tmp_path)
    assert isinstance(found, dict) and found == dict(found)  # still the dict it was
    shown = found._repr_html_()
    counts = Counter(s.state for s in found.values())
    assert "edited" in counts and len(counts) > 1
    for state, n in counts.items():
        assert f"{n} {state}" in shown
    rows = re.findall(r"<tr><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", shown)
    assert rows == [(html.escape(p), s.state, html.escape(s.describe())) for p, s in found.items()]
    markdown = MD.render(found._repr_markdown_())
    assert markdown.count("<tr>") == len(found) + 1  # the head and a row per artefact
    adopted = stay.adopt(result.slug, courses_dir=tmp_path)  # adopt answers the same statuses, shown alike
    assert adopted._repr_html_().startswith('<div class="stay-status">') and "edited" not in adopted._repr_html_()


def test_a_brief_shows_its_fields_escaped_in_both_forms() -> None:
    brief = stay.Brief.from_yaml(FIRST_AID).model_copy(update={"title": "<script>alert(1)</script> | **x**"})
    shown = brief._repr_html_()
    assert "<script>" not in shown and html.escape(brief.title) in shown
    rows = re.findall(r"<tr><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", shown)
    fields = brief.model_dump(exclude_none=True)
    assert [name for name, _ in rows] == list(fields)  # every field it sets, in the model's order
    for name, value in fields.items():
        text = "; ".join(value) if isinstance(value, list) else value
        assert (name, html.escape(" ".join(text.split()))) in rows
    rendered = MD.render(brief._repr_markdown_())
    assert "<script>" not in rendered and "<strong>" not in rendered.split("</p>", 1)[1]  # no markup from the title
    assert rendered.count("<tr>") == len(fields) + 1


def test_a_brief_at_an_ipython_prompt_is_one_field_a_line_and_cannot_drive_the_terminal() -> None:
    class Printer:  # what IPython.lib.pretty hands _repr_pretty_ (IPython is not a dependency)
        def __init__(self) -> None:
            self.written = ""

        def text(self, text: str) -> None:
            self.written += text

    brief = stay.Brief.from_yaml(FIRST_AID).model_copy(update={"title": "red \x1b[31m title"})
    printer = Printer()
    brief._repr_pretty_(printer, False)
    lines = printer.written.splitlines()
    fields = brief.model_dump(exclude_none=True)
    assert lines[0] == "Brief" and len(lines) == len(fields) + 1
    assert [line.split()[0] for line in lines[1:]] == list(fields)
    assert "\x1b" not in printer.written and "\\x1b[31m" in lines[1]
    assert repr(brief).startswith("Brief(title=")  # repr() stays pydantic's, one line
