"""Course briefs: loading one from YAML with one-line errors, slugs, and durations."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

import yaml

from stay.artefacts import ArtefactLoadError, Brief, validate_as
from stay.errors import UsageError

SLUG_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SLUG_MAX = 60

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "half": 0.5,
}
# Minutes of learning per unit. A "day" of learning is six hours of study, not
# twenty-four; a week is five such days.
_UNITS = {
    "m": 1, "min": 1, "mins": 1, "minute": 1, "minutes": 1,
    "h": 60, "hr": 60, "hrs": 60, "hour": 60, "hours": 60,
    "d": 360, "day": 360, "days": 360, "week": 1800, "weeks": 1800,
}
_NUMBER = r"\d+(?:[.,]\d+)?|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_UNIT = "|".join(sorted(_UNITS, key=len, reverse=True))
_AMOUNT = re.compile(
    rf"\b(?P<n>{_NUMBER})(?P<half1>\s+and\s+a\s+half)?\s*(?:an?\s+)?(?P<unit>{_UNIT})\b"
    r"(?P<half2>\s+and\s+a\s+half)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> int:
    """Minutes of learning in free text: "45 minutes", "4 hours", "1.5 h", "1 day",
    "2 hours 30 minutes", "half a day", "an hour and a half". Raises ValueError when
    nothing reads as a time."""
    total = 0.0
    for match in _AMOUNT.finditer(text):
        raw = match.group("n").lower().replace(",", ".")
        amount = float(_NUMBER_WORDS[raw]) if raw in _NUMBER_WORDS else float(raw)
        if match.group("half1") or match.group("half2"):
            amount += 0.5
        total += amount * _UNITS[match.group("unit").lower()]
    if total <= 0:
        raise ValueError(f"cannot read {text!r} as a duration; write e.g. '45 minutes', "
                         "'4 hours' or '1 day'")
    return round(total)


def slugify(title: str) -> str:
    """A course slug from a title: lowercase ASCII words joined by hyphens, at most 60."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > SLUG_MAX:
            break
        slug = candidate
    return slug or "course"


def check_slug(slug: str) -> str:
    """The slug, if it is one; a slug can never name a path outside the courses directory."""
    if len(slug) > SLUG_MAX or SLUG_PATTERN.fullmatch(slug) is None:
        raise UsageError(f"'{slug}' is not a course slug: use lowercase letters, digits and "
                         f"single hyphens, at most {SLUG_MAX} characters (e.g. how-http-requests-travel)")
    return slug


def course_dir(courses_dir: str | os.PathLike[str], slug: str) -> Path:
    """``courses_dir/slug``, refusing any slug that could leave ``courses_dir``."""
    root = Path(courses_dir).resolve()
    target = (root / check_slug(slug)).resolve()
    if target.parent != root:
        raise UsageError(f"course '{slug}' would leave the courses directory {root}")
    return target


def load_brief(path: str | os.PathLike[str]) -> Brief:
    """Read a brief file; any problem is a one-line ``UsageError`` naming file and field."""
    where = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{where}: brief not found; give the path of a brief YAML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: cannot read the brief ({type(exc).__name__}); "
                         "save it as UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        raise UsageError(f"{where}: the brief is not valid YAML; fix its syntax") from None
    return brief_from_data(data, where)


def brief_from_data(data: object, where: str = "brief") -> Brief:
    if not isinstance(data, dict):
        raise UsageError(f"{where}: a brief is a mapping with title, topic, audience and "
                         "time_available")
    for field in ("title", "topic", "audience", "time_available"):
        if field not in data or data[field] is None:
            raise UsageError(f"{where}: field '{field}' is missing; add it (see "
                             "examples/briefs/how-http-requests-travel.yaml)")
    try:
        brief = validate_as(Brief, data, where)
    except ArtefactLoadError as exc:
        raise UsageError(str(exc)) from None
    try:
        minutes = parse_duration(brief.time_available)
    except ValueError as exc:
        raise UsageError(f"{where}: field 'time_available': {exc}") from None
    shortest = _shortest_lesson()
    if minutes < shortest:
        raise UsageError(f"{where}: field 'time_available': {brief.time_available!r} is {minutes} minutes, "
                         f"shorter than the shortest lesson house style allows ({shortest} minutes)")
    return brief


def _shortest_lesson() -> int:
    """house-style.yaml's lesson.min_minutes: no course can be shorter than one lesson."""
    from stay.validate import HouseData, default_data_dir

    try:
        return int(HouseData.load(default_data_dir())["lesson.min_minutes"])
    except Exception:  # without readable data files the validator will say so
        return 1
