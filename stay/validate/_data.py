"""The two data files the rules read: bloom-verbs.yaml and house-style.yaml.

They are the same files the writing stages are prompted with, so the verb table a
stage is told to use is the table its output is checked against. A data file that
is missing, unreadable, or lacks a key a rule reads is a usage problem
(``DataError``, exit 2), never a defect in a course.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from stay._duration import DEFAULT_LIMITS, DurationLimits
from stay.errors import DataFileError
from stay.settings import data_dir_from, resolve_data_dir
from stay.validate._yaml import safe_load

BLOOM_FILE = "bloom-verbs.yaml"
HOUSE_FILE = "house-style.yaml"


class DataError(DataFileError):
    """A data file is missing, unreadable, or lacks a key the rules read."""


def _number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(element, str) for element in value)


def _a_str(value: object) -> bool:
    return isinstance(value, str)


# Every house-style key a rule reads, with the type it must have.
_HOUSE_KEYS: tuple[tuple[str, Callable[[object], bool]], ...] = (
    ("course.min_modules", _number),
    ("course.max_modules", _number),
    ("course.min_budget_use", _number),
    ("module.min_lessons", _number),
    ("module.max_lessons", _number),
    ("module.max_new_terms", _number),
    ("lesson.min_minutes", _number),
    ("lesson.max_minutes", _number),
    ("lesson.max_outcomes", _number),
    ("lesson.max_new_terms", _number),
    ("lesson.section_kinds", _str_list),
    ("lesson.last_section_kind", _a_str),
    ("prose.max_words_per_minute", _number),
    ("prose.min_words_per_minute", _number),
    ("prose.max_paragraph_words", _number),
    ("prose.max_sentence_words", _number),
    ("prose.banned_phrases", _str_list),
    ("quiz.min_options", _number),
    ("quiz.max_options", _number),
    ("quiz.banned_options", _str_list),
    ("rubric.levels", _str_list),
    ("rubric.vague_words", _str_list),
)


PRACTICE_KEYS: dict[str, int] = {
    f.metadata["key"]: getattr(DEFAULT_LIMITS, f.name) for f in fields(DurationLimits)
    if f.name in ("practice_percent", "exercise_min", "exercise_max", "capstone_min", "capstone_max")}
"""stay's own house-style keys, on practice time, each optional: house-style.yaml is the
frozen reference's file, byte for byte, so the shipped figures are ``DurationLimits``'
defaults, and a data directory's house-style.yaml may set its own."""


def _read(path: Path) -> Any:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise DataError(
            f"data file '{path}' is missing or unreadable ({exc.strerror or exc})", path=path
        ) from None
    except UnicodeDecodeError:
        raise DataError(f"data file '{path}' is not UTF-8", path=path) from None
    try:
        return safe_load(text)
    except Exception as exc:
        raise DataError(f"data file '{path}' is not valid YAML ({type(exc).__name__})", path=path) from None


@dataclass(frozen=True)
class HouseData:
    """The verb table and the house-style limits, checked for every key a rule reads."""

    levels: Mapping[str, list[str]]
    banned: list[str]
    order: list[str]
    house: Mapping[str, Any]
    all_verbs: frozenset[str]

    def __getitem__(self, dotted: str) -> Any:
        return self.house[dotted]

    def apply_or_above(self, level: str) -> bool:
        """A level at or after ``apply`` in ``order``."""
        return level in self.order and self.order.index(level) >= self.order.index("apply")

    def below_apply(self, level: str) -> bool:
        """A level listed in ``order`` before ``apply`` (an unknown level is not below)."""
        return level in self.order and self.order.index(level) < self.order.index("apply")

    @classmethod
    def load(cls, data_dir: str | os.PathLike[str]) -> HouseData:
        """Read both files from ``data_dir``; ``DataError`` names the file and the problem."""
        bloom_path = Path(data_dir, BLOOM_FILE)
        house_path = Path(data_dir, HOUSE_FILE)
        bloom = _read(bloom_path)
        house = _read(house_path)

        def bad(path: Path, what: str, field: str | None = None) -> DataError:
            return DataError(f"data file '{path}' is unreadable: {what}", path=path, field=field)

        if not isinstance(bloom, dict):
            raise bad(bloom_path, "the root is not a mapping")
        levels = bloom.get("levels")
        if not isinstance(levels, dict) or not all(
            isinstance(key, str) and _str_list(value) for key, value in levels.items()
        ):
            raise bad(bloom_path, "levels must map each level to a list of verbs", "levels")
        if not _str_list(bloom.get("banned")):
            raise bad(bloom_path, "banned must be a list of verbs", "banned")
        if not _str_list(bloom.get("order")):
            raise bad(bloom_path, "order must be a list of levels", "order")
        if "apply" not in bloom["order"]:
            raise bad(bloom_path, "order must contain apply", "order")
        if not isinstance(house, dict):
            raise bad(house_path, "the root is not a mapping")
        values: dict[str, Any] = {}
        for dotted, check in _HOUSE_KEYS + tuple((key, _number) for key in PRACTICE_KEYS):
            node: Any = house
            for part in dotted.split("."):
                if not isinstance(node, dict) or part not in node:
                    if dotted in PRACTICE_KEYS:  # stay's own keys: the shipped figure unless set
                        node = PRACTICE_KEYS[dotted]
                        break
                    raise bad(house_path, f"{dotted} is missing", dotted)
                node = node[part]
            if not check(node):
                raise bad(house_path, f"{dotted} has the wrong type", dotted)
            values[dotted] = node
        return cls(
            levels=levels,
            banned=bloom["banned"],
            order=bloom["order"],
            house=values,
            all_verbs=frozenset(verb for verbs in levels.values() for verb in verbs),
        )


def default_data_dir() -> Path:
    """``$STAY_DATA_DIR``, else ``./data``, else the data shipped with stay: the one
    resolution (``stay.settings.resolve_data_dir``) of the variable alone, so a bad
    unrelated variable never stops the validator."""
    return resolve_data_dir(data_dir_from())
