"""The contract's text definitions: norm, words, mentions, and a lesson body's parts.

Every function here is a reading of a definition in validator-rules.md ("Text
definitions"); the rules never re-derive these on their own. Where the contract
states a definition as a regular expression and a plain-string reading is faster or
linear where the expression is not (``norm``, ``mentions``, headings), the
expression is kept here as ``CONTRACT_*`` and a differential test over generated
inputs (``tests/validate/test_text.py``) holds the two equal.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fractions import Fraction
    from typing import Any

_WORD = re.compile(r"[A-Za-z0-9]+(?:['\u2019-][A-Za-z0-9]+)*")
CONTRACT_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_STOP = re.compile(r"[.!?](?=\s)")
_WORD_START = re.compile(r"[A-Za-z0-9]")  # a text holds a word exactly when it holds one of these
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_NUMBERED_ITEM = re.compile(r"[0-9]+(?:\. |\) )")
_NOT_PARAGRAPH = ("#", "|", ">", "<", "![", "- ", "* ", "+ ")


CONTRACT_SPACE_RUN = re.compile(r"\s+")
CONTRACT_FENCE = re.compile(r"(`{3,}|~{3,})")
CONTRACT_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
"""The contract's heading expression: quadratic on a long run of blanks (a 100 KB line
takes minutes), so ``heading`` reads lines without it."""


def contract_mention_pattern(term: str) -> re.Pattern[str]:
    """The contract's ``mentions`` expression for ``term``."""
    return re.compile(r"(?<![a-z0-9])" + re.escape(norm(term)) + r"(?![a-z0-9])")


def norm(text: str) -> str:
    """Casefold, fold whitespace runs to one space, strip.

    ``str.split()`` splits on exactly the characters ``\\s`` matches in a str
    pattern (``str.isspace``), so this is ``re.sub(r"\\s+", " ", ...).strip()``.
    """
    return " ".join(text.casefold().split())


def words(text: str) -> list[str]:
    """The words of ``text``; a word count is their number."""
    return _WORD.findall(text)


# Word characters to "a", joiners to "'", every other byte (and "?", which stands for
# each non-ASCII character after encoding) to a space.
_WORD_CLASSES = bytes(
    ord("a") if chr(byte).isascii() and chr(byte).isalnum() else ord("'") if chr(byte) in "'-" else ord(" ")
    for byte in range(256)
)


def _classes(text: str) -> bytes:
    """``text`` as one byte per character: "a" for an ASCII letter or digit, "'" for a
    joiner (``'``, ``’``, ``-``), a space for anything else."""
    return text.replace("\u2019", "'").encode("ascii", "replace").translate(_WORD_CLASSES)


def _count(classes: bytes, start: int = 0, end: int | None = None) -> int:
    """The words in ``classes[start:end]``: runs of "a", less the joiners that join two.

    A word is a maximal chain of letter-or-digit runs joined by single joiners, so
    the count is the runs (an "a" at the start or after a non-"a") less the joiners
    with an "a" on both sides: those after an "a", but for the ones followed by a space,
    another joiner or the end. Each term is a C count over the bytes; nothing is copied.
    """
    end = len(classes) if end is None else end
    runs = classes.count(b" a", start, end) + classes.count(b"'a", start, end) + classes.startswith(b"a", start, end)
    joined = (classes.count(b"a'", start, end) - classes.count(b"a' ", start, end)
              - classes.count(b"a''", start, end) - classes.endswith(b"a'", start, end))
    return runs - joined


def count_words(text: str) -> int:
    """``len(words(text))``, without building the list (see ``_count``)."""
    return _count(_classes(text))


def first_word(text: str) -> str:
    """The first word of an outcome's text, casefolded; '' when it has none."""
    match = _WORD.search(text)
    return match.group(0).casefold() if match else ""


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


@lru_cache(maxsize=4096)
def _needle(term: str) -> str:
    return norm(term)


def mentions_normed(normed_text: str, term: str) -> bool:
    """``mentions`` for a text already passed through ``norm`` (lesson bodies are).

    The contract's ``(?<![a-z0-9])norm(t)(?![a-z0-9])`` searched as a ``str.find``
    loop: every occurrence, overlapping ones included, checked for an ASCII letter or
    digit on either side.
    """
    needle = _needle(term)
    size, end = len(needle), len(normed_text)
    at = normed_text.find(needle)
    while at != -1:
        after = at + size
        if (at == 0 or normed_text[at - 1] not in _ALNUM) and (
                after == end or normed_text[after] not in _ALNUM):
            return True
        at = normed_text.find(needle, at + 1)
    return False


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


def heading(line: str) -> tuple[int, str] | None:
    """``(level, text)`` when ``line`` is a heading by ``CONTRACT_HEADING``, else None.

    Read without backtracking, so linear in the line's length. The expression takes
    a run of 1-6 ``#`` and then every blank after it (greedy, and never given back:
    the lazy group can always reach the end); the lazy group then ends where the
    shortest remainder matching ``(?:[ \\t]+#+)?[ \\t]*$`` starts: before trailing
    blanks, and before a closing run of ``#`` that has a blank in front of it.
    """
    if "\n" in line:  # `.` stops at a newline and `$` matches only before a final one
        if line.index("\n") != len(line) - 1:
            return None
        line = line[:-1]
    level = len(line) - len(line.lstrip("#"))
    if not 1 <= level <= 6 or level == len(line) or line[level] not in " \t":
        return None
    body = line[level:].lstrip(" \t").rstrip(" \t")
    opening = body.rstrip("#")
    if len(opening) < len(body) and opening[-1:] in (" ", "\t"):
        body = opening.rstrip(" \t")
    return level, body.strip()


def fence(start: str) -> str | None:
    """The run of three or more backticks or tildes ``start`` opens with (``CONTRACT_FENCE``)."""
    mark = start[:1]
    if mark in ("`", "~") and start.startswith(mark * 3):
        return start[:len(start) - len(start.lstrip(mark))]
    return None


def code_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(first, past the last) line index of each code block: its fence lines and the
    lines inside. An unclosed block runs to the end."""
    blocks: list[tuple[int, int]] = []
    index, count = 0, len(lines)
    while index < count:
        run = fence(lines[index].lstrip())
        start, index = index, index + 1
        if run is None:
            continue
        while index < count:
            inner = lines[index].strip()
            index += 1
            if len(inner) >= len(run) and inner == run[0] * len(inner):
                break
        blocks.append((start, index))
    return blocks


def sentence_spans(paragraph: str) -> list[tuple[int, int]]:
    """(start, end) of each piece ``CONTRACT_SENTENCE_BREAK.split`` gives, words or not.

    A break is a whitespace run right after ``.``, ``!`` or ``?``; looking for those
    characters first is several times faster than trying the lookbehind everywhere.
    """
    spans: list[tuple[int, int]] = []
    start, size = 0, len(paragraph)
    for stop in _STOP.finditer(paragraph):
        at = after = stop.end()
        while after < size and paragraph[after].isspace():
            after += 1
        spans.append((start, at))
        start = after
    spans.append((start, size))
    return spans


def sentences(paragraph: str) -> list[str]:
    """The sentences of a paragraph: pieces between sentence breaks that hold words."""
    return [piece for piece in CONTRACT_SENTENCE_BREAK.split(paragraph) if _WORD.search(piece)]


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
    paragraph_words: tuple[int, ...]
    """Per paragraph, its word count. It is also the sum of its sentences' counts (a
    sentence break is whitespace, which no word holds), so no sentence of a paragraph
    of n words has more than n."""
    prose_words: int
    prose_text: str
    """Prose lines (headings included) joined with newlines, inline code removed."""
    normed_text: str
    """norm(text), for mentions()."""
    normed_prose: str
    """norm(prose_text), for mentions()."""

    @classmethod
    def parse(cls, lines: list[str]) -> Body:
        code = [False] * len(lines)
        infos: list[str] = []
        for start, end in code_blocks(lines):
            opening = lines[start].lstrip()
            infos.append(opening[len(fence(opening) or ""):].strip())
            code[start:end] = [True] * (end - start)
        headings: list[tuple[int, str]] = []
        blocks: list[list[str]] = []
        block: list[str] = []
        prose: list[str] = []
        counted: list[str] = []
        for index, line in enumerate(lines):
            if code[index]:
                if block:
                    blocks.append(block)
                    block = []
                continue
            prose.append(line)
            found = heading(line) if line.startswith("#") else None
            if found is not None:
                headings.append(found)
            else:
                counted.append(line)
            if found is not None or not line.strip():
                if block:
                    blocks.append(block)
                    block = []
                continue
            block.append(line)
        if block:
            blocks.append(block)
        paragraphs = tuple(" ".join(line.strip() for line in b) for b in blocks if _is_paragraph(b[0]))
        text = "\n".join(lines)
        prose_text = "\n".join(prose)
        if "`" in prose_text:
            prose_text = _CODE_SPAN.sub("", prose_text)
        return cls(
            text=text,
            headings=tuple(headings),
            code_infos=tuple(infos),
            paragraphs=paragraphs,
            paragraph_words=tuple(count_words(paragraph) for paragraph in paragraphs),
            prose_words=count_words("\n".join(counted)),  # no word spans a line break
            prose_text=prose_text,
            normed_text=norm(text),
            normed_prose=norm(prose_text),
        )


    def sentence_count(self, index: int) -> int:
        """How many sentences paragraph ``index`` (from 0) has: ``len(sentences(p))``."""
        paragraph = self.paragraphs[index]
        return sum(1 for start, end in sentence_spans(paragraph) if _WORD_START.search(paragraph, start, end))

    def sentence_words(self, index: int) -> list[int]:
        """The word count of each sentence of paragraph ``index`` (from 0), in order."""
        paragraph = self.paragraphs[index]
        classes = _classes(paragraph)  # one byte per character, so the spans index both
        counts = (_count(classes, start, end) for start, end in sentence_spans(paragraph))
        return [n for n in counts if n]


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
        from fractions import Fraction  # only on overflow: it costs start-up time

        return Fraction(a) * Fraction(b)


QUOTE_CHARS = 300
"""The most characters a quote shows: a long sentence whole, a long paragraph's opening."""
_BODY_PLACE = re.compile(r"paragraph ([1-9][0-9]*)(?: sentence ([1-9][0-9]*))?|code block ([1-9][0-9]*)")
_OPTION = re.compile(r"(.+) option ([1-9][0-9]*)")
_PHRASE = re.compile(r"'(.+?)'(?=, '|$)")  # as ``quoted`` writes them, apostrophes inside included


def quote(current: object, subject: str, message: str) -> str:
    """What a defect's ``subject`` names in ``current`` (a lesson body, or a file's data),
    read the contract's way (the sentence of ``paragraph 3 sentence 2``, the item of an id,
    the prose lines holding a banned phrase the ``message`` quotes), at most
    ``QUOTE_CHARS`` characters; '' when it names no place there (the whole file, a field
    the message already gives, something missing)."""
    found = _body_place(current, subject, message) if isinstance(current, str) else _data_place(current, subject)
    return found if len(found) <= QUOTE_CHARS else found[:QUOTE_CHARS - 1].rstrip() + "…"


def _body_place(body: str, subject: str, message: str) -> str:
    lines = split_lines(body)
    if subject == "prose":  # les009: the sentences of the prose that mention a phrase, a line each
        code = {i for start, end in code_blocks(lines) for i in range(start, end)}
        phrases = _PHRASE.findall(message.partition(": ")[2])
        blocks: list[list[str]] = [[]]
        for i, line in enumerate(lines):  # blocks of prose, split as paragraphs are; a heading alone
            if i in code or not line.strip():
                blocks.append([])
            elif heading(line) is not None:
                blocks += [[line.strip()], []]
            else:
                blocks[-1].append(line.strip())
        return "\n".join(piece for block in blocks for piece in sentences(" ".join(block))
                         if any(mentions(_CODE_SPAN.sub("", piece), p) for p in phrases))
    place = _BODY_PLACE.fullmatch(subject)
    if place is None:
        return ""
    paragraph, sentence, block = (int(k) if k else 0 for k in place.groups())
    if block:
        spans = code_blocks(lines)
        return "\n".join(lines[slice(*spans[block - 1])]) if block <= len(spans) else ""
    parsed = Body.parse(lines)
    if paragraph > len(parsed.paragraphs):
        return ""
    found = [parsed.paragraphs[paragraph - 1]] if not sentence else sentences(parsed.paragraphs[paragraph - 1])
    return found[max(sentence, 1) - 1] if max(sentence, 1) <= len(found) else ""


def _data_place(data: object, subject: str) -> str:
    """The place in a file's data ``subject`` names, shown a field a line: an option by
    its place among its item's, else (depth first) the list entry with a field that holds
    it, or the field of a mapping that is named by it or holds it."""
    option = _OPTION.fullmatch(subject)
    if option is not None:
        item = _holder(data, option[1])
        options = item.get("options") if isinstance(item, dict) else None
        k = int(option[2])
        return _lines(options[k - 1]) if isinstance(options, list) and k <= len(options) else ""
    found = _holder(data, subject)
    return "" if found is None else _lines(found)


def _holds(value: object, subject: str) -> bool:
    """Whether ``value`` is ``subject`` or a list with ``subject`` among its scalars."""
    values = value if isinstance(value, list) else [value]
    return any(not isinstance(v, (dict, list)) and show(v) == subject for v in values)


def _holder(data: object, subject: str) -> dict[Any, object] | None:
    stack: list[tuple[object, bool]] = [(data, False)]  # (node, whether it is a list's entry)
    while stack:
        node, entry = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        if isinstance(node, dict):
            for key, value in node.items():
                if _holds(value, subject):
                    return node if entry else {key: value}
                if not entry and show(key) == subject:  # an entry's keys are its fields, not places
                    return {key: value}
        stack.extend(reversed([(child, isinstance(node, list)) for child in children
                               if isinstance(child, (dict, list))]))
    return None


def _lines(entry: object) -> str:
    """A mapping a field a line, each value on one line: a list as its elements (a
    mapping as its first field), a mapping as its keys."""
    def one(value: object) -> str:
        if isinstance(value, dict):
            return ", ".join(map(str, value))
        if isinstance(value, list):
            return ", ".join(one(next(iter(v.values()), "")) if isinstance(v, dict) else one(v) for v in value)
        return " ".join(show(value).split())

    if not isinstance(entry, dict):
        return one(entry)
    return "\n".join(f"{key}: {one(value)}" for key, value in entry.items())
