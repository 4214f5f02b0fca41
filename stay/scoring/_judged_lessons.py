"""The lesson each item on the comparison page was judged on, read back from its course, when it
can be trusted to be the one judged: the course reached without a symbolic link, still hashing
to the build's ``course_sha256``, and the lesson as long as the item's note says."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stay.scoring._core import bounded, lesson_note
from stay.view import ItemPair, ItemSide, LessonText, ScorerPairs

MAX_LESSON_CHARS = 40_000
"""Characters of a lesson the page shows: house style's longest lesson is a few tens of KB."""
MAX_LESSONS = 40
"""Distinct lessons one page shows: a lesson is ~8 KB, so the page stays well under a few MB."""

# The note around the lesson's length, from the one function that writes it: "(the lesson came first: N ..."
_HEAD, _TAIL = lesson_note("").split("0", 1)
_NOTE = re.compile(re.escape(_HEAD) + r"(\d+)" + re.escape(_TAIL))

NOT_ON_DISK = "course not on disk"
CHANGED = "course changed since it was judged (its files no longer hash to the report's course_sha256)"


def judged_length(shown: str | None) -> int | None:
    """The length of the lesson an item's judge read first, as its ``shown`` notes it;
    None: the item was judged on no lesson."""
    match = _NOTE.match(shown or "")
    return int(match.group(1)) if match else None


@dataclass
class _Course:
    root: Path | None
    why: str = ""
    """Why the course cannot be used (``root`` None)."""
    reader: Any = None
    """The course's one reader (``CourseReader``: it parses a file once per distinct bytes)."""


class JudgedLessons:
    """The lessons of two runs' listed items: each build's course checked once (its hash),
    then read through its one reader; each lesson's text kept once (``lessons``)."""

    def __init__(self, reports: tuple[Mapping[str, Any], Mapping[str, Any]],
                 paths: tuple[Path | None, Path | None]) -> None:
        self.reports, self.paths = reports, paths
        self._courses: dict[tuple[int, str, int], _Course] = {}
        self._texts: dict[tuple[int, str, int, str], tuple[str | None, str | None, str]] = {}
        self.lessons: dict[str, LessonText] = {}
        """By anchor, in the order first listed."""

    def course(self, run: int, brief: str, index: int) -> _Course:
        key = (run, brief, index)
        if key not in self._courses:
            self._courses[key] = self._check(run, brief, index)
        return self._courses[key]

    def _check(self, run: int, brief: str, index: int) -> _Course:
        from stay.artefacts import ArtefactLoadError, CourseReader
        from stay.errors import UsageError
        from stay.scoring._session import course_dir

        path, build = self.paths[run], self.reports[run]["briefs"][brief]["builds"][index]
        named = build.get("course")
        if path is None:
            return _Course(None, f"{NOT_ON_DISK} (the report's own location is not known)")
        if not isinstance(named, str) or not named:
            return _Course(None, f"{NOT_ON_DISK}: the report names no course (written before reports named them)")
        try:
            root = course_dir(path, build, f"briefs.{brief}.builds[{index}]")
        except UsageError:
            plain = Path(os.path.normpath(Path(os.path.realpath(path.parent)) / named))
            if not os.path.lexists(plain / "course.yaml"):
                return _Course(None, f"{NOT_ON_DISK} ({named}, relative to the report)")
            return _Course(None, f"the course {named} is reached through a symbolic link, which is not followed")
        try:
            digest = CourseReader(root).sha256()
        except (ArtefactLoadError, OSError):
            return _Course(None, f"the course {named} cannot be read whole")
        if not build.get("course_sha256"):
            return _Course(None, "the report records no course hash, so the course on disk cannot be checked")
        if digest != build.get("course_sha256"):
            return _Course(None, CHANGED)
        return _Course(root, reader=CourseReader(root))

    def text(self, run: int, brief: str, index: int, item: str) -> tuple[str | None, str | None, str]:
        """(the lesson ``item`` names, its body in that build's course, why there is none)."""
        key = (run, brief, index, item)
        if key not in self._texts:
            self._texts[key] = self._read(run, brief, index, item)
        return self._texts[key]

    def _read(self, run: int, brief: str, index: int, item: str) -> tuple[str | None, str | None, str]:
        from stay.artefacts import ArtefactLoadError, Curriculum, LessonContent, lesson_file

        course = self.course(run, brief, index)
        if course.root is None:
            return None, None, course.why
        reader = course.reader
        try:
            curriculum = reader.load("curriculum.yaml", Curriculum)
            found = next(((m, lsn.id) for m in curriculum.modules for lsn in m.lessons
                          if item == lsn.id or item.startswith(f"{lsn.id}-")), None)
            if found is None:
                return None, None, "its id names no lesson of its course's curriculum"
            module, lesson = found
            relative = lesson_file(module, lesson, LessonContent)
            file = course.root / relative
            if os.path.realpath(file) != os.path.normpath(file) or not file.is_file():
                return lesson, None, f"{relative} is not a regular file of the course (a symbolic link is not followed)"
            return lesson, reader.load(relative, LessonContent).body, ""
        except (ArtefactLoadError, OSError) as exc:
            return None, None, f"the lesson cannot be read ({' '.join(str(exc).split())[:200]})"

    def side(self, run: int, brief: str, side: ItemSide) -> ItemSide:
        """``side`` with its lesson: a link to the lesson's text, or why it is not shown."""
        length = judged_length(side.shown)
        if length is None:
            return side
        lesson, body, why = self.text(run, brief, side.build, side.item)
        if lesson is None or body is None:
            return replace(side, lesson=lesson, lesson_why=why)
        if len(body) != length:
            return replace(side, lesson=lesson, lesson_why=f"the lesson on disk ({len(body)} characters) is not the "
                                                            f"one its judge read ({length})")
        anchor = "lesson-" + hashlib.sha256(body.encode()).hexdigest()[:16]
        label = f"{('baseline', 'candidate')[run]} {brief} e{side.epoch:02d}"
        if anchor not in self.lessons:
            if len(self.lessons) >= MAX_LESSONS:
                return replace(side, lesson=lesson, lesson_why=f"the page shows at most {MAX_LESSONS} lessons")
            self.lessons[anchor] = LessonText(anchor, lesson, bounded(body, MAX_LESSON_CHARS) or "", len(body), ())
        shown = self.lessons[anchor]
        if label not in shown.read_by:
            self.lessons[anchor] = replace(shown, read_by=(*shown.read_by, label))
        return replace(side, lesson=lesson, lesson_anchor=anchor)


def with_lessons(groups: tuple[ScorerPairs, ...], reports: tuple[Mapping[str, Any], Mapping[str, Any]],
                 paths: tuple[Path | None, Path | None]) -> tuple[tuple[ScorerPairs, ...], tuple[LessonText, ...]]:
    """Every listed pair's sides with their lessons, and the lessons, each once."""
    found = JudgedLessons(reports, paths)

    def pair(p: ItemPair) -> ItemPair:
        sides = [None if s is None else found.side(run, p.brief, s)
                 for run, s in enumerate((p.baseline, p.candidate))]
        return replace(p, baseline=sides[0], candidate=sides[1])

    listed = tuple(replace(group, pairs=tuple(pair(p) for p in group.pairs)) for group in groups)
    return listed, tuple(replace(lesson, read_by=tuple(sorted(lesson.read_by))) for lesson in found.lessons.values())


__all__ = ["MAX_LESSONS", "MAX_LESSON_CHARS", "JudgedLessons", "judged_length", "with_lessons"]
