"""Reading a course brief: every check, once, before anything is built from it.

``Brief.from_yaml`` and ``stay.briefs.load_brief`` are this module's ``read_brief``:
one function, so the two can never check different things. A brief is untrusted
input: it is refused before it is expanded when it is too large, nests too deeply
or uses YAML anchors and aliases (a kilobyte alias bomb expands to gigabytes), and
refused with a one-line error naming the file, the field and the fix when a field
is missing, unknown, of the wrong type, or a duration stay cannot read.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from stay._bounds import MAX_DEPTH, TooLarge, read_bounded, yaml_shape
from stay.errors import BriefError, BriefNotFound

MAX_BYTES = 64 * 1024
REQUIRED = ("title", "topic", "audience", "time_available")
OPTIONAL = ("industry", "constraints")
EXAMPLE = "the example brief `stay init` writes"
"""Where a refusal points for a brief that works: what every install has (``stay init``),
never a checkout's path."""

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "half": 0.5,
}
MINUTES_PER_DAY = 360
"""A day of learning is six hours of study, not twenty-four."""
MINUTES_PER_WEEK = 5 * MINUTES_PER_DAY
"""A week of learning is five such days."""
_UNITS = {
    "m": 1, "min": 1, "mins": 1, "minute": 1, "minutes": 1,
    "h": 60, "hr": 60, "hrs": 60, "hour": 60, "hours": 60,
    "d": MINUTES_PER_DAY, "day": MINUTES_PER_DAY, "days": MINUTES_PER_DAY,
    "week": MINUTES_PER_WEEK, "weeks": MINUTES_PER_WEEK,
}
UNITS_IN_WORDS = ("minutes, hours, days (6 hours of study each) or weeks (5 such days), "
                  "e.g. '45 minutes', '4 hours', '1.5 days', '2 hours 30 minutes'")
_NUMBER = r"\d+(?:[.,]\d+)?|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_UNIT = "|".join(sorted(_UNITS, key=len, reverse=True))
_AMOUNT = re.compile(
    rf"\b(?P<n>{_NUMBER})(?P<half1>\s+and\s+a\s+half)?\s*(?:an?\s+)?(?P<unit>{_UNIT})\b"
    r"(?P<half2>\s+and\s+a\s+half)?",
    re.IGNORECASE,
)
# A number followed by a word that is not one of our units: "6 months", "3 sessions".
_COUNTS = "|".join(word for word in _NUMBER_WORDS if word not in ("a", "an"))
_OTHER_UNIT = re.compile(r"\b(?:\d+(?:[.,]\d+)?|" + _COUNTS + r")\s*([A-Za-z]+)", re.IGNORECASE)
_RANGE = re.compile(r"\d\s*(?:-|–|to)\s*\d")
_FILLER = {"and", "a", "an", "of", "in", "total", "about", "around", "roughly", "approximately", "at",
           "most", "least", "per", "learning", "study", "studying", "time", "half"}


@dataclass(frozen=True)
class DurationLimits:
    """The house style's bounds on a course's shape, and from them the shortest and
    longest course the pipeline can make, in minutes.

    Each field names its house-style key (``metadata['key']``). ``shortest`` is the shortest
    lesson; ``longest`` the largest course: most modules x most lessons x longest
    lesson. The defaults are the shipped house style's (a test holds them equal to
    data/house-style.yaml); the pipeline checks again against the house style of its own
    data directory, the brief's duration before any call and a curriculum answer before
    anything past it is asked for."""

    min_modules: int = field(default=1, metadata={"key": "course.min_modules"})
    max_modules: int = field(default=10, metadata={"key": "course.max_modules"})
    min_lessons: int = field(default=1, metadata={"key": "module.min_lessons"})
    max_lessons: int = field(default=6, metadata={"key": "module.max_lessons"})
    min_minutes: int = field(default=10, metadata={"key": "lesson.min_minutes"})
    max_minutes: int = field(default=45, metadata={"key": "lesson.max_minutes"})

    @property
    def shortest(self) -> int:
        return self.min_minutes

    @property
    def most_lessons(self) -> int:
        """The most lessons a course holds: most modules x most lessons a module."""
        return self.max_modules * self.max_lessons

    @property
    def longest(self) -> int:
        return self.most_lessons * self.max_minutes


DEFAULT_LIMITS = DurationLimits()


def parse_duration(text: str) -> int:
    """Minutes of learning in free text: "45 minutes", "4 hours", "1.5 h", "1 day",
    "2 hours 30 minutes", "half a day", "an hour and a half". Raises BriefError, in
    words a person can act on, for anything else."""
    shown = text if len(text) <= 60 else text[:57] + "..."
    if _RANGE.search(text):
        raise BriefError(f"{shown!r} is a range; give one duration, e.g. '3 hours'")
    for match in _OTHER_UNIT.finditer(text):
        word = match.group(1).lower()
        if word not in _UNITS and word not in _FILLER:
            raise BriefError(f"{shown!r}: '{word}' is not a unit stay accepts; write the time as "
                             f"{UNITS_IN_WORDS}")
    total = 0.0
    for match in _AMOUNT.finditer(text):
        raw = match.group("n").lower().replace(",", ".")
        amount = float(_NUMBER_WORDS[raw]) if raw in _NUMBER_WORDS else float(raw)
        if match.group("half1") or match.group("half2"):
            amount += 0.5
        total += amount * _UNITS[match.group("unit").lower()]
    if not math.isfinite(total) or total > 10**9:
        raise BriefError(f"{shown!r} is far longer than any course; give the time a course takes")
    if total <= 0:
        raise BriefError(f"cannot read {shown!r} as a duration; write it as {UNITS_IN_WORDS}")
    return round(total)


def check_duration(text: str, where: str, limits: DurationLimits = DEFAULT_LIMITS) -> int:
    """The brief's minutes, within what the pipeline can make; else a BriefError."""
    try:
        minutes = parse_duration(text)
    except BriefError as exc:
        raise BriefError(f"{where}: field 'time_available': {exc}", field="time_available") from None
    if minutes < limits.shortest:
        raise BriefError(f"{where}: field 'time_available': {text!r} is {minutes} minutes, shorter than the "
                         f"shortest lesson house style allows ({limits.shortest} minutes)", field="time_available")
    if minutes > limits.longest:
        raise BriefError(f"{where}: field 'time_available': {text[:60]!r} is {minutes:,} minutes; the longest "
                         f"course house style allows is {limits.longest:,} minutes ({limits.longest // 60} hours "
                         "of study): split the subject into several courses", field="time_available")
    return minutes


def _structure(text: str, where: str) -> None:
    """Refuse anchors, aliases and deep nesting from the event stream, before any
    document is built (``stay._bounds.yaml_shape``, the guard every reader uses)."""
    try:
        shape = yaml_shape(text, MAX_DEPTH, yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise BriefError(f"{where}: the brief is not valid YAML{at}; fix its syntax") from None
    if shape == "aliases":
        raise BriefError(f"{where}: the brief uses YAML anchors or aliases (& and *); write each "
                         "value out in full")
    if shape == "deep":
        raise BriefError(f"{where}: the brief nests deeper than {MAX_DEPTH} levels; a brief is a "
                         "flat mapping with a list of constraints")


def brief_data(text: str, where: str) -> dict[str, Any]:
    """The brief's mapping, after the size, structure and key checks."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise BriefError(f"{where}: the brief is larger than {MAX_BYTES // 1024} KB; a brief is a few lines")
    _structure(text, where)
    try:
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        raise BriefError(f"{where}: the brief is not valid YAML; fix its syntax") from None
    return check_keys(data, where)


def check_keys(data: object, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BriefError(f"{where}: a brief is a mapping with {', '.join(REQUIRED)} (see {EXAMPLE})")
    known = (*REQUIRED, *OPTIONAL)
    for key in data:
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"did you mean '{near[0]}'?" if near else f"the fields are {', '.join(known)}"
            raise BriefError(f"{where}: unknown field '{str(key)[:40]}'; {hint}", field=str(key))
    for key in REQUIRED:
        if key not in data or data[key] is None:
            raise BriefError(f"{where}: field '{key}' is missing; add it (see {EXAMPLE})", field=key)
    return data


def read_brief_text(path: str | os.PathLike[str]) -> str:
    where = os.fspath(path)
    try:
        raw = read_bounded(path, MAX_BYTES)
    except TooLarge:
        raise BriefError(f"{where}: the brief is larger than {MAX_BYTES // 1024} KB; a brief is a few lines",
                         path=where) from None
    except FileNotFoundError:
        raise BriefNotFound(f"{where}: brief not found; give the path of a brief YAML file", path=where) from None
    except IsADirectoryError:
        raise BriefError(f"{where}: is a directory; give the path of a brief YAML file", path=where) from None
    except OSError as exc:
        raise BriefError(f"{where}: cannot read the brief ({exc.strerror or type(exc).__name__})",
                         path=where) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BriefError(f"{where}: the brief is not UTF-8 text; save it as UTF-8", path=where) from None


def read_brief(path: str | os.PathLike[str], limits: DurationLimits = DEFAULT_LIMITS) -> Any:
    """Read and check a brief file: a ``Brief``, or a one-line ``BriefError`` naming the
    file, the field and the fix."""
    where = os.fspath(Path(path))
    text = read_brief_text(path)
    if not text.strip():  # an empty file, or a pipe read to its end already (it is read once)
        raise BriefError(f"{where}: the brief is empty, nothing was read from it; give a brief YAML file "
                         f"(see {EXAMPLE}), or pipe one in", path=where)
    try:
        return brief_from_data(brief_data(text, where), where, limits)
    except BriefError as exc:  # the checks of a brief's text name no file: this one is read from it
        exc.path = exc.path or where
        raise


def brief_from_data(data: object, where: str = "brief", limits: DurationLimits = DEFAULT_LIMITS) -> Any:
    """A ``Brief`` from already-parsed data, with every check ``read_brief`` makes after parsing."""
    from stay.artefacts._io import ArtefactLoadError, validate_as
    from stay.artefacts._models import Brief

    checked = check_keys(data, where)
    try:
        brief = validate_as(Brief, checked, where)
    except ArtefactLoadError as exc:
        raise BriefError(str(exc), field=exc.field) from None
    check_duration(brief.time_available, where, limits)
    return brief
