"""Reading back JSON that stay stored itself (cache entries, eval reports), which may have
been damaged or planted since: anything but a bounded regular file of shallow UTF-8 JSON (a
FIFO, a link to ``/dev/zero``, gigabytes, deep nesting) is ``Damaged``, one reason in words,
never a hang or a traceback. Imports nothing of stay's but ``errors``.
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

from stay.errors import StayError

MAX_STORED_BYTES = 16 * 2**20
"""The largest stored file read back (16 MB): a cache entry is tens of KB, an eval report a few MB."""
MAX_STORED_DEPTH = 64
"""The deepest JSON read back: an entry's deepest part is a request's output schema, a
dozen levels; a report nests about eight."""


class Damaged(StayError):
    """A stored file that is not what stay writes; ``reason`` says what it is instead."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def read_stored(path: str | os.PathLike[str], limit: int = MAX_STORED_BYTES) -> bytes:
    """A regular file's bytes, reading no more than ``limit + 1``. A symbolic link, a FIFO,
    a device or a directory is ``Damaged``, decided on the opened descriptor (no race with
    a swap) and without blocking (``O_NONBLOCK``: opening a FIFO with no writer returns at
    once). ``FileNotFoundError`` and other OSErrors are raised as ``open`` raises them."""
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
    """The JSON document in a stored file: ``Damaged`` unless it is a regular file within
    ``limit`` bytes, UTF-8, valid JSON and at most ``depth`` levels deep."""
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
    """The deepest bracket nesting of a JSON text, brackets inside strings not counted:
    strings are cut out by a regular expression, then one pass over the brackets left.
    The guard before every ``json.loads`` of untrusted text (stored files, a model's
    answer): the parser recurses once per level."""
    level = deepest = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        level += 1 if bracket in "[{" else -1
        deepest = max(deepest, level)
    return deepest


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: linear on a long string
_BRACKET = re.compile(r"[\[\]{}]")


__all__ = ["MAX_STORED_BYTES", "MAX_STORED_DEPTH", "Damaged", "json_nesting", "load_stored_json", "read_stored"]
