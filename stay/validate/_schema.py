"""The schema table of validator-rules.md, as data, and the checker behind ``sch002``.

A field's problems read ``<field path> is missing`` or ``<field path> must be <a
type>``, listed in schema order, depth first. A required field holding null is
present (it "must be" something); an optional one that is absent or null is fine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Literal

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
    """A field from ``name`` or ``name?`` (optional), as the contract writes them."""
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
    """The schema's ``str``: a string that is non-empty after stripping."""
    return isinstance(value, str) and value.strip() != ""


def _fits(value: object, type_: Type) -> tuple[bool, str]:
    if isinstance(type_, ListOf):
        return isinstance(value, list), "list"
    if isinstance(type_, MapOf) or type_ == "map":
        return isinstance(value, dict), "map"
    if type_ == "str":
        return is_str(value), "str"
    if type_ == "int":
        return isinstance(value, int) and not isinstance(value, bool), "int"
    return isinstance(value, bool), "bool"


def problems(document: object, schema: MapOf) -> list[str]:
    """Every problem of a parsed document against ``schema``, in schema order."""
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
    """A predicate: whether a value has no problem against ``type_`` (``problems`` of it
    would be empty), compiled once per schema node into nested closures."""
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
    if type_ == "map":
        return lambda value: isinstance(value, dict)
    if type_ == "str":
        return is_str
    if type_ == "int":
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    return lambda value: isinstance(value, bool)


def _fields(mapping: dict[object, object], schema: MapOf, prefix: str, found: list[str]) -> None:
    for field in schema.fields:
        path = f"{prefix}.{field.name}" if prefix else field.name
        if field.name not in mapping:
            if not field.optional:
                found.append(f"{path} is missing")
            continue
        value = mapping[field.name]
        if value is None and field.optional:
            continue
        _value(value, field.type, path, found)


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
