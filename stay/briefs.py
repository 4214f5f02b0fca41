"""Course briefs from the command line's side: slugs, course directories, the brief's size
(the brief checks live with the ``Brief`` artefact)."""

from __future__ import annotations

import dataclasses
import os
import re
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from stay.artefacts import (
    DEFAULT_LIMITS,
    SLUG_MAX,
    SLUG_PATTERN,
    Curriculum,
    DurationLimits,
    check_duration,
    read_brief,
)
from stay.errors import EnvironmentProblem, PipelineError, UsageError

if TYPE_CHECKING:
    from stay.validate import HouseData

__all__ = [
    "DEFAULT_LIMITS",
    "DurationLimits",
    "check_curriculum_size",
    "check_duration",
    "check_slug",
    "course_dir",
    "house_limits",
    "load_brief",
    "most_lessons",
    "slugify",
    "title_slug",
]

load_brief = read_brief


def most_lessons(house: HouseData) -> int:
    return house_limits(house).most_lessons


def check_curriculum_size(curriculum: Curriculum, house: HouseData, where: str) -> None:
    """Refuse a curriculum with more lessons than house style's largest course before anything is built:
    the work grows faster than the curriculum (a lesson's inputs include earlier plans). One a little over
    a per-module limit stays readable, so a build can still repair it."""
    lessons = sum(len(module.lessons) for module in curriculum.modules)
    limit = house_limits(house).most_lessons
    if lessons > limit:
        raise PipelineError(f"{where}: {lessons:,} lessons in {len(curriculum.modules):,} modules; house style's "
                            f"largest course has {limit} (course.max_modules x module.max_lessons): shorten the "
                            "curriculum, or split the subject into several courses")


def slugify(title: str) -> str:
    """A course slug from a title: lowercase ASCII words joined by hyphens, at most 60;
    ``course`` for a title with none (``title_words`` tells the two apart)."""
    return title_words(title) or "course"


def title_words(title: str) -> str:
    """The slug a title's ASCII words make, or ``""`` (a non-Latin script is not transliterated)."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = ""
    for word in re.findall(r"[a-z0-9]+", ascii_text.lower()):
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > SLUG_MAX:
            break
        slug = candidate
    return slug


def title_slug(title: str, slug: str | None = None) -> str:
    """``slug`` if given (checked), else the title's; a title with no Latin letters or digits is refused
    asking for a slug, rather than every such course sharing ``course``."""
    if slug:
        return check_slug(slug)
    made = title_words(title)
    if not made:
        shown = title if len(title) <= 40 else title[:37] + "..."
        raise UsageError(f"the brief's title {shown!r} has no Latin letters or digits to make a course slug from; "
                         "name the course with --slug NAME (slug= from Python), e.g. --slug my-course")
    return check_slug(made)


def check_slug(slug: str) -> str:
    """The slug, if it is one; a slug can never name a path outside the courses directory."""
    if len(slug) > SLUG_MAX or SLUG_PATTERN.fullmatch(slug) is None:
        shown = slug if len(slug) <= 40 else slug[:37] + "..."
        raise UsageError(f"{shown!r} is not a course slug: use lowercase letters, digits and "
                         f"single hyphens, at most {SLUG_MAX} characters (e.g. how-http-requests-travel)")
    return slug


def course_dir(courses_dir: str | os.PathLike[str], slug: str) -> Path:
    root = Path(courses_dir).resolve()
    if root.exists() and not root.is_dir():
        raise EnvironmentProblem(f"{courses_dir}: the courses directory is a file; pass a directory "
                                 "with --courses-dir")
    target = (root / check_slug(slug)).resolve()
    if target.parent != root:
        raise UsageError(f"course '{slug}' would leave the courses directory {root}")
    return target


def house_limits(house: HouseData) -> DurationLimits:
    return DurationLimits(**{f.name: int(house[f.metadata["key"]]) for f in dataclasses.fields(DurationLimits)})
