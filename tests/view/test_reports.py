"""The eval report pages, from hand-made comparison data and from a real run's report."""

from __future__ import annotations

import html.parser
import json
import re

import pytest

from stay.scoring import OfflineJudge
from stay.scoring.scorers import JUDGE_FREE_NAMES
from stay.view import render_compare_html, render_run_summary_html
from tests.conftest import SAMPLE, run_stay
from tests.view.conftest import page_text
from tests.view.report_data import HEADER, ITEMS, ROWS


def test_the_compare_page_shows_every_figure_of_every_scorer() -> None:
    page = render_compare_html(HEADER, ROWS, ITEMS)
    text = page_text(page)
    for fact in ("candidate-shorter-prompts against baseline", "model:claude-sonnet-5-5 (claude-sonnet-5-5)",
                 "exact sign test on paired items", "adjusted by Holm", "claude-haiku-5-5 (changed)"):
        assert fact in text
    row = re.search(r'<tr id="scorer-distractor_quality">.*?</tr>', page, re.DOTALL)
    assert row is not None
    cells = page_text(row.group(0))
    assert cells.startswith("distractor_quality")
    for figure in ("0.820 [0.780, 0.860] at 95%", "0.710 [0.660, 0.760] at 95%", "-0.110 [-0.160, -0.060] at 95%",
                   "240", "4.0e-04", "0.002", "0.050", "worse"):
        assert figure in cells, figure
    assert 'class="verdict-worse">worse<' in row.group(0)
    assert row.group(0).count("<svg") == 2 and 'class="mde"' in row.group(0)


def test_the_interval_bars_are_drawn_to_scale() -> None:
    page = render_compare_html(HEADER, ROWS[:1], None)
    svgs = re.findall(r"<svg.*?</svg>", page, re.DOTALL)
    means, difference = svgs
    # [0, 1] over x 12..244: baseline 0.78..0.86, mean 0.82
    assert '<line class="baseline" x1="192.96" y1="10.0" x2="211.52" y2="10.0"' in means
    assert '<circle class="baseline" cx="202.24" cy="10.0"' in means
    # symmetric about zero: reach 0.16 * 1.1; zero at the middle
    assert '<line class="zero" x1="128.0"' in difference


def test_without_content_matching_the_page_says_why_there_is_no_item_diff() -> None:
    page = page_text(render_compare_html(HEADER, ROWS, None))
    assert "No item diff: the items of the two runs were not matched by content" in page


def test_the_item_diff_puts_regressions_first() -> None:
    page = render_compare_html(HEADER, ROWS, list(reversed(ITEMS)))
    changes = re.findall(r'<td class="delta">(\w+)</td>', page)
    assert changes == ["worse", "better", "added", "same"]
    assert "was <code>m02-l01-e2</code>" in page


def test_report_pages_escape_what_they_show_and_fetch_nothing() -> None:
    header = HEADER.__class__(**{**HEADER.__dict__, "candidate_label": "<script>alert(1)</script>"})
    page = render_compare_html(header, ROWS, ITEMS)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;without&lt;/b&gt;" in page  # a judge's reason
    tags: list[tuple[str, dict[str, str | None]]] = []

    class Tags(html.parser.HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.append((tag, dict(attrs)))

    Tags().feed(page)
    assert not [t for t, a in tags if t in ("script", "img", "iframe") or (t == "link" and a.get("rel") != "icon")]


def test_the_same_data_gives_the_same_page() -> None:
    assert render_compare_html(HEADER, ROWS, ITEMS) == render_compare_html(HEADER, list(reversed(ROWS)), ITEMS)


@pytest.fixture(scope="module")
def run_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A real eval report: the sample course scored offline (the model judges' scorers not judged)."""
    out = tmp_path_factory.mktemp("report") / "r.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(out.parent)
        done = run_stay("evals", "score", str(SAMPLE), "--output", str(out), "--backend", "offline",
                        "--label", "sample")
    assert done.returncode == 0, done.stderr
    document: dict[str, object] = json.loads(out.read_text())
    return document


def test_the_run_summary_shows_scorers_briefs_items_and_costs(run_report: dict[str, object]) -> None:
    page = render_run_summary_html(run_report)
    text = page_text(page)
    assert "Eval run sample" in text and OfflineJudge.name in text
    unjudged = [n for n in run_report["scorers"] if n not in JUDGE_FREE_NAMES]  # type: ignore[union-attr]
    assert unjudged and text.count("not judged (offline): no mean, no pass") == len(unjudged)
    briefs = run_report["briefs"]
    assert isinstance(briefs, dict)
    (entry,) = briefs[SAMPLE.name]["builds"]  # a rescored course: one build
    for name, result in entry["scorers"].items():
        assert f'id="scorer-{name}"' in page
        for item in result["items"]:
            assert item["reason"].split()[0] in text
            assert item["item"] in text
    means = run_report["means"]
    assert isinstance(means, dict)
    for name, mean in means.items():
        if mean is not None:
            row = re.search(rf'<tr id="scorer-{name}">.*?</tr>', page, re.DOTALL)
            assert row is not None and f"{mean:.3f}" in row.group(0)
    assert "building $0.0000" in text


def test_a_damaged_report_renders_what_it_can() -> None:
    page = page_text(render_run_summary_html({"version": 1, "label": "x", "briefs": {"a": "not a mapping", "b": {
        "scorers": {"s": {"score": "high", "items": ["junk", {"item": "i1", "score": 1, "reason": "fine"}]}}}}}))
    assert "i1" in page and "fine" in page and "n/a" in page
