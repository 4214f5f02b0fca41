"""stay._display.markdown_text: a model's text, whatever it holds, reads back as that text
once Markdown renders it, in a paragraph and in a table cell (markdown-it with raw HTML
on, as notebooks and GitHub render it)."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from stay._display import html_table, markdown_table, markdown_text

MD = MarkdownIt("commonmark", {"html": True}).enable("table")
TRICKY = ["&", "&amp;", "&#60;", "&#x3C;", "&lt;", "<", ">", "<b>", "<script>", "|", "`", "*", "_", "[", "]",
          "(", ")", "~", "\\", "#", "!", ";", "x", " ", "1", "é"]
TEXT = st.lists(st.sampled_from(TRICKY), min_size=1, max_size=12).map("".join).filter(str.strip)


def _text(rendered: str) -> str:
    """What a reader sees: the rendered HTML without its tags, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", rendered)).strip()


@given(TEXT)
def test_text_renders_as_itself_in_a_paragraph(text: str) -> None:
    line = "word " + markdown_text(text)  # after a word: no list, heading or block marker at a line's start
    assert _text(MD.render(line)) == "word " + " ".join(text.split())
    assert "<script" not in MD.render(line)


@given(TEXT, TEXT)
def test_text_renders_as_itself_in_a_table_cell(first: str, second: str) -> None:
    table = markdown_table(["a", "b"], [[first, second]])
    cells = re.findall(r"<td[^>]*>(.*?)</td>", MD.render(table), re.S)
    assert [html.unescape(re.sub(r"<[^>]*>", "", c)).strip() for c in cells] == [
        " ".join(first.split()), " ".join(second.split())]


def test_a_plain_ampersand_is_written_as_itself() -> None:
    assert markdown_text("TCP & TLS") == "TCP & TLS"  # reads as written in a terminal
    assert markdown_text("&amp; &#60;") == "&amp;amp; &amp;#60;"


def test_text_columns_are_left_aligned_and_numbers_right_in_both_forms() -> None:
    """Jupyter's stylesheet right-aligns every cell: a column of paths or messages must say left."""
    head, rows, numeric = ("path", "count", "message"), [("modules/m01/a.md", 3, "too long")], {1}
    table = html_table(head, rows, numeric=numeric)
    aligned = re.findall(r'<t[hd] style="text-align:(\w+)">', table)
    assert aligned == ["right" if i in numeric else "left" for i in range(len(head))] * (1 + len(rows))
    cells = re.findall(r'<td style="text-align:(\w+)">', MD.render(markdown_table(head, rows, numeric=numeric)))
    assert cells == ["right" if i in numeric else "left" for i in range(len(head))]
