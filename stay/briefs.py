"""Course briefs from the command line's side: slugs, course directories, the brief's size
(the brief checks live with the ``Brief`` artefact)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from stay._slug import SLUG_MAX, is_slug, slugify, title_words
from stay.artefacts import DEFAULT_LIMITS, Curriculum, DurationLimits, check_duration, read_brief
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
    """Refused before anything is built from it: a command's work grows faster than the
    curriculum. One a little over a per-module limit stays readable, so a build can repair it."""
    lessons = sum(len(module.lessons) for module in curriculum.modules)
    limit = most_lessons(house)
    if lessons > limit:
        raise PipelineError(f"{where}: {lessons:,} lessons in {len(curriculum.modules):,} modules; house style's "
                            f"largest course has {limit} (course.max_modules x module.max_lessons): shorten the "
                            "curriculum, or split the subject into several courses")


def title_slug(title: str, slug: str | None = None) -> str:
    """``slug`` if given, else the title's; a title with no Latin letters or digits is refused,
    rather than every such course sharing the generic ``course``."""
    if slug:
        return check_slug(slug)
    made = title_words(title)
    if not made:
        shown = title if len(title) <= 40 else title[:37] + "..."
        raise UsageError(f"the brief's title {shown!r} has no Latin letters or digits to make a course slug from; "
                         "name the course with --slug NAME (slug= from Python), e.g. --slug my-course")
    return check_slug(made)


def check_slug(slug: str) -> str:
    if not is_slug(slug):
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
