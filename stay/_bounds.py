"""The bounds on every file stay reads: a size read no further than the limit, and YAML
refused from its event stream before any document is built (a kilobyte of anchors and
aliases is gigabytes to any walk over it). Declared once for the brief, the artefacts, the
viewer and the validator; imports nothing of stay's but ``errors`` and ``_stored``.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

import yaml

from stay._stored import MAX_STORED_BYTES
from stay.errors import ArtefactError

MAX_FILE_BYTES = MAX_STORED_BYTES
"""The largest course file stay reads, 16 MB as any stored file: the longest lesson house
style allows is tens of KB, and 16 MB parsed stays well under a gigabyte."""
MAX_ASSET_BYTES = 2**20
"""The largest data file a course may carry under ``assets/`` (1 MB; stay's own limit, ast003):
a sample a learner opens is tens of KB, and at a megabyte no lesson can talk them through it."""
DATA_NAME = re.compile(r"[a-z0-9][a-z0-9-]*\.(csv|txt|json)")
"""A data file's name under ``assets/``: lowercase, and a type the validator can read (ast004)."""
MAX_DEPTH = 20
"""The deepest YAML nesting stay reads: the deepest artefact schema nests 5 levels, and a
recursive composer (libyaml's, in C) overflows its stack tens of thousands deeper."""

Shape = Literal["aliases", "deep"]
"""Why a YAML text is refused: it uses anchors or aliases, or nests too deeply."""

try:
    _EVENTS: Any = yaml.CSafeLoader  # libyaml's event parser: linear, no recursion in C
except AttributeError:  # PyYAML built without libyaml
    _EVENTS = yaml.SafeLoader


class TooLarge(ArtefactError):
    """A file larger than the limit; raised after reading at most ``limit + 1`` bytes.
    Each reader says it in its own terms (a brief, a damaged page, a schema defect)."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(f"{path}: larger than {limit // 2**20} MB, the limit on a file stay reads; "
                         "shorten it, or delete it and regenerate it")
        self.path = path
        self.limit = limit


def read_bounded(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """A file's bytes, reading no more than ``limit + 1`` of them: ``TooLarge`` past the
    limit, whatever the file is (a sparse file, a device that never ends). OSError as
    ``open`` raises it."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(os.fspath(path), limit)
    return data


def yaml_shape(text: str, max_depth: int = MAX_DEPTH, loader: Any = _EVENTS) -> Shape | None:
    """Why ``text`` may not be composed ("aliases" or "deep"), or None, from the event stream
    alone (nothing expanded). A syntax error is the pure parser's ``yaml.YAMLError``, whose
    verdict counts: a text libyaml rejects is read again by the pure parser."""
    try:
        return _shape(text, max_depth, loader)
    except yaml.YAMLError:
        if loader is yaml.SafeLoader:
            raise
        return _shape(text, max_depth, yaml.SafeLoader)


def nests_deeper(text: str, max_depth: int) -> bool:
    """Whether ``text`` nests deeper than ``max_depth`` (or libyaml cannot read it), from
    libyaml's event stream: linear, and safe where composing would recurse in C."""
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
