"""The bounds on every file stay reads: a course file read no further than the limit, its YAML refused
from the event stream before any document is built (a kilobyte of aliases is gigabytes to any walk);
stored JSON (maybe damaged or planted) ``Damaged`` unless a bounded regular file of shallow UTF-8 JSON."""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any, Literal

import yaml

from stay.errors import ArtefactError, StayError

MAX_STORED_BYTES = 16 * 2**20
"""The largest stored file read back (16 MB): a cache entry is tens of KB, an eval report a few MB."""
MAX_STORED_DEPTH = 64
"""The deepest JSON read back: a cache entry's output schema nests a dozen levels, a report about eight."""


class Damaged(StayError):
    """A stored file that is not what stay writes; ``reason`` says what it is instead."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def read_stored(path: str | os.PathLike[str], limit: int = MAX_STORED_BYTES) -> bytes:
    """A regular file's bytes, reading no more than ``limit + 1``. Anything else is ``Damaged``, decided on
    the opened descriptor (no race with a swap) and without blocking (a FIFO with no writer)."""
    where = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):  # O_NOFOLLOW refuses a link with ELOOP
            raise Damaged(where, "a symbolic link, not a file stay wrote") from None
        if isinstance(exc, IsADirectoryError):
            raise Damaged(where, "a directory, not a file stay wrote") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Damaged(where, "a FIFO, a device or a socket, not a file stay wrote")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Damaged(where, f"larger than {limit // 2**20} MB, more than stay ever writes there")
    return data


def load_stored_json(path: str | os.PathLike[str], limit: int = MAX_STORED_BYTES,
                     depth: int = MAX_STORED_DEPTH) -> Any:
    """The JSON document in a stored file: ``Damaged`` unless regular, bounded, UTF-8, JSON and shallow."""
    where = os.fspath(path)
    data = read_stored(path, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Damaged(where, "not UTF-8 text") from None
    # Nesting is counted before parsing: the parser recurses once per level.
    if json_nesting(text) > depth:
        raise Damaged(where, f"JSON nested deeper than {depth} levels, deeper than anything stay writes")
    try:
        return json.loads(text)
    except RecursionError:  # unreachable after the count, kept so no parse can overflow
        raise Damaged(where, "JSON nested too deeply") from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise Damaged(where, "not valid JSON" + (f" at line {line}" if line else "")) from None


def json_nesting(text: str) -> int:
    """The deepest bracket nesting of a JSON text outside strings: the guard before every ``json.loads`` of
    untrusted text, as the parser recurses once per level."""
    level = deepest = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        level += 1 if bracket in "[{" else -1
        deepest = max(deepest, level)
    return deepest


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: linear on a long string
_BRACKET = re.compile(r"[\[\]{}]")


MAX_FILE_BYTES = MAX_STORED_BYTES
"""The largest course file stay reads: the longest lesson is tens of KB, and 16 MB parsed is under a gigabyte."""
MAX_ASSET_BYTES = 2**20
"""The largest data file a course may carry under ``assets/`` (1 MB; stay's own limit, ast003):
a sample a learner opens is tens of KB, and at a megabyte no lesson can talk them through it."""
DATA_NAME = re.compile(r"[a-z0-9][a-z0-9-]*\.(csv|txt|json)")
"""A data file's name under ``assets/``: lowercase, and a type the validator can read (ast004)."""
MAX_DEPTH = 20
"""The deepest YAML nesting read: artefacts nest 5 levels; libyaml's C composer overflows far deeper."""

Shape = Literal["aliases", "deep"]
"""Why a YAML text is refused: it uses anchors or aliases, or nests too deeply."""

_EVENTS: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when built: linear, no recursion in C


class TooLarge(ArtefactError):
    """A file larger than the limit; each reader says it in its own terms."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(f"{path}: larger than {limit // 2**20} MB, the limit on a file stay reads; "
                         "shorten it, or delete it and regenerate it")
        self.path = path
        self.limit = limit


def read_bounded(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """A file's bytes, reading no more than ``limit + 1``: ``TooLarge`` past it, whatever the file is."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(os.fspath(path), limit)
    return data


def yaml_shape(text: str, max_depth: int = MAX_DEPTH, loader: Any = _EVENTS) -> Shape | None:
    """Why ``text`` may not be composed ("aliases" or "deep"), or None, from the event stream alone; a text
    libyaml rejects is read again by the pure parser, whose verdict counts."""
    try:
        return _shape(text, max_depth, loader)
    except yaml.YAMLError:
        if loader is yaml.SafeLoader:
            raise
        return _shape(text, max_depth, yaml.SafeLoader)


def nests_deeper(text: str, max_depth: int) -> bool:
    """Whether ``text`` nests deeper than ``max_depth`` (or libyaml cannot read it), from its event stream."""
    try:
        return _shape(text, max_depth, _EVENTS, aliases=False) is not None
    except yaml.YAMLError:
        return True


def _shape(text: str, max_depth: int, loader: Any, *, aliases: bool = True) -> Shape | None:
    depth = 0
    for event in yaml.parse(text, Loader=loader):
        if aliases and (isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None)):
            return "aliases"
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                return "deep"
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None


__all__ = ["DATA_NAME", "MAX_ASSET_BYTES", "MAX_DEPTH", "MAX_FILE_BYTES", "Shape", "TooLarge", "nests_deeper",
           "read_bounded", "yaml_shape"]
