"""Defects and the vocabulary they are written in (severities and owners), and the place
a defect's subject names in its file, quoted for a repair request."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from stay.validate._text import _CODE_SPAN, Body, code_blocks, heading, mentions, sentences, show, split_lines


class Severity(StrEnum):
    """FAIL blocks; WARN marks what is valid mid-run, or advisory house style."""

    FAIL = "FAIL"
    WARN = "WARN"


Owner = Literal[
    "manifest", "audience", "curriculum", "outcomes", "assessment", "example", "plan",
    "content", "exercises", "quiz", "capstone", "glossary",
]
"""The stage that must fix a defect. Repair routes on this, never on the path."""

OWNERS: tuple[Owner, ...] = (
    "manifest", "audience", "curriculum", "outcomes", "assessment", "example", "plan",
    "content", "exercises", "quiz", "capstone", "glossary",
)


@dataclass(frozen=True, order=True, slots=True)
class Defect:
    """One rule firing on one subject. Ordered as reports list them: by path, code,
    subject, then message; every field, the message included, is part of equality."""

    path: str
    """Relative to the course directory, '/'-separated; for a missing file, where it belongs."""
    code: str
    subject: str
    """What inside the file; '-' for the whole file."""
    message: str
    severity: Severity
    owner: Owner

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "severity": str(self.severity), "owner": self.owner,
                "path": self.path, "subject": self.subject, "message": self.message}

    def line(self) -> str:
        """The defect as the text report prints it."""
        return f"{self.severity} {self.code} {self.path} {self.subject}: {self.message}"

    def quote(self, current: object) -> str:
        """What this defect names in ``current`` (its file as it stands: a lesson's body, or
        the file's data) as written there; '' when it names no place in it."""
        return quote(current, self.subject, self.message)


QUOTE_CHARS = 300
"""The most characters a quote shows: a long sentence whole, a long paragraph's opening."""
_BODY_PLACE = re.compile(r"paragraph ([1-9][0-9]*)(?: sentence ([1-9][0-9]*))?|code block ([1-9][0-9]*)")
_OPTION = re.compile(r"(.+) option ([1-9][0-9]*)")
_PHRASE = re.compile(r"'(.+?)'(?=, '|$)")  # as ``quoted`` writes them, apostrophes inside included


def quote(current: object, subject: str, message: str) -> str:
    """What a defect's ``subject`` names in ``current`` (a lesson body, or a file's data),
    read with the contract's text definitions (the sentence of ``paragraph 3 sentence 2``,
    the item of an id, the sentences holding a banned phrase the ``message`` quotes), at
    most ``QUOTE_CHARS`` characters; '' when it names no place there (the whole file, a
    field of a lesson the message gives, something missing)."""
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


def _holder(node: object, subject: str, entry: bool = False) -> dict[Any, object] | None:
    """Depth first: the list entry (``entry``) with a field that holds ``subject``, or the
    field of another mapping that holds it or is named by it (an entry's keys are its fields)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if _holds(value, subject) or (not entry and show(key) == subject):
                return node if entry else {key: value}
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return next((found for child in children if (found := _holder(child, subject, isinstance(node, list)))), None)


def _lines(entry: object) -> str:
    """A mapping a field a line, each value on one line: a list as its elements (a
    mapping as its first field), a mapping as its keys."""
    def one(value: object) -> str:
        if isinstance(value, dict):
            return ", ".join(map(str, value))
        if isinstance(value, list):
            return ", ".join(one(next(iter(v.values()), "")) if isinstance(v, dict) else one(v) for v in value) or "[]"
        return " ".join(show(value).split())

    if not isinstance(entry, dict):
        return one(entry)
    return "\n".join(f"{key}: {one(value)}" for key, value in entry.items())
