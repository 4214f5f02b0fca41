"""Ids, slugs and terms: the one check for every value that may become part of a path. An id
read from disk is as untrusted as a model's: both must match the contract's pattern before any
path is built. Terms never become paths, but are printed: no control character."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator

from stay._bounds import DATA_NAME

ID_MAX = 64
SLUG_MAX = 60
TERM_MAX = ID_MAX

SLUG_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MODULE_PATTERN = re.compile(r"m[0-9]{2}")
LESSON_PATTERN = re.compile(r"m[0-9]{2}-l[0-9]{2}")
ASSET_PATTERN = re.compile("assets/" + DATA_NAME.pattern)  # flat under assets/, a type the validator parses


def _unsafe(value: str) -> str | None:
    if "\x00" in value:
        return "holds a NUL byte"
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value):
        return "holds a control character"
    if "/" in value or "\\" in value:
        return "holds a path separator"
    if ".." in value:
        return "holds '..'"
    return None


def _shown(value: str) -> str:
    text = value if len(value) <= 40 else value[:37] + "..."
    return repr(text)


def _checker(kind: str, pattern: re.Pattern[str], limit: int, example: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        why = _unsafe(value)
        if why is not None:
            raise ValueError(f"{_shown(value)} is not a {kind}: it {why}; use the format {example}")
        if len(value) > limit:
            raise ValueError(f"{_shown(value)} is not a {kind}: it is {len(value)} characters long, "
                             f"at most {limit} are allowed")
        if pattern.fullmatch(value) is None:
            raise ValueError(f"{_shown(value)} is not a {kind}; use the format {example}")
        return value

    return check


check_module_id = _checker("module id", MODULE_PATTERN, ID_MAX, "m + two digits, e.g. m01")
check_lesson_id = _checker("lesson id", LESSON_PATTERN, ID_MAX,
                           "<module id>-l + two digits, e.g. m01-l02")
check_slug_value = _checker("slug", SLUG_PATTERN, SLUG_MAX,
                            "lowercase letters, digits and single hyphens, e.g. how-http-requests-travel")


def check_term(value: str) -> str:
    if "\x00" in value or any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value):
        raise ValueError(f"{_shown(value)} is not a term: it holds a control character or line break")
    if len(value) > TERM_MAX:
        raise ValueError(f"{_shown(value)} is not a term: it is {len(value)} characters long, "
                         f"at most {TERM_MAX} are allowed")
    return value


def check_asset_path(value: str) -> str:
    if len(value) > ID_MAX + len("assets/.json") or ASSET_PATTERN.fullmatch(value) is None:
        raise ValueError(f"{_shown(value)} is not a data file path; use assets/<lowercase name>.csv "
                         "(or .txt, .json), e.g. assets/orders.csv")
    return value


ModuleId = Annotated[str, AfterValidator(check_module_id)]
LessonId = Annotated[str, AfterValidator(check_lesson_id)]
Slug = Annotated[str, AfterValidator(check_slug_value)]
AssetPath = Annotated[str, AfterValidator(check_asset_path)]
Term = Annotated[str, AfterValidator(check_term)]
