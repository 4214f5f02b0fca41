"""A brief's duration in minutes, and house style's bounds on a course's time. Stdlib and ``stay.errors``
only, so the validator's rules read durations without the artefacts' pydantic models."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from stay.errors import BriefError

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "half": 0.5,
}
MINUTES_PER_DAY = 360  # a day of learning is six hours of study
MINUTES_PER_WEEK = 5 * MINUTES_PER_DAY
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
    """The house style's bounds on a course's shape (each field names its key in
    ``metadata['key']``), and from them the shortest and longest course, in minutes. The
    defaults are the shipped house style's (a test holds them equal to data/house-style.yaml)."""

    min_modules: int = field(default=1, metadata={"key": "course.min_modules"})
    max_modules: int = field(default=10, metadata={"key": "course.max_modules"})
    min_lessons: int = field(default=1, metadata={"key": "module.min_lessons"})
    max_lessons: int = field(default=6, metadata={"key": "module.max_lessons"})
    min_minutes: int = field(default=10, metadata={"key": "lesson.min_minutes"})
    max_minutes: int = field(default=45, metadata={"key": "lesson.max_minutes"})
    practice_percent: int = field(default=40, metadata={"key": "course.practice_percent"})
    exercise_min: int = field(default=5, metadata={"key": "exercise.min_minutes"})
    exercise_max: int = field(default=30, metadata={"key": "exercise.max_minutes"})
    capstone_min: int = field(default=10, metadata={"key": "capstone.min_minutes"})
    capstone_max: int = field(default=240, metadata={"key": "capstone.max_minutes"})

    def lessons_share(self, minutes: int) -> int:
        """audience.yaml's ``time_budget_minutes`` for a brief of ``minutes``: what is left
        for lessons once ``practice_percent`` (rounded down) is kept for exercises and the
        capstone. cur004/cur005 hold the lessons to it; prc001 holds all three to ``minutes``."""
        return minutes - minutes * self.practice_percent // 100

    @property
    def shortest(self) -> int:
        """The shortest brief whose lessons' share holds the shortest lesson."""
        return (self.min_minutes - 1) * 100 // (100 - self.practice_percent) + 1

    @property
    def most_lessons(self) -> int:
        return self.max_modules * self.max_lessons

    @property
    def longest(self) -> int:
        """The most minutes of lessons a course holds; a brief whose lessons' share passes it is refused."""
        return self.most_lessons * self.max_minutes


DEFAULT_LIMITS = DurationLimits()


def parse_duration(text: str) -> int:
    """Minutes of learning in free text ("1.5 h", "2 hours 30 minutes", "half a day"); BriefError else."""
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
