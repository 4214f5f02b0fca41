"""Markdown to HTML for the viewer: CommonMark with raw HTML off, fenced code highlighted.

markdown-it-py implements CommonMark exactly (it passes the spec's tests), and its
``html`` option turns every raw HTML block and inline tag into escaped text, so a
lesson cannot inject markup or script into its page; its link validator already
refuses ``javascript:``, ``vbscript:``, ``file:`` and non-image ``data:`` links. Two
GFM extensions that ship with it are on, tables and strikethrough, because lessons
use tables. Images are rendered as links, never as ``<img>``: the site fetches
nothing, from the internet or elsewhere. Pygments highlights fenced code whose info
string names a lexer it knows; any other block is shown escaped, unhighlighted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from stay.artefacts import text_format

PYGMENTS_STYLE = "default"
MAX_HIGHLIGHT = 100_000
"""Longer code blocks are shown plain: highlighting is a courtesy, not worth a slow page."""

_LESSON_LINK = re.compile(r"(?:\.{1,2}/)*(?:[a-z0-9-]+/)?(m\d{2}-l\d{2})\.md(#[A-Za-z0-9_-]*)?")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    """The heading's source text, as the validator compares it with the plan."""
    anchor: str


@dataclass(frozen=True)
class Rendered:
    html: str
    headings: tuple[Heading, ...]


def _highlight(code: str, lang: str, _attrs: str) -> str:
    if not lang or len(code) > MAX_HIGHLIGHT:
        return ""  # markdown-it escapes it and wraps it in <pre><code>
    try:
        lexer = get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return ""
    body: str = pygments_highlight(code, lexer, _formatter())
    css_lang = re.sub(r"[^A-Za-z0-9_+-]", "", lang)
    return f'<pre class="highlight"><code class="language-{css_lang}">{body}</code></pre>\n'


@cache
def _formatter() -> HtmlFormatter[str]:
    return HtmlFormatter(nowrap=True, style=PYGMENTS_STYLE)


def pygments_css() -> str:
    """The stylesheet for highlighted code (same Pygments version, same bytes)."""
    css: str = HtmlFormatter(style=PYGMENTS_STYLE).get_style_defs(".highlight")  # type: ignore[no-untyped-call]
    return css + "\n"


def _image_as_link(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = token.attrGet("src") or ""
    escape = _escape
    return f'<a class="image-link" href="{escape(str(src))}">[image: {escape(alt)}]</a>'


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _table_open(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """A table scrolls inside its own box, a region named by its header cells that a
    keyboard can focus (so it can be scrolled without a mouse), never the page."""
    heads = []
    for token in tokens[idx + 1:]:
        if token.type == "thead_close":
            break
        if token.type == "inline":
            heads.append(token.content.strip())
    label = "Table: " + ", ".join(h for h in heads if h) if any(heads) else "Table"
    return (f'<div class="scroll" role="region" aria-label="{_escape(label)}" tabindex="0">\n'
            + str(self.renderToken(tokens, idx, options, env)))


def _table_close(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return str(self.renderToken(tokens, idx, options, env)) + "</div>\n"


def _focusable(original: Any) -> Any:
    """A code block scrolls sideways inside itself: ``tabindex`` lets a keyboard reach it."""

    def render(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        html = str(original(tokens, idx, options, env))
        end = html.index(">", html.index("<pre"))  # the attribute goes last: <pre class=.. tabindex="0">
        return html[:end] + ' tabindex="0"' + html[end:]

    return render


@cache
def _parser(breaks: bool = False) -> MarkdownIt:
    """The lesson parser; ``breaks``: a newline inside a paragraph is a line break."""
    md = MarkdownIt("commonmark", {"html": False, "highlight": _highlight, "breaks": breaks})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_link)
    md.add_render_rule("table_open", _table_open)
    md.add_render_rule("table_close", _table_close)
    for rule in ("fence", "code_block"):
        md.add_render_rule(rule, _focusable(cast(RendererHTML, md.renderer).rules[rule]))
    return md


def anchor_for(text: str, used: set[str]) -> str:
    """A stable, unique fragment id for a heading: ``sec-`` and its words."""
    base = "sec-" + ("-".join(re.findall(r"[a-z0-9]+", text.lower())) or "untitled")
    anchor, n = base, 2
    while anchor in used:
        anchor, n = f"{base}-{n}", n + 1
    used.add(anchor)
    return anchor


def render_markdown(text: str, *, lesson_pages: Mapping[str, str] | None = None,
                    drop_title: str | None = None, breaks: bool = False) -> Rendered:
    """``text`` as safe HTML, with an id on every heading and links between lessons'
    Markdown files pointed at their pages (``lesson id -> page``). ``drop_title``: a
    leading level-1 heading with exactly this text is left out (the page shows it).
    ``breaks``: every newline inside a paragraph is a line break."""
    md = _parser(breaks)
    env: dict[str, Any] = {}
    tokens = md.parse(text, env)
    if (drop_title is not None and len(tokens) >= 3 and tokens[0].type == "heading_open"
            and tokens[0].tag == "h1" and tokens[1].content.strip() == drop_title.strip()):
        tokens = tokens[3:]
    headings: list[Heading] = []
    used: set[str] = set()
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            inline = tokens[index + 1]
            source = inline.content.strip() if inline.type == "inline" else ""
            anchor = anchor_for(source, used)
            token.attrSet("id", anchor)
            headings.append(Heading(int(token.tag[1]), source, anchor))
        if token.type == "inline" and lesson_pages is not None:
            for child in token.children or []:
                if child.type == "link_open":
                    _point_at_page(child, lesson_pages)
    html: str = md.renderer.render(tokens, md.options, env)
    return Rendered(html, tuple(headings))


def _point_at_page(link: Token, pages: Mapping[str, str]) -> None:
    href = str(link.attrGet("href") or "")
    match = _LESSON_LINK.fullmatch(href)
    if match is not None and match.group(1) in pages:
        link.attrSet("href", pages[match.group(1)] + (match.group(2) or ""))


def item_html(owner: Any, name: str, text: str, lesson_pages: Mapping[str, str] | None = None, *,
              breaks: bool = False) -> Markup:
    """``text`` (``owner``'s field ``name``, or one item of it: a hint, a rubric level's
    text) as HTML, by the format its model declares (``stay.artefacts.text_format``):
    Markdown through ``render_markdown`` in a ``div.markdown`` (with ``breaks``, each
    newline kept as a line break); anything else escaped in
    a ``span.as-written``, white space kept, so a "- x" stays text."""
    if text_format(type(owner), name) == "markdown":
        rendered = render_markdown(text.strip(), lesson_pages=lesson_pages, breaks=breaks).html
        return Markup(f'<div class="markdown">{rendered}</div>')
    return Markup(f'<span class="as-written">{escape(text.strip())}</span>')
