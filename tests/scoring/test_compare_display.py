"""A comparison in a notebook: ``_repr_html_`` and ``_repr_markdown_`` give per scorer the
means, the difference with its interval, raw and adjusted p, the MDE and the verdict, then
the gate's outcome; escaped, and the same for the same comparison."""

from __future__ import annotations

import html.parser

from stay.scoring._compare import Comparison, compare
from tests.scoring.reports import make_report, steady

HOSTILE = "<img src=x onerror=alert(1)> | **x**"


class _Cells(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.tags: set[str] = set()
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "tr":
            self.rows.append([])
        self._in_cell = tag in ("td", "th")
        if self._in_cell:
            self.rows[-1].append("")

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self.rows[-1][-1] += data


def _regression() -> Comparison:
    return compare(make_report(steady(), label="baseline"),
                   make_report(steady(drop={"a": 0.25}), label=HOSTILE), permutations=999)


def test_the_html_has_every_figure_per_scorer_and_the_gate() -> None:
    comparison = _regression()
    cells = _Cells()
    cells.feed(comparison._repr_html_())
    head, a, b = cells.rows
    assert head == ["scorer", "test", "baseline", "candidate", "difference", "95% interval", "p", "p (Holm)", "MDE",
                    "verdict"]
    r = comparison.scorers[0]
    assert a == ["a", "builds", f"{r.baseline:.3f}", f"{r.candidate:.3f}", f"{r.difference:+.3f}",
                 f"[{r.low:+.3f}, {r.high:+.3f}]", f"{r.p:.2g}" if r.p < 0.01 else f"{r.p:.3f}",
                 f"{r.p_adjusted:.2g}" if r.p_adjusted < 0.01 else f"{r.p_adjusted:.3f}", f"{r.mde:.3f}", "worse"]
    assert b[0] == "b" and b[-1] == "no detectable difference"
    page = comparison._repr_html_()
    assert "<strong>gate fires (exit 1): a worse at a Holm-adjusted p below 0.05</strong>" in page
    assert "&lt;img src=x onerror=alert(1)&gt; | **x** against baseline" in page and "<img" not in page
    assert cells.tags == {"div", "p", "strong", "table", "thead", "tbody", "tr", "th", "td"}


def test_the_markdown_has_the_same_table_escaped_and_the_gate() -> None:
    text = _regression()._repr_markdown_()
    assert text.startswith(r"**&lt;img src=x onerror=alert(1)&gt; \| \*\*x\*\* against baseline (epochs: baseline 4, "
                           "candidate 4)**\n\n| scorer | test | baseline | candidate | difference | 95% interval | p | "
                           "p (Holm) | MDE | verdict |\n|:---|:---|---:|---:|---:|:---|---:|---:|---:|:---|\n| a | builds |")
    assert text.endswith("\n\n**gate fires (exit 1): a worse at a Holm-adjusted p below 0.05**\n")
    assert "| b | builds | 0.750 | 0.750 | +0.000 |" in text and "no detectable difference |" in text


def test_a_passing_comparison_says_so_and_the_same_comparison_shows_the_same() -> None:
    first = compare(make_report(steady(), label="b"), make_report(steady(), label="c"), permutations=999)
    again = compare(make_report(steady(), label="b"), make_report(steady(), label="c"), permutations=999)
    assert first.gate == "gate passes (exit 0): no scorer is worse at a Holm-adjusted p below 0.05"
    assert first._repr_html_() == again._repr_html_() and first._repr_markdown_() == again._repr_markdown_()
