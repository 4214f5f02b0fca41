"""Small HTML and Markdown tables for notebooks, counted nouns and ``terminal_text``, with ``html.escape``
alone (showing a report costs the validator no import); every value is escaped, never markup."""

from __future__ import annotations

import html
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any, TextIO, cast

_MARKDOWN_INLINE = re.compile(r"([\\`*_\[\]|~])")
"""What Markdown would read as markup inside a line: escapes, code, emphasis, links, table
cells and strikethrough. (< and > become entities first, and an & that would start one.)"""
_REFERENCE = re.compile(r"&(?=#[0-9]+;|#[xX][0-9a-fA-F]+;|[A-Za-z][A-Za-z0-9]*;)")
"""An & that Markdown would read as a character reference (``&amp;``, ``&#60;``): only
that one needs escaping, so "TCP & TLS" reads as written in a terminal, not "TCP &amp; TLS"."""


_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What a terminal would obey rather than show: C0 controls but tab and newline (ESC starts
every escape sequence, CR rewrites the line), DEL, C1 controls (CSI among them), the
bidirectional overrides that reorder what is shown, and lone surrogates (a file name's
bytes that are not UTF-8, as ``os.fsdecode`` keeps them)."""


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the file name's own byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(value: object) -> str:
    """Every control character, override and undecodable byte written out as an escape (``\\x1b``), so no
    file name or report field can colour, move or hide anything. Tab and newline are kept."""
    return _UNPRINTABLE.sub(_shown, str(value))


class _TerminalStream:
    """A text stream whose every write is ``terminal_text``, encoded so that the stream
    can take it (a character an ASCII locale cannot encode becomes ``\\u00e9``)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        shown = terminal_text(text)
        encoding = getattr(self._stream, "encoding", None)
        if isinstance(encoding, str):
            shown = shown.encode(encoding, "backslashreplace").decode(encoding, "replace")
        self._stream.write(shown)
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def terminal_stream(stream: TextIO) -> TextIO:
    """``stream``, every write through ``terminal_text`` (once: a wrapped stream is kept)."""
    return stream if isinstance(stream, _TerminalStream) else cast(TextIO, _TerminalStream(stream))


def html_text(value: object) -> str:
    """One line of text for HTML: whitespace collapsed, everything escaped."""
    return html.escape(" ".join(str(value).split()))


def markdown_text(value: object) -> str:
    """One line for Markdown, safe in a table cell: < and > as entities (raw HTML passes through), an &
    only where it would start a reference, inline markup escaped."""
    flat = _REFERENCE.sub("&amp;", " ".join(str(value).split()))
    return _MARKDOWN_INLINE.sub(r"\\\1", flat.replace("<", "&lt;").replace(">", "&gt;"))


def html_table(head: Sequence[str], rows: Iterable[Sequence[object]], *, numeric: Collection[int] = ()) -> str:
    """A table, ``numeric`` columns right-aligned, others left, said on each cell: Jupyter's stylesheet
    right-aligns every cell."""

    def cells(tag: str, values: Sequence[object]) -> str:
        return "".join(f'<{tag} style="text-align:{"right" if i in numeric else "left"}">{html_text(v)}</{tag}>'
                       for i, v in enumerate(values))

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><thead><tr>{cells('th', head)}</tr></thead><tbody>{body}</tbody></table>"


def markdown_table(head: Sequence[str], rows: Iterable[Sequence[object]], *, numeric: Collection[int] = ()) -> str:
    """A GitHub-flavoured Markdown table, aligned as ``html_table``'s."""

    def line(values: Sequence[object]) -> str:
        return "| " + " | ".join(markdown_text(v) for v in values) + " |"

    rule = "|" + "|".join("---:" if i in numeric else ":---" for i in range(len(head))) + "|"
    return "\n".join([line(head), rule, *(line(row) for row in rows)]) + "\n"


def clock(seconds: float) -> str:
    """``4.2 s``, ``3 min 07 s``: elapsed time a person reads at a glance."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 lesson``, ``2 lessons``, ``0 lessons``: a count with its noun agreeing."""
    return f"{count} {word if count == 1 else many or word + 's'}"


Table = tuple[Sequence[str], Sequence[Sequence[object]], Collection[int]]
"""A table to show: its head, its rows, and which columns are numeric (right-aligned)."""


def html_block(css_class: str, summary: str, tables: Iterable[Table], tail: str = "") -> str:
    """A summary line in bold, the tables, then a closing line: one ``<div>``."""
    parts = [f"<p><strong>{html_text(summary)}</strong></p>"]
    parts += [html_table(head, rows, numeric=numeric) for head, rows, numeric in tables]
    if tail:
        parts.append(f"<p>{html_text(tail)}</p>")
    return f'<div class="{html.escape(css_class)}">' + "".join(parts) + "</div>"


def markdown_block(summary: str, tables: Iterable[Table], tail: str = "") -> str:
    """The same as Markdown: the summary in bold, the tables, the closing line."""
    parts = [f"**{markdown_text(summary)}**\n"]
    parts += [markdown_table(head, rows, numeric=numeric) for head, rows, numeric in tables]
    if tail:
        parts.append(markdown_text(tail) + "\n")
    return "\n".join(parts)


def fixed(value: float | None, digits: int = 3, signed: bool = False) -> str:
    """A score or an effect to ``digits`` places (``+`` shown when ``signed``); ``n/a`` for none."""
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


LINE_CHARS = 200
"""The most characters of a recorded reason, a note's first line or an error's detail that are shown."""


def one_line(text: object, limit: int = LINE_CHARS) -> str:
    """``text`` as one line of at most ``limit`` characters (an ellipsis says it was cut)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"
