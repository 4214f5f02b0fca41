"""The contract's text definitions (validator-rules.md, "Text definitions") and YAML parsing. Where a
plain-string reading replaces the contract's expression, ``tests/validate/test_text.py`` holds it equal
to the frozen reference's."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from stay._bounds import nests_deeper

if TYPE_CHECKING:
    from fractions import Fraction

_WORD = re.compile(r"[A-Za-z0-9]+(?:['\u2019-][A-Za-z0-9]+)*")
CONTRACT_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_STOP = re.compile(r"[.!?](?=\s)")
_WORD_START = re.compile(r"[A-Za-z0-9]")  # a text holds a word exactly when it holds one of these
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_NUMBERED_ITEM = re.compile(r"[0-9]+(?:\. |\) )")
_NOT_PARAGRAPH = ("#", "|", ">", "<", "![", "- ", "* ", "+ ")


def norm(text: str) -> str:
    """Casefold, fold whitespace runs to one space, strip (``str.split()`` splits where ``\\s`` matches)."""
    return " ".join(text.casefold().split())


def words(text: str) -> list[str]:
    return _WORD.findall(text)


# Word characters to "a", joiners to "'", every other byte (and "?", which stands for
# each non-ASCII character after encoding) to a space.
_WORD_CLASSES = bytes(
    ord("a") if chr(byte).isascii() and chr(byte).isalnum() else ord("'") if chr(byte) in "'-" else ord(" ")
    for byte in range(256)
)


def _classes(text: str) -> bytes:
    """``text`` as one byte per character: "a" a letter or digit, "'" a joiner, else a space."""
    return text.replace("\u2019", "'").encode("ascii", "replace").translate(_WORD_CLASSES)


def _count(classes: bytes, start: int = 0, end: int | None = None) -> int:
    """The words in ``classes[start:end]``: runs of "a" less the joiners with an "a" on both sides,
    each term a C count over the bytes (nothing is copied)."""
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
    """``mentions`` for a text already through ``norm``: the contract's expression as a ``str.find`` loop."""
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
    return mentions_normed(norm(text), term)


def split_lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def id_matches(value: str, lesson_id: str, letter: str) -> bool:
    """Whether ``value`` is ``<lesson_id>-<letter><n>`` with n counted from 1."""
    pattern = re.escape(lesson_id) + "-" + letter + "[1-9][0-9]*"
    return re.fullmatch(pattern, value) is not None


def heading(line: str) -> tuple[int, str] | None:
    """``(level, text)`` when ``line`` is a heading by the contract's expression (quadratic on a run of blanks),
    else None; read without backtracking: the text ends before trailing blanks and a closing ``#`` run
    with a blank before it."""
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
    """The run of three or more backticks or tildes ``start`` opens with (the contract's fence)."""
    mark = start[:1]
    if mark in ("`", "~") and start.startswith(mark * 3):
        return start[:len(start) - len(start.lstrip(mark))]
    return None


def code_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(first, past the last) line index of each code block, fences included; an unclosed one runs to the end."""
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
    """(start, end) of each piece ``CONTRACT_SENTENCE_BREAK.split`` gives, found from the stops (faster)."""
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
    """Also the sum of its sentences' counts: no sentence of a paragraph of n words has more than n."""
    prose_words: int
    prose_text: str
    """Prose lines (headings included) joined with newlines, inline code removed."""
    normed_text: str
    normed_prose: str

    @classmethod
    def parse(cls, lines: list[str]) -> Body:
        code = [False] * len(lines)
        infos: list[str] = []
        for start, end in code_blocks(lines):
            opening = lines[start].lstrip()
            infos.append(opening[len(fence(opening) or ""):].strip())
            code[start:end] = [True] * (end - start)
        headings: list[tuple[int, str]] = []
        blocks: list[list[str]] = [[]]
        prose: list[str] = []
        counted: list[str] = []
        for index, line in enumerate(lines):
            if not code[index]:
                prose.append(line)
                found = heading(line) if line.startswith("#") else None
                if found is not None:
                    headings.append(found)
                else:
                    counted.append(line)
                if found is None and line.strip():
                    blocks[-1].append(line)
                    continue
            if blocks[-1]:  # code, a heading or a blank line ends a block
                blocks.append([])
        paragraphs = tuple(" ".join(line.strip() for line in b) for b in blocks if b and _is_paragraph(b[0]))
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
        paragraph = self.paragraphs[index]
        classes = _classes(paragraph)  # one byte per character, so the spans index both
        counts = (_count(classes, start, end) for start, end in sentence_spans(paragraph))
        return [n for n in counts if n]


def show(value: object) -> str:
    """A value as a message or a subject shows it: booleans and null as YAML writes them, a list joined."""
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
    return ", ".join(f"'{value}'" for value in values)


def times(a: float, b: float) -> float | Fraction:
    """``a * b``, computed exactly when a float product would overflow."""
    try:
        return a * b
    except OverflowError:
        from fractions import Fraction  # only on overflow: it costs start-up time

        return Fraction(a) * Fraction(b)


# -- quotes: whether a model's verbatim quote stands in a text (the judges, the review) --

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKERS = re.compile(r"\*+|`+|~~")
_UNDERSCORES = re.compile(r"(?<![^\W_])_+|_+(?![^\W_])")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"'})


def normal_text(text: str) -> str:
    """Text as a quote check compares it: no Markdown markers, straight quotes, single spaces."""
    text = _LINK.sub(r"\1", text).translate(_QUOTES)
    text = _UNDERSCORES.sub("", _MARKERS.sub("", text))
    return " ".join(text.split())


def quoted_in(quote: str, body: str) -> bool:
    needle = normal_text(quote)
    return bool(needle) and needle in normal_text(body)


# YAML: the contract's "not YAML" is "yaml.safe_load raises" (the pure parser, ten times slower), so
# libyaml parses, and whatever it rejects, nests deeper than _DEEP, may hold an alias, has a node _build
# leaves, or holds a construct where the two disagree (_pure_only; tests/validate/test_yaml_parity.py)
# goes to the pure parser, whose answer stands.
_FastLoader: Any = None
if hasattr(yaml, "CSafeLoader"):  # else PyYAML is built without libyaml: the pure parser does it all

    class _FastLoader(yaml.CSafeLoader):  # type: ignore[no-redef]
        """libyaml's parser resolving by SafeLoader's tables as they stand (a program may add to them later)."""

        yaml_implicit_resolvers = property(lambda self: yaml.SafeLoader.yaml_implicit_resolvers)
        yaml_path_resolvers = property(lambda self: yaml.SafeLoader.yaml_path_resolvers)


# Deeper than this, the pure parser decides (it fails somewhere past 300 levels).
_DEEP = 64
# More nesting indicators than this could overflow libyaml's C stack (seen at ~25,000).
_MAX_INDICATORS = 10_000
_INDICATORS = "-:?[{"
# Characters on which the two parsers can disagree: see the module docstring.
_PURE_ONLY_CHARS = ("\t", "\ufeff", "\x85", "\u2028", "\u2029")
# What may stand before a token (a flow collection, a tag) and after a tag.
_BEFORE_TOKEN = " ,[]{}:?-"
_AFTER_TAG = ",[]{}"


def _pure_only(text: str) -> bool:
    """Whether libyaml may read ``text`` differently; each test over-approximates (time, never a verdict)."""
    if any(c in text for c in _PURE_ONLY_CHARS):
        return True
    if "#" in text and _HEADER_COMMENT.search(text):
        return True
    if "!" in text and _empty_non_specific_tag(text):
        return True
    if ("?" in text or "!" in text) and _opens_flow_collection(text):
        return True
    # many indicators may mean deep nesting: libyaml's (linear) event stream says whether it is
    return sum(text.count(c) for c in _INDICATORS) > _MAX_INDICATORS and nests_deeper(text, _DEEP)


_HEADER_COMMENT = re.compile(r"[|>][-+0-9]*#")
"""A ``#`` after ``|`` or ``>`` and only chomping or indentation indicators (``|#``, ``>-2#``): libyaml
reads a comment, the pure scanner wants a space first."""


def _token_starts(text: str, char: str) -> Iterator[int]:
    """Each index of ``char`` where a token can start: the first character, or after a blank or ``_BEFORE_TOKEN``."""
    at = text.find(char)
    while at != -1:
        if at == 0 or text[at - 1].isspace() or text[at - 1] in _BEFORE_TOKEN:
            yield at
        at = text.find(char, at + 1)


def _empty_non_specific_tag(text: str) -> bool:
    """``!`` or ``!<!>`` alone as a token: on an empty node libyaml resolves a string, the pure composer null."""
    ends = (at + 4 if text.startswith("<!>", at + 1) else at + 1 for at in _token_starts(text, "!"))
    return any(after == len(text) or text[after].isspace() or text[after] in _AFTER_TAG for after in ends)


def _opens_flow_collection(text: str) -> bool:
    """Some ``[`` or ``{`` may open a non-empty flow collection, where the pure scanner ends a plain scalar
    at ``?`` and takes ``,`` ``[`` ``]`` into a tag; libyaml does neither."""
    return any(text[at + 1:at + 2] != closer for opener, closer in (("[", "]"), ("{", "}"))
               for at in _token_starts(text, opener))


def pure_load(text: str) -> Any:
    return yaml.load(text, Loader=yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """Parse ``text`` exactly as ``yaml.safe_load`` would, raising where it raises."""
    if _FastLoader is None or _pure_only(text) or may_alias(text):
        return pure_load(text)
    try:
        loader = _FastLoader(text)
        try:
            node = loader.get_single_node()
            return None if node is None else _build(loader, node, 1)
        finally:
            loader.dispose()
    except Exception:  # libyaml's error, or a node _build leaves
        return pure_load(text)


def may_alias(text: str) -> bool:
    """Whether some ``*`` stands where an alias token can start (not inside a scalar: ``a*b``)."""
    return next(_token_starts(text, "*"), None) is not None


_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
# Scalar tags whose SafeConstructor methods are plain functions: built in one call.
# (The collection constructors are generators that finish only in construct_document,
# where a scalar tagged !!map or !!set raises.)
_PLAIN_SCALARS = frozenset(f"tag:yaml.org,2002:{name}" for name in
                           ("null", "bool", "int", "float", "binary", "timestamp"))


class _Unusual(Exception):
    """A node ``_build`` leaves to the pure parser (a merge key, a set, a collection key, a tag), or
    nesting deeper than ``_DEEP``."""


def _build(loader: Any, node: Node, depth: int) -> Any:
    """``construct_document`` of an alias-free tree, without its per-node bookkeeping."""
    if depth > _DEEP:
        raise _Unusual
    kind = type(node)
    if kind is ScalarNode:
        if node.tag == _STR:
            return node.value
        if node.tag in _PLAIN_SCALARS:
            return loader.construct_object(node)
        raise _Unusual
    if kind is MappingNode and node.tag == _MAP:
        mapping: dict[Any, Any] = {}
        for key, value in node.value:
            if type(key) is not ScalarNode or key.tag == _MERGE:
                raise _Unusual
            mapping[_build(loader, key, depth + 1)] = _build(loader, value, depth + 1)
        return mapping
    if kind is SequenceNode and node.tag == _SEQ:
        return [_build(loader, child, depth + 1) for child in node.value]
    raise _Unusual


def expands_past(document: Any, bound: int) -> bool:
    """Whether ``document`` written out as a tree (a shared part once per reference) holds more than
    ``bound`` values; each distinct part is sized once, so an alias bomb costs its parsed size."""
    sizes: dict[int, int] = {}

    def size(value: Any) -> int:
        if not isinstance(value, dict | list):
            return 1
        known = sizes.get(id(value))
        if known is not None:
            return known
        sizes[id(value)] = 1  # while it is being sized: a reference back to it counts once
        children = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        total = 1
        for child in children:
            total += size(child)
            if total > bound:
                break
        sizes[id(value)] = total
        return total

    return size(document) > bound
