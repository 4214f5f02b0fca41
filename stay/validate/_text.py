"""The contract's text definitions: norm, words, mentions, and a lesson body's parts.

Every function here is the literal reading of a definition in validator-rules.md
("Text definitions"); the rules never re-derive these on their own.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z0-9]+(?:['\u2019-][A-Za-z0-9]+)*")
_SPACE_RUN = re.compile(r"\s+")
_FENCE = re.compile(r"(`{3,}|~{3,})")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_NUMBERED_ITEM = re.compile(r"[0-9]+(?:\. |\) )")
_NOT_PARAGRAPH = ("#", "|", ">", "<", "![", "- ", "* ", "+ ")


def norm(text: str) -> str:
    """Casefold, fold whitespace runs to one space, strip."""
    return _SPACE_RUN.sub(" ", text.casefold()).strip()


def words(text: str) -> list[str]:
    """The words of ``text``; a word count is their number."""
    return _WORD.findall(text)


def first_word(text: str) -> str:
    """The first word of an outcome's text, casefolded; '' when it has none."""
    match = _WORD.search(text)
    return match.group(0).casefold() if match else ""


@lru_cache(maxsize=4096)
def _mention_pattern(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<![a-z0-9])" + re.escape(norm(term)) + r"(?![a-z0-9])")


def mentions_normed(normed_text: str, term: str) -> bool:
    """``mentions`` for a text already passed through ``norm`` (lesson bodies are)."""
    return _mention_pattern(term).search(normed_text) is not None


def mentions(text: str, term: str) -> bool:
    """Whether ``text`` mentions ``term`` as a whole word or phrase, after norm()."""
    return mentions_normed(norm(text), term)


def split_lines(text: str) -> list[str]:
    """Lines split on universal newlines; a final line break starts no extra line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def id_matches(value: str, lesson_id: str, letter: str) -> bool:
    """Whether ``value`` is ``<lesson_id>-<letter><n>`` with n counted from 1."""
    pattern = re.escape(lesson_id) + "-" + letter + "[1-9][0-9]*"
    return re.fullmatch(pattern, value) is not None


def sentences(paragraph: str) -> list[str]:
    """The sentences of a paragraph: pieces between sentence breaks that hold words."""
    return [piece for piece in _SENTENCE_BREAK.split(paragraph) if _WORD.search(piece)]


def _is_paragraph(first_line: str) -> bool:
    start = first_line.lstrip()
    return not start.startswith(_NOT_PARAGRAPH) and _NUMBERED_ITEM.match(start) is None


@dataclass(frozen=True, slots=True)
class Body:
    """A lesson body split the contract's way: code, headings, paragraphs, prose."""

    text: str
    """Every body line, joined with newlines (code and headings included)."""
    headings: tuple[tuple[int, str], ...]
    """(level, text) of every heading outside code, in order."""
    code_infos: tuple[str, ...]
    """The info string of every code block, in order."""
    paragraphs: tuple[str, ...]
    """Paragraph texts, numbered from 1 by position."""
    prose_words: int
    prose_text: str
    """Prose lines (headings included) joined with newlines, inline code removed."""
    normed_text: str
    """norm(text), for mentions()."""
    normed_prose: str
    """norm(prose_text), for mentions()."""

    @classmethod
    def parse(cls, lines: list[str]) -> Body:
        count = len(lines)
        code = [False] * count
        infos: list[str] = []
        index = 0
        while index < count:
            start = lines[index].lstrip()
            fence = _FENCE.match(start)
            if fence is None:
                index += 1
                continue
            run = fence.group(1)
            infos.append(start[len(run):].strip())
            code[index] = True
            index += 1
            while index < count:  # an unclosed block runs to the end
                code[index] = True
                inner = lines[index].strip()
                index += 1
                if len(inner) >= len(run) and inner == run[0] * len(inner):
                    break
        heading = [False] * count
        headings: list[tuple[int, str]] = []
        for index, line in enumerate(lines):
            if code[index]:
                continue
            match = _HEADING.match(line)
            if match:
                heading[index] = True
                headings.append((len(match.group(1)), match.group(2).strip()))
        blocks: list[list[str]] = []
        block: list[str] = []
        prose_words = 0
        prose: list[str] = []
        for index, line in enumerate(lines):
            if not code[index]:
                prose.append(line)
                if not heading[index]:
                    prose_words += len(_WORD.findall(line))
            if code[index] or heading[index] or not line.strip():
                if block:
                    blocks.append(block)
                    block = []
                continue
            block.append(line)
        if block:
            blocks.append(block)
        text = "\n".join(lines)
        prose_text = _CODE_SPAN.sub("", "\n".join(prose))
        return cls(
            text=text,
            headings=tuple(headings),
            code_infos=tuple(infos),
            paragraphs=tuple(
                " ".join(line.strip() for line in b) for b in blocks if _is_paragraph(b[0])
            ),
            prose_words=prose_words,
            prose_text=prose_text,
            normed_text=norm(text),
            normed_prose=norm(prose_text),
        )


def show(value: object) -> str:
    """A value as inserted into a message or a subject.

    Strings stripped; booleans and null as YAML writes them; a list is its elements
    rendered and joined with ", "; anything else is ``str()`` of it, stripped.
    """
    if isinstance(value, list):
        return ", ".join(_show_one(element) for element in value)
    return _show_one(value)


def _show_one(value: object) -> str:
    if isinstance(value, str):
        return value.strip()
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    return _str_unlimited(value).strip()


def _str_unlimited(value: object) -> str:
    """``str(value)``, also for an integer past Python's int-to-str digit limit."""
    try:
        return str(value)
    except ValueError:
        limit = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
        try:
            return str(value)
        finally:
            sys.set_int_max_str_digits(limit)


def quoted(values: list[str]) -> str:
    """Values quoted '...' and joined with ", "."""
    return ", ".join(f"'{value}'" for value in values)


def times(a: float, b: float) -> float | Fraction:
    """``a * b``, computed exactly when a float product would overflow."""
    try:
        return a * b
    except OverflowError:
        return Fraction(a) * Fraction(b)
