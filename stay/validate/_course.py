"""Loading one course directory: every file looked at, parsed once, with its verdict.

The rules read only what is here. A file that is not UTF-8 or not YAML, or that
does not match its schema, is *unusable*: every rule treats it as absent.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from stay._bounds import MAX_FILE_BYTES, TooLarge, read_bounded
from stay.validate._data import HouseData
from stay.validate._defect import Owner
from stay.validate._schema import SCHEMAS, problems
from stay.validate._text import Body, norm, split_lines
from stay.validate._yaml import expands_past, may_alias, safe_load

# The seven top-level files, in the order they are looked at.
TOP_FILES: tuple[tuple[str, str], ...] = (
    ("course.yaml", "course"),
    ("audience.yaml", "audience"),
    ("curriculum.yaml", "curriculum"),
    ("outcomes.yaml", "outcomes"),
    ("assessment.yaml", "assessment"),
    ("project.yaml", "project"),
    ("glossary.yaml", "glossary"),
)
# The four files of a lesson, under modules/<module id>-<module slug>/.
LESSON_FILES: tuple[tuple[str, str], ...] = (
    (".plan.yaml", "plan"),
    (".md", "md"),
    (".exercises.yaml", "exercises"),
    (".quiz.yaml", "quiz"),
)
# The stage that writes each kind of file, and so owns its schema defects.
OWNER_OF_KIND: dict[str, Owner] = {
    "course": "manifest", "audience": "audience", "curriculum": "curriculum",
    "outcomes": "outcomes", "assessment": "assessment", "project": "capstone",
    "glossary": "glossary", "plan": "plan", "md": "content",
    "exercises": "exercises", "quiz": "quiz",
}


@dataclass(slots=True)
class CourseFile:
    """One file looked at, and what loading it found."""

    path: str
    """Relative to the course directory, '/'-separated."""
    kind: str
    exists: bool = False
    parsed: bool = False
    """Read as UTF-8 and parsed as YAML (for a lesson: front matter found and parsed)."""
    problems: tuple[str, ...] = ()
    data: Any = None
    """The parsed document, when usable (a lesson's front matter)."""
    body: Body | None = None

    @property
    def usable(self) -> bool:
        return self.parsed and not self.problems

    @property
    def owner(self) -> Owner:
        return OWNER_OF_KIND[self.kind]


def load_file(root: str, path: str, kind: str) -> CourseFile:
    """Read and parse one file; never raises for anything the file contains."""
    record = CourseFile(path, kind)
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return record
    record.exists = True
    try:
        text = read_bounded(full).decode("utf-8")
    except TooLarge:  # not read whole: a schema defect that says why (the reference would read it)
        record.parsed = True
        record.problems = (f"larger than {MAX_FILE_BYTES // 2**20} MB, the limit on a course file; not read",)
        return record
    except (OSError, ValueError):
        return record
    body_lines: list[str] | None = None
    if kind == "md":
        lines = split_lines(text)
        close = None
        if lines and lines[0] == "---":
            close = next((i for i in range(1, len(lines)) if lines[i] == "---"), None)
        if close is None:
            record.parsed = True
            record.problems = ("front matter is missing",)
            return record
        text = "\n".join(lines[1:close])
        body_lines = lines[close + 1:]
    try:
        document = safe_load(text)
    except Exception:
        return record
    record.parsed = True
    # Anchors the reference reads are read alike (parity); aliases that expand to more
    # values than the text itself holds are an alias bomb, and nothing walks them.
    if may_alias(text) and expands_past(document, len(text)):
        record.problems = ("its YAML aliases expand to more values than the file holds; write each value out "
                           "in full",)
        return record
    record.problems = tuple(problems(document, SCHEMAS[kind]))
    if not record.problems:
        record.data = document
        if body_lines is not None:
            record.body = Body.parse(body_lines)
    return record


@dataclass(slots=True)
class Lesson:
    """A curriculum lesson, in lesson order, with its module and its four files."""

    pos: int
    module: dict[str, Any]
    module_dir: str
    id: str
    title: str
    minutes: int
    plan: CourseFile
    md: CourseFile
    exercises: CourseFile
    quiz: CourseFile

    @property
    def paths(self) -> tuple[str, ...]:
        return (self.plan.path, self.md.path, self.exercises.path, self.quiz.path)


@dataclass(frozen=True, slots=True)
class Intro:
    """An introduced term: the first new_terms entry with its norm(), in lesson order."""

    term: str
    lesson: Lesson


@dataclass
class Course:
    """Everything the rules read about one course, loaded once."""

    root: str
    """The course directory as given or found."""
    name: str
    """The directory's own name (the last component of its absolute path)."""
    data: HouseData
    files: dict[str, CourseFile] = field(default_factory=dict)
    lessons: list[Lesson] = field(default_factory=list)
    modules: list[dict[str, Any]] = field(default_factory=list)
    module_dirs: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, root: str, data: HouseData) -> Course:
        course = cls(root, os.path.basename(os.path.abspath(root)), data)
        for path, kind in TOP_FILES:
            course.files[path] = load_file(root, path, kind)
        curriculum = course.files["curriculum.yaml"]
        course.modules = curriculum.data["modules"] if curriculum.usable else []
        for module in course.modules:
            module_dir = f"modules/{module['id']}-{module['slug']}"
            course.module_dirs.append(module_dir)
            for entry in module["lessons"]:
                found: dict[str, CourseFile] = {}
                for suffix, kind in LESSON_FILES:
                    path = f"{module_dir}/{entry['id']}{suffix}"
                    if path not in course.files:  # a path shared by duplicate ids loads once
                        course.files[path] = load_file(root, path, kind)
                    found[kind] = course.files[path]
                course.lessons.append(Lesson(
                    len(course.lessons), module, module_dir, entry["id"], entry["title"],
                    entry["minutes"], found["plan"], found["md"], found["exercises"],
                    found["quiz"],
                ))
        return course

    # -- the top-level files (the rules table's C, A, K, O, S, J, G) ----------

    @property
    def manifest_file(self) -> CourseFile:
        return self.files["course.yaml"]

    @property
    def audience_file(self) -> CourseFile:
        return self.files["audience.yaml"]

    @property
    def curriculum_file(self) -> CourseFile:
        return self.files["curriculum.yaml"]

    @property
    def outcomes_file(self) -> CourseFile:
        return self.files["outcomes.yaml"]

    @property
    def assessment_file(self) -> CourseFile:
        return self.files["assessment.yaml"]

    @property
    def project_file(self) -> CourseFile:
        return self.files["project.yaml"]

    @property
    def glossary_file(self) -> CourseFile:
        return self.files["glossary.yaml"]

    # -- derived views, computed once -----------------------------------------

    @cached_property
    def lesson_ids(self) -> frozenset[str]:
        return frozenset(lesson.id for lesson in self.lessons)

    @cached_property
    def unusable(self) -> frozenset[str]:
        """Normalised paths of files that exist but are unusable."""
        return frozenset(
            posixpath.normpath(f.path) for f in self.files.values() if f.exists and not f.usable
        )

    @cached_property
    def outcomes(self) -> list[dict[str, Any]]:
        """The entries of a usable outcomes.yaml, in file order ([] otherwise)."""
        return self.outcomes_file.data["outcomes"] if self.outcomes_file.usable else []

    @cached_property
    def outcome_first(self) -> dict[str, dict[str, Any]]:
        """Known outcome ids, each to its first entry."""
        first: dict[str, dict[str, Any]] = {}
        for outcome in self.outcomes:
            first.setdefault(outcome["id"], outcome)
        return first

    @cached_property
    def _outcomes_by_lesson(self) -> dict[str, list[dict[str, Any]]]:
        by_lesson: dict[str, list[dict[str, Any]]] = {}
        for outcome in self.outcomes:
            by_lesson.setdefault(outcome["lesson"], []).append(outcome)
        return by_lesson

    def outcomes_of(self, lesson_id: str) -> list[dict[str, Any]]:
        """Outcomes whose ``lesson`` is ``lesson_id``, file order, duplicates included."""
        return self._outcomes_by_lesson.get(lesson_id, [])

    @cached_property
    def introduced(self) -> dict[str, Intro]:
        """norm(term) to its introduction, over usable plans in lesson order."""
        found: dict[str, Intro] = {}
        for lesson in self.lessons:
            if lesson.plan.usable:
                for entry in lesson.plan.data["new_terms"]:
                    found.setdefault(norm(entry["term"]), Intro(entry["term"], lesson))
        return found

    def introduced_before(self, term: str, pos: int, *, inclusive: bool = False) -> bool:
        """Whether ``term`` is introduced before lesson ``pos`` (or in it, if inclusive)."""
        intro = self.introduced.get(norm(term))
        if intro is None:
            return False
        return intro.lesson.pos <= pos if inclusive else intro.lesson.pos < pos

    @cached_property
    def planned_lessons(self) -> list[Lesson]:
        """Lessons with a usable plan, in lesson order."""
        return [lesson for lesson in self.lessons if lesson.plan.usable]
