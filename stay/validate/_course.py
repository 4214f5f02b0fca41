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
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

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

Scalar = Literal["str", "int", "bool", "map"]


@dataclass(frozen=True, slots=True)
class ListOf:
    item: Type


@dataclass(frozen=True, slots=True)
class MapOf:
    fields: tuple[Field, ...]


Type = Scalar | ListOf | MapOf


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: Type
    optional: bool = False


def _f(spec: str, type_: Type) -> Field:
    return Field(spec.rstrip("?"), type_, spec.endswith("?"))


def _map(*fields: Field) -> MapOf:
    return MapOf(fields)


_STRS = ListOf("str")

SCHEMAS: dict[str, MapOf] = {
    "course": _map(
        _f("schema", "int"), _f("slug", "str"), _f("title", "str"),
        _f("brief", _map(
            _f("title", "str"), _f("topic", "str"), _f("audience", "str"),
            _f("time_available", "str"), _f("industry?", "str"), _f("constraints?", _STRS),
        )),
        _f("artefacts", "map"),
    ),
    "audience": _map(
        _f("learners", "str"), _f("prior_knowledge", _STRS), _f("goals", _STRS),
        _f("constraints?", _STRS), _f("misconceptions?", _STRS),
        _f("time_budget_minutes", "int"),
    ),
    "curriculum": _map(_f("modules", ListOf(_map(
        _f("id", "str"), _f("slug", "str"), _f("title", "str"), _f("summary", "str"),
        _f("lessons", ListOf(_map(
            _f("id", "str"), _f("title", "str"), _f("minutes", "int"), _f("summary", "str"),
        ))),
    )))),
    "outcomes": _map(_f("outcomes", ListOf(_map(
        _f("id", "str"), _f("lesson", "str"), _f("bloom", "str"), _f("verb", "str"),
        _f("text", "str"),
    )))),
    "assessment": _map(
        _f("strategy", "str"),
        _f("evidence", ListOf(_map(_f("outcome", "str"), _f("methods", _STRS)))),
    ),
    "plan": _map(
        _f("lesson", "str"), _f("title", "str"), _f("minutes", "int"), _f("outcomes", _STRS),
        _f("sections", ListOf(_map(
            _f("heading", "str"), _f("kind", "str"), _f("minutes", "int"), _f("covers", _STRS),
        ))),
        _f("new_terms", ListOf(_map(_f("term", "str"), _f("definition", "str")))),
        _f("prerequisites", _STRS), _f("revisits", _STRS),
    ),
    "exercises": _map(
        _f("lesson", "str"),
        _f("exercises", ListOf(_map(
            _f("id", "str"), _f("outcome", "str"), _f("bloom", "str"), _f("task", "str"),
            _f("hints", _STRS), _f("solution", "str"),
        ))),
    ),
    "quiz": _map(
        _f("lesson", "str"),
        _f("items", ListOf(_map(
            _f("id", "str"), _f("outcome?", "str"), _f("retrieves?", "str"), _f("type", "str"),
            _f("stem", "str"),
            _f("options?", ListOf(_map(
                _f("text", "str"), _f("correct", "bool"), _f("why_wrong?", "str"),
            ))),
            _f("answer?", "str"), _f("explanation", "str"),
        ))),
    ),
    "project": _map(
        _f("title", "str"), _f("brief", "str"), _f("deliverable", "str"),
        _f("milestones", ListOf(_map(
            _f("id", "str"), _f("title", "str"), _f("modules", _STRS), _f("description", "str"),
        ))),
        _f("rubric", ListOf(_map(
            _f("id", "str"), _f("criterion", "str"), _f("outcomes", _STRS), _f("levels", "map"),
        ))),
    ),
    "glossary": _map(_f("terms", ListOf(_map(
        _f("term", "str"), _f("definition", "str"), _f("introduced_in", "str"),
    )))),
    "md": _map(_f("lesson", "str"), _f("title", "str")),
}

_NAMES = {"str": "a string", "int": "an integer", "bool": "a boolean",
          "list": "a list", "map": "a mapping"}


def is_str(value: object) -> bool:
    return isinstance(value, str) and value.strip() != ""


_SCALARS: dict[str, Callable[[object], bool]] = {
    "str": is_str, "map": lambda value: isinstance(value, dict), "bool": lambda value: isinstance(value, bool),
    "int": lambda value: isinstance(value, int) and not isinstance(value, bool)}


def _fits(value: object, type_: Type) -> tuple[bool, str]:
    """Whether ``value`` has ``type_``'s own shape (not its items' or fields'), and the shape's name."""
    if isinstance(type_, ListOf):
        return isinstance(value, list), "list"
    name = "map" if isinstance(type_, MapOf) else type_
    return _SCALARS[name](value), name


def problems(document: object, schema: MapOf) -> list[str]:
    if fits(schema)(document):  # most files fit: skip building a path for every field
        return []
    if not isinstance(document, dict):
        return ["(root) must be a mapping"]
    found: list[str] = []
    _fields(document, schema, "", found)
    return found


Fits = Callable[[object], bool]


@cache
def fits(type_: Type) -> Fits:
    """Whether ``problems`` of a value would be empty, compiled once per schema node into closures."""
    if isinstance(type_, ListOf):
        if type_.item == "str":
            return lambda value: isinstance(value, list) and all(is_str(element) for element in value)
        item = fits(type_.item)
        return lambda value: isinstance(value, list) and all(item(element) for element in value)
    if isinstance(type_, MapOf):
        fields = tuple((field.name, field.optional, fits(field.type)) for field in type_.fields)

        def mapping(value: object) -> bool:
            if not isinstance(value, dict):
                return False
            for name, optional, check in fields:
                if name not in value:
                    if optional:
                        continue
                    return False
                element = value[name]
                if not (element is None and optional) and not check(element):
                    return False
            return True

        return mapping
    return _SCALARS[type_]


def _fields(mapping: dict[object, object], schema: MapOf, prefix: str, found: list[str]) -> None:
    for spec in schema.fields:
        path = f"{prefix}.{spec.name}" if prefix else spec.name
        if spec.name not in mapping:
            if not spec.optional:
                found.append(f"{path} is missing")
            continue
        value = mapping[spec.name]
        if value is None and spec.optional:
            continue
        _value(value, spec.type, path, found)


def _value(value: object, type_: Type, path: str, found: list[str]) -> None:
    ok, name = _fits(value, type_)
    if not ok:
        found.append(f"{path} must be {_NAMES[name]}")
    elif isinstance(type_, ListOf):
        assert isinstance(value, list)
        for index, element in enumerate(value):
            _value(element, type_.item, f"{path}[{index}]", found)
    elif isinstance(type_, MapOf):
        assert isinstance(value, dict)
        _fields(value, type_, path, found)


# The data files the rules read are the ones the writing stages are prompted with, so a stage is
# checked against the table it was told to use. A missing or short data file is a usage problem (exit 2).
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
        """What this defect names in ``current`` (its file as it stands), as written there."""
        return quote(current, self.subject, self.message)


QUOTE_CHARS = 300
"""The most characters a quote shows: a long sentence whole, a long paragraph's opening."""
_BODY_PLACE = re.compile(r"paragraph ([1-9][0-9]*)(?: sentence ([1-9][0-9]*))?|code block ([1-9][0-9]*)")
_OPTION = re.compile(r"(.+) option ([1-9][0-9]*)")
_PHRASE = re.compile(r"'(.+?)'(?=, '|$)")  # as ``quoted`` writes them, apostrophes inside included


def quote(current: object, subject: str, message: str) -> str:
    """What a defect's ``subject`` names in ``current`` (a lesson body, or a file's data), read with the
    contract's text definitions, at most ``QUOTE_CHARS`` characters; '' when it names no place there."""
    found = _body_place(current, subject, message) if isinstance(current, str) else _data_place(current, subject)
    return found if len(found) <= QUOTE_CHARS else found[:QUOTE_CHARS - 1].rstrip() + "…"


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
                course.lessons.append(Lesson(
                    len(course.lessons), module, module_dir, entry["id"], entry["title"],
                    entry["minutes"], found["plan"], found["md"], found["exercises"],
                    found["quiz"],
                ))
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
        if intro is None:
            return False
        return intro.lesson.pos <= pos if inclusive else intro.lesson.pos < pos

    @cached_property
    def planned_lessons(self) -> list[Lesson]:
        return [lesson for lesson in self.lessons if lesson.plan.usable]


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
