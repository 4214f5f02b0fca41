"""A direct YAML emitter for the artefact format, byte-identical to PyYAML's or silent.

``dump_yaml`` used to be PyYAML's pure-Python emitter (libyaml's cannot indent a
sequence under its key, as the format does), and it was a fifth of a fresh build: it
represents, serialises and emits every node through three layers of objects, and walks
every character of every string in Python to pick its style. ``emit`` writes the same
text straight from plain data: the style of each string is worked out with a few
compiled regular expressions that restate ``yaml.emitter.Emitter.analyze_scalar`` and
``choose_scalar_style``, and whether a plain string would read back as a string is asked
of PyYAML's own resolver table.

It covers what artefacts hold: dicts with string keys, lists, strings, ints, booleans
and None, with every string plain, single-quoted or a literal block. Anything else (a
string that needs double quotes, a key that needs ``?``, a float, a shared list that
PyYAML would anchor, an empty or scalar document) returns None, and the caller uses
PyYAML. ``tests/test_emit.py`` holds the two equal: the scalar analysis
exhaustively over short strings of the characters that matter and over generated text,
and the whole text over generated documents and every file of the sample course.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import yaml

_BREAKS = "\n\x85\u2028\u2029"
_WHITESPACE = "\0 \t\r" + _BREAKS
_FOLDED = re.compile("[\r\x85\u2028\u2029]")  # the format's representer double-quotes these

# Not printable for an emitter that allows unicode: only double quotes can carry it. The
# full class takes milliseconds to compile, so ASCII text (nearly all of it) never needs it.
_SPECIAL_ASCII = re.compile("[^\n -~]")
_SPACE_BREAK = re.compile(f" [{_BREAKS}]")
_LINE_BREAK = re.compile(f"[{_BREAKS}]")
_FOLLOWED = f"(?=[{_WHITESPACE}]|\\Z)"
# Indicators that forbid a plain scalar in block context: at the start, and inside.
_LEADING_INDICATOR = re.compile(f"---|\\.\\.\\.|[#,\\[\\]{{}}&*!|>'\"%@`]|[?:\\-]{_FOLLOWED}")
_INNER_COLON = re.compile(f":{_FOLLOWED}")  # searched from the second character
_HASH_AFTER_SPACE = re.compile(f"[{_WHITESPACE}]#")

_RESOLVERS: dict[Any, list[tuple[str, re.Pattern[str]]]] = yaml.SafeDumper.yaml_implicit_resolvers
_STR = "tag:yaml.org,2002:str"


class _Unsupported(Exception):
    """A value this emitter does not write; PyYAML does."""


@cache
def _special_unicode() -> re.Pattern[str]:
    return re.compile("[^\n -~\x85\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010fffe]")


def _special(text: str) -> bool:
    pattern = _SPECIAL_ASCII if text.isascii() else _special_unicode()
    return pattern.search(text) is not None


def emit(data: Any) -> str | None:
    """``data`` as the format's YAML text, exactly as ``stay.artefacts.dump_yaml``'s
    PyYAML settings write it, or None when it holds something only PyYAML writes."""
    if type(data) not in (dict, list) or not data:
        return None
    out: list[str] = []
    try:
        if type(data) is dict:
            _mapping(data, 0, out, set(), inline=False)
        else:
            _sequence(data, 0, out, set(), inline=False)
    except _Unsupported:
        return None
    text = "".join(out)
    if _open_ended(out):
        text += "...\n"  # PyYAML ends the stream this way after a final keep (|+) block
    return text


def _open_ended(out: list[str]) -> bool:
    return out[-1].startswith((" |+\n", " |2+\n"))


def _mapping(data: dict[Any, Any], indent: int, out: list[str], seen: set[int], inline: bool) -> None:
    _enter(data, seen)
    pad = " " * indent
    for key, value in data.items():
        if type(key) is not str:
            raise _Unsupported
        out.append(("" if inline else pad) + _key(key) + ":")
        inline = False
        _child(value, indent, out, seen, same_line=False)


def _sequence(data: list[Any], indent: int, out: list[str], seen: set[int], inline: bool) -> None:
    _enter(data, seen)
    pad = " " * indent
    for item in data:
        out.append(("" if inline else pad) + "-")
        inline = False
        _child(item, indent, out, seen, same_line=True)


def _child(value: Any, indent: int, out: list[str], seen: set[int], same_line: bool) -> None:
    """What follows ``key:`` or ``-``: a scalar, or a nested block two columns in, which
    starts on the next line after a key and on the same line after a dash."""
    kind = type(value)
    if kind is dict and value:
        out.append(" " if same_line else "\n")
        _mapping(value, indent + 2, out, seen, inline=same_line)
    elif kind is list and value:
        out.append(" " if same_line else "\n")
        _sequence(value, indent + 2, out, seen, inline=same_line)
    else:
        out.append(_scalar(value, indent))


def _enter(node: dict[Any, Any] | list[Any], seen: set[int]) -> None:
    """PyYAML anchors a list or dict that appears twice; this emitter does not."""
    if id(node) in seen:
        raise _Unsupported
    seen.add(id(node))


def _scalar(value: Any, indent: int) -> str:
    """A value after ``key:`` or ``-``, with its leading space and its line break(s)."""
    kind = type(value)
    if kind is str:
        return _string(value, indent)
    if kind is bool:
        return " true\n" if value else " false\n"
    if value is None:
        return " null\n"
    if kind is int:
        return f" {value}\n"
    if kind is dict:
        return " {}\n"
    if kind is list:
        return " []\n"
    raise _Unsupported  # floats, tuples, dates, subclasses: PyYAML's representers decide


def _string(value: str, indent: int) -> str:
    if _FOLDED.search(value):
        raise _Unsupported  # double-quoted
    if "\n" in value:
        if value[-1] == " " or _SPACE_BREAK.search(value) or _special(value):
            raise _Unsupported  # no block allowed: double-quoted
        return _literal(value, indent + 2)
    if _plain(value):
        return " " + value + "\n"
    if _special(value):
        raise _Unsupported  # neither plain nor single-quoted: double-quoted
    return " '" + value.replace("'", "''") + "'\n"


def _key(key: str) -> str:
    # PyYAML's simple-key limit is 128 characters counting the tag it prepared ("!!str").
    if not key or len(key) + len("!!str") >= 128 or _LINE_BREAK.search(key) or _FOLDED.search(key):
        raise _Unsupported  # not a simple key (PyYAML writes "? "), or double-quoted
    if _plain(key):
        return key
    if _special(key):
        raise _Unsupported
    return "'" + key.replace("'", "''") + "'"


def _plain(text: str) -> bool:
    """A non-empty one-line string PyYAML writes plain in block context: it reads back
    as a string, and no indicator, edge space or special character forbids it."""
    if not _reads_as_str(text):
        return False
    return not (text[0] == " " or text[-1] == " " or _LEADING_INDICATOR.match(text)
                or _INNER_COLON.search(text, 1) or _HASH_AFTER_SPACE.search(text) or _special(text))


def _reads_as_str(text: str) -> bool:
    for tag, pattern in _RESOLVERS.get(text[0] if text else "", []) + _RESOLVERS.get(None, []):
        if pattern.match(text):
            return tag == _STR
    return True


def _literal(text: str, indent: int) -> str:
    """A literal block (``|``) with PyYAML's indentation and chomping hints."""
    hints = "2" if text[0] in " " + _BREAKS else ""
    if text[-1] != "\n":
        hints += "-"
        lines = text.split("\n")
    else:
        if len(text) == 1 or text[-2] == "\n":
            hints += "+"
        lines = text[:-1].split("\n")
    pad = " " * indent
    return f" |{hints}\n" + "".join(f"{pad}{line}\n" if line else "\n" for line in lines)
