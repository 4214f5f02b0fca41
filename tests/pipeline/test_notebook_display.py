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
