"""``yaml.safe_load``, remembered by the exact text, for the tests' helpers that parse the
same text many times: the rule fixtures edit pristine sample files every fixture shares,
the fake Messages API reads back the same audience, outcomes and plan in every call of a
lesson, and the frozen reference validator (``tests/parity/harness.py``) parses every
course file of some 200 per-rule fixtures with the pure-Python parser. One memo for all
three. Each caller gets a fresh copy (a pickle of the document, loaded again: shared
references stay shared, as ``copy.deepcopy`` keeps them, faster), so no edit reaches the
remembered data; a text that raises is parsed again, so it raises as it always does, and
anything but a string, or a text longer than ``LONGEST``, is parsed afresh.
``tests/test_remembered_yaml.py`` holds it equal to a fresh ``safe_load`` over generated
documents."""

from __future__ import annotations

import pickle
from functools import cache
from typing import Any

import yaml

LONGEST = 200_000
"""Texts longer than this are parsed afresh: the memo holds course-sized files, not the
oversized ones the bounds tests make."""


def load_yaml(text: Any) -> Any:
    if not isinstance(text, str) or len(text) > LONGEST:
        return yaml.safe_load(text)
    parsed, document = _parsed(text)
    return pickle.loads(document) if parsed else yaml.safe_load(text)


@cache
def _parsed(text: str) -> tuple[bool, bytes]:
    try:
        return True, pickle.dumps(yaml.safe_load(text), pickle.HIGHEST_PROTOCOL)
    except Exception:  # whatever it raises, it raises again from a fresh parse
        return False, b""
