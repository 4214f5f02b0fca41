"""``yaml.safe_load``, remembered by text, for test helpers that parse the same text many
times: the rule fixtures edit pristine sample files every fixture shares, and the fake
Messages API reads back the same audience, outcomes and plan in every call of a lesson.
Each caller gets a deep copy (the references safe_load shares, shared alike), so no edit
reaches the remembered data. ``tests/test_remembered_yaml.py`` holds it equal to a fresh
``safe_load`` over generated documents."""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import yaml


def load_yaml(text: str) -> Any:
    return copy.deepcopy(_parsed(text))


@lru_cache(maxsize=512)
def _parsed(text: str) -> Any:
    return yaml.safe_load(text)
