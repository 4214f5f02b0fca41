"""One loaded course and what the rules are made of: the schema table, the house data files, defects
and their owners, and the ``@rule`` registry. A file that is not UTF-8, not YAML, or off its schema is
*unusable*: every rule treats it as absent."""

from __future__ import annotations

import math
import os
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeAlias, cast, get_args

from stay._bounds import MAX_FILE_BYTES, TooLarge, read_bounded
from stay._duration import DEFAULT_LIMITS, DurationLimits
from stay.errors import DataFileError, GraphError
from stay.settings import data_dir_from, resolve_data_dir
from stay.validate._text import (
    _CODE_SPAN,
    Body,
    code_blocks,
    expands_past,
    heading,
    may_alias,
    mentions,
    norm,
    safe_load,
    sentences,
    show,
    split_lines,
)

Schema: TypeAlias = "str | list[Schema] | dict[str, Schema]"
"""A shape: 'str' (not blank), 'int', 'bool' or 'map' (any mapping); [item] a list of items; a mapping
of field names (optional ones end in '?') to their shapes, unknown fields allowed."""

_STRS: list[Schema] = ["str"]

SCHEMAS: dict[str, dict[str, Schema]] = {
    "course": {
        "schema": "int", "slug": "str", "title": "str",
        "brief": {"title": "str", "topic": "str", "audience": "str", "time_available": "str", "industry?": "str",
                  "constraints?": _STRS},
        "artefacts": "map",
    },
    "audience": {"learners": "str", "prior_knowledge": _STRS, "goals": _STRS, "constraints?": _STRS,
                 "misconceptions?": _STRS, "time_budget_minutes": "int"},
    "curriculum": {"modules": [{
        "id": "str", "slug": "str", "title": "str", "summary": "str",
        "lessons": [{"id": "str", "title": "str", "minutes": "int", "summary": "str"}],
    }]},
    "outcomes": {"outcomes": [{"id": "str", "lesson": "str", "bloom": "str", "verb": "str", "text": "str"}]},
    "assessment": {"strategy": "str", "evidence": [{"outcome": "str", "methods": _STRS}]},
    "plan": {
        "lesson": "str", "title": "str", "minutes": "int", "outcomes": _STRS,
        "sections": [{"heading": "str", "kind": "str", "minutes": "int", "covers": _STRS}],
        "new_terms": [{"term": "str", "definition": "str"}],
        "prerequisites": _STRS, "revisits": _STRS,
    },
    "exercises": {"lesson": "str", "exercises": [{
        "id": "str", "outcome": "str", "bloom": "str", "task": "str", "hints": _STRS, "solution": "str"}]},
    "quiz": {"lesson": "str", "items": [{
        "id": "str", "outcome?": "str", "retrieves?": "str", "type": "str", "stem": "str",
        "options?": [{"text": "str", "correct": "bool", "why_wrong?": "str"}],
        "answer?": "str", "explanation": "str",
    }]},
    "project": {
        "title": "str", "brief": "str", "deliverable": "str",
        "milestones": [{"id": "str", "title": "str", "modules": _STRS, "description": "str"}],
        "rubric": [{"id": "str", "criterion": "str", "outcomes": _STRS, "levels": "map"}],
    },
    "glossary": {"terms": [{"term": "str", "definition": "str", "introduced_in": "str"}]},
    "md": {"lesson": "str", "title": "str"},
}

_NAMES = {"str": "a string", "int": "an integer", "bool": "a boolean", "list": "a list", "map": "a mapping"}


def is_str(value: object) -> bool:
    return isinstance(value, str) and value.strip() != ""


_SHAPES: dict[str, Callable[[object], bool]] = {
    "str": is_str, "map": lambda value: isinstance(value, dict), "bool": lambda value: isinstance(value, bool),
    "int": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "list": lambda value: isinstance(value, list)}


def problems(value: object, schema: Schema, path: str = "") -> list[str]:
    """What in ``value`` is off ``schema``: a field missing, a value of the wrong shape."""
    shape = "list" if isinstance(schema, list) else "map" if isinstance(schema, dict) else schema
    if not _SHAPES[shape](value):
        return [f"{path or '(root)'} must be {_NAMES[shape]}"]
    found: list[str] = []
    if isinstance(schema, list):
        for index, element in enumerate(cast(list[object], value)):
            found += problems(element, schema[0], f"{path}[{index}]")
    elif isinstance(schema, dict):
        mapping = cast(dict[str, object], value)
        for spec, field_schema in schema.items():
            name = spec.rstrip("?")
            here = f"{path}.{name}" if path else name
            if name not in mapping:
                if spec == name:
                    found.append(f"{here} is missing")
            elif mapping[name] is not None or spec == name:
                found += problems(mapping[name], field_schema, here)
    return found


# The data files the rules read are the ones the writing stages are prompted with, so a stage is
# checked against the table it was told to use. A missing or short data file is a usage problem (exit 2).
BLOOM_FILE = "bloom-verbs.yaml"
HOUSE_FILE = "house-style.yaml"


class DataError(DataFileError):
    """A data file is missing, unreadable, or lacks a key the rules read (its class name is shown where the viewer
    says the validator could not run)."""


def _number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(element, str) for element in value)


def _a_str(value: object) -> bool:
    return isinstance(value, str)


_LIST_KEYS = frozenset({"lesson.section_kinds", "prose.banned_phrases", "quiz.banned_options", "rubric.levels",
                        "rubric.vague_words"})
# Every house-style key a rule reads, in the order checked, with the type it must have (a number unless listed).
_HOUSE_KEYS: tuple[tuple[str, Callable[[object], bool]], ...] = tuple(
    (key, _str_list if key in _LIST_KEYS else _a_str if key == "lesson.last_section_kind" else _number)
    for key in ("course.min_modules", "course.max_modules", "course.min_budget_use", "module.min_lessons",
                "module.max_lessons", "module.max_new_terms", "lesson.min_minutes", "lesson.max_minutes",
                "lesson.max_outcomes", "lesson.max_new_terms", "lesson.section_kinds", "lesson.last_section_kind",
                "prose.max_words_per_minute", "prose.min_words_per_minute", "prose.max_paragraph_words",
                "prose.max_sentence_words", "prose.banned_phrases", "quiz.min_options", "quiz.max_options",
                "quiz.banned_options", "rubric.levels", "rubric.vague_words"))


PRACTICE_KEYS: dict[str, int] = {
    f.metadata["key"]: getattr(DEFAULT_LIMITS, f.name) for f in fields(DurationLimits)
    if f.name in ("practice_percent", "exercise_min", "exercise_max", "capstone_min", "capstone_max")}
"""stay's own practice-time keys, each optional: house-style.yaml is the frozen reference's file, so
the shipped figures are ``DurationLimits``' defaults."""


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
        return level in self.order and self.order.index(level) >= self.order.index("apply")

    def below_apply(self, level: str) -> bool:
        """A level listed in ``order`` before ``apply`` (an unknown level is not below)."""
        return level in self.order and self.order.index(level) < self.order.index("apply")

    @classmethod
    def load(cls, data_dir: str | os.PathLike[str]) -> HouseData:
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
        for key, items in (("banned", "verbs"), ("order", "levels")):
            if not _str_list(bloom.get(key)):
                raise bad(bloom_path, f"{key} must be a list of {items}", key)
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
    """``$STAY_DATA_DIR``, else ``./data``, else the shipped data (a bad unrelated variable never stops it)."""
    return resolve_data_dir(data_dir_from())


class Severity(StrEnum):
    """FAIL blocks; WARN marks what is valid mid-run, or advisory house style."""

    FAIL = "FAIL"
    WARN = "WARN"


Owner = Literal[
    "manifest", "audience", "curriculum", "outcomes", "assessment", "example", "plan",
    "content", "exercises", "quiz", "capstone", "glossary",
]
"""The stage that must fix a defect. Repair routes on this, never on the path."""

OWNERS: tuple[Owner, ...] = get_args(Owner)


@dataclass(frozen=True, order=True, slots=True)
class Defect:
    """One rule firing on one subject, ordered as reports list them; every field is part of equality."""

    path: str
    """Relative to the course directory, '/'-separated; for a missing file, where it belongs."""
    code: str
    subject: str
    """What inside the file; '-' for the whole file."""
    message: str
    severity: Severity
    owner: Owner

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "severity": str(self.severity), "owner": self.owner,
                "path": self.path, "subject": self.subject, "message": self.message}

    def line(self) -> str:
        return f"{self.severity} {self.code} {self.path} {self.subject}: {self.message}"

    def quote(self, current: object) -> str:
        """What this defect's subject names in ``current`` (its file as it stands: a lesson body, or a file's
        data), read with the contract's text definitions, at most ``QUOTE_CHARS`` characters; '' when it
        names no place there."""
        found = (_body_place(current, self.subject, self.message) if isinstance(current, str)
                 else _data_place(current, self.subject))
        return found if len(found) <= QUOTE_CHARS else found[:QUOTE_CHARS - 1].rstrip() + "…"


QUOTE_CHARS = 300
"""The most characters a quote shows: a long sentence whole, a long paragraph's opening."""
_BODY_PLACE = re.compile(r"paragraph ([1-9][0-9]*)(?: sentence ([1-9][0-9]*))?|code block ([1-9][0-9]*)")
_OPTION = re.compile(r"(.+) option ([1-9][0-9]*)")
_PHRASE = re.compile(r"'(.+?)'(?=, '|$)")  # as ``quoted`` writes them, apostrophes inside included


def _body_place(body: str, subject: str, message: str) -> str:
    lines = split_lines(body)
    if subject == "prose":  # les009: the sentences of the prose that mention a phrase, a line each
        code = {i for start, end in code_blocks(lines) for i in range(start, end)}
        phrases = _PHRASE.findall(message.partition(": ")[2])
        blocks: list[list[str]] = [[]]
        for i, line in enumerate(lines):  # blocks of prose, split as paragraphs are; a heading alone
            if i in code or not line.strip():
                blocks.append([])
            elif heading(line) is not None:
                blocks += [[line.strip()], []]
            else:
                blocks[-1].append(line.strip())
        return "\n".join(piece for block in blocks for piece in sentences(" ".join(block))
                         if any(mentions(_CODE_SPAN.sub("", piece), p) for p in phrases))
    place = _BODY_PLACE.fullmatch(subject)
    if place is None:
        return ""
    paragraph, sentence, block = (int(k) if k else 0 for k in place.groups())
    if block:
        spans = code_blocks(lines)
        return "\n".join(lines[slice(*spans[block - 1])]) if block <= len(spans) else ""
    parsed = Body.parse(lines)
    if paragraph > len(parsed.paragraphs):
        return ""
    found = [parsed.paragraphs[paragraph - 1]] if not sentence else sentences(parsed.paragraphs[paragraph - 1])
    return found[max(sentence, 1) - 1] if max(sentence, 1) <= len(found) else ""


def _data_place(data: object, subject: str) -> str:
    """The place in a file's data ``subject`` names (an option, an entry or a field), a field a line."""
    option = _OPTION.fullmatch(subject)
    if option is not None:
        item = _holder(data, option[1])
        options = item.get("options") if isinstance(item, dict) else None
        k = int(option[2])
        return _lines(options[k - 1]) if isinstance(options, list) and k <= len(options) else ""
    found = _holder(data, subject)
    return "" if found is None else _lines(found)


def _holds(value: object, subject: str) -> bool:
    values = value if isinstance(value, list) else [value]
    return any(not isinstance(v, (dict, list)) and show(v) == subject for v in values)


def _holder(node: object, subject: str, entry: bool = False) -> dict[Any, object] | None:
    """Depth first: the list entry with a field that holds ``subject``, or the field that holds or is named by it."""
    if isinstance(node, dict):
        for key, value in node.items():
            if _holds(value, subject) or (not entry and show(key) == subject):
                return node if entry else {key: value}
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return next((found for child in children if (found := _holder(child, subject, isinstance(node, list)))), None)


def _lines(entry: object) -> str:
    """A mapping a field a line: a list as its elements (a mapping as its first field), a mapping as its keys."""
    def one(value: object) -> str:
        if isinstance(value, dict):
            return ", ".join(map(str, value))
        if isinstance(value, list):
            return ", ".join(one(next(iter(v.values()), "")) if isinstance(v, dict) else one(v) for v in value) or "[]"
        return " ".join(show(value).split())

    if not isinstance(entry, dict):
        return one(entry)
    return "\n".join(f"{key}: {one(value)}" for key, value in entry.items())


# The seven top-level files (each named by its kind), in the order they are looked at.
TOP_FILES: tuple[tuple[str, str], ...] = tuple(
    (f"{kind}.yaml", kind) for kind in ("course", "audience", "curriculum", "outcomes", "assessment", "project",
                                        "glossary"))
LessonKind = Literal["plan", "md", "exercises", "quiz"]
# The four files of a lesson, under modules/<module id>-<module slug>/, each named by its kind.
LESSON_FILES: tuple[tuple[str, str], ...] = tuple(
    (".md" if kind == "md" else f".{kind}.yaml", kind) for kind in get_args(LessonKind))
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
    """Never raises for anything the file contains."""
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
        try:
            close = lines.index("---", 1) if lines[:1] == ["---"] else None
        except ValueError:
            close = None  # never closed
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


class _TopFile:
    def __init__(self, path: str) -> None:
        self.path = path

    def __get__(self, course: Course, owner: type[Course]) -> CourseFile:
        return course.files[self.path]


@dataclass
class Course:
    """Everything the rules read about one course, loaded once."""

    root: str
    name: str
    """The last component of its absolute path."""
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
                course.lessons.append(Lesson(len(course.lessons), module, module_dir, entry["id"], entry["title"],
                                             entry["minutes"], **found))  # its four files, by kind
        return course

    # the top-level files (the rules table's C, A, K, O, S, J, G)
    manifest_file = _TopFile("course.yaml")
    audience_file = _TopFile("audience.yaml")
    curriculum_file = _TopFile("curriculum.yaml")
    outcomes_file = _TopFile("outcomes.yaml")
    assessment_file = _TopFile("assessment.yaml")
    project_file = _TopFile("project.yaml")
    glossary_file = _TopFile("glossary.yaml")

    # derived views, computed once

    @cached_property
    def lesson_ids(self) -> frozenset[str]:
        return frozenset(lesson.id for lesson in self.lessons)

    @cached_property
    def unusable(self) -> frozenset[str]:
        return frozenset(
            posixpath.normpath(f.path) for f in self.files.values() if f.exists and not f.usable
        )

    @cached_property
    def outcomes(self) -> list[dict[str, Any]]:
        return self.outcomes_file.data["outcomes"] if self.outcomes_file.usable else []

    @cached_property
    def outcome_first(self) -> dict[str, dict[str, Any]]:
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
        intro = self.introduced.get(norm(term))
        return intro is not None and (intro.lesson.pos <= pos if inclusive else intro.lesson.pos < pos)

    @cached_property
    def planned_lessons(self) -> list[Lesson]:
        return [lesson for lesson in self.lessons if lesson.plan.usable]

    def written(self, kind: LessonKind) -> Iterator[tuple[Lesson, CourseFile]]:
        """(lesson, its ``kind`` file) for each planned lesson whose ``kind`` file is usable."""
        for lesson in self.planned_lessons:
            file: CourseFile = getattr(lesson, kind)
            if file.usable:
                yield lesson, file

    def entries(self, kind: LessonKind, key: str) -> Iterator[tuple[Lesson, Any]]:
        """(lesson, entry) for every entry of the list ``key`` in each planned lesson's usable ``kind`` file."""
        for lesson, file in self.written(kind):
            for entry in file.data[key]:
                yield lesson, entry


# A rule maps a Course to one finding per subject the contract's "per" column names; @rule binds it
# to its row, and its docstring (required) says what it checks and why.


class Finding(NamedTuple):
    """One evaluation of a rule on one subject (a defect when ``fired``); a tuple, as a course makes thousands."""

    path: str
    subject: str
    fired: bool
    values: Mapping[str, object] = {}  # never mutated; a tuple field cannot take a factory
    owner: Owner | None = None
    """Overrides the rule's owner (the schema rules: the stage that writes the file)."""


Check = Callable[[Course], Iterator[Finding]]


class Group(StrEnum):
    """Which rules a rule stands with; a group's name is also a selector (``--select stay``)."""

    CONTRACT = "contract"
    """Exactly the frozen reference's rules, held to it by parity."""
    STAY = "stay"
    """Rules stay adds: every command runs them, parity never compares them."""


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    severity: Severity
    owner: Owner | None
    """None for the schema rules, owned by the stage that writes the file."""
    template: str
    check: Check
    doc: str
    group: Group

    def __call__(self, course: Course) -> Iterator[Finding]:
        return self.check(course)


def rule(code: str, severity: Severity, owner: Owner | None, template: str, *,
         group: Group = Group.CONTRACT) -> Callable[[Check], Rule]:
    # contract is the default; a new rule that forgets group=Group.STAY is caught, as the
    # reference does not know it (test_registry.py)
    def declare(check: Check) -> Rule:
        doc = (check.__doc__ or "").strip()
        if not doc:
            raise GraphError(f"rule {code} has no docstring saying what it checks and why")
        return Rule(code, severity, owner, template, check, doc, Group(group))

    return declare


def finding(path: str, subject: str, fired: bool, /, **values: object) -> Finding:
    return Finding(path, subject, fired, values)


def lesson_file_rules(prefix: str, kind: LessonKind, owner: Owner, says: str,
                      docs: tuple[str, str]) -> tuple[Rule, Rule]:
    """A lesson family's first two rules, alike in each: <prefix>001 a lesson (a planned one, but for the plan)
    has no usable ``kind`` file (mid-run, a WARN), named in the message by its ``owner``; <prefix>002 the file
    (``says``) names another lesson than its own. ``docs`` are the two rules' docstrings."""
    def missing(course: Course) -> Iterator[Finding]:
        for lesson in course.lessons if kind == "plan" else course.planned_lessons:
            file: CourseFile = getattr(lesson, kind)
            yield finding(file.path, show(lesson.id), not file.usable, id=lesson.id)

    def names_another(course: Course) -> Iterator[Finding]:
        for lesson, file in course.written(kind):
            yield finding(file.path, "lesson", file.data["lesson"] != lesson.id, x=file.data["lesson"], id=lesson.id)

    missing.__name__, names_another.__name__ = f"{prefix}001", f"{prefix}002"
    missing.__doc__, names_another.__doc__ = docs
    return (rule(f"{prefix}001", Severity.WARN, owner, f"lesson {{id}} has no {owner}")(missing),
            rule(f"{prefix}002", Severity.FAIL, owner, f"{says} says lesson '{{x}}', expected '{{id}}'")(names_another))
