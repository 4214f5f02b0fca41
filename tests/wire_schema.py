"""The wire schema, as the Messages API enforces it: what a stage's answer can really be.

stay sends each request's answer schema through ``anthropic.transform_schema`` (every
object gets ``additionalProperties: false``; unsupported keywords move into the
description). Under structured output the API's constrained decoding can only produce
values that schema admits: a property the schema does not declare can never be written.
``fit`` turns an answer into what the model could have returned in its place: it drops
every undeclared property, recursively through ``$ref``/``$defs``, ``anyOf``/``allOf``
and array ``items``, and keeps the rest. ``check`` validates a value against the wire
schema with ``jsonschema`` (the reference implementation). ``empty_only`` finds every
place in a wire schema that admits only empty values, such as a ``dict[str, str]`` after
the transform: an object with no properties that forbids any other.

One module, used by the stage tests, the fake Messages API and the backend tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import anthropic
import jsonschema

Schema = Mapping[str, Any]


def wire(schema: Schema) -> dict[str, Any]:
    """``schema`` as the API receives it (what ``stay.models._anthropic`` sends)."""
    return anthropic.transform_schema(dict(schema))


def _resolve(schema: Schema, root: Schema) -> Schema:
    while "$ref" in schema:
        ref = schema["$ref"]
        assert isinstance(ref, str) and ref.startswith("#/$defs/"), f"unsupported $ref {ref!r}"
        schema = root["$defs"][ref.removeprefix("#/$defs/")]
    return schema


def admits(value: Any, schema: Schema, root: Schema | None = None) -> bool:
    """Whether ``value`` validates against ``schema`` (a part of ``root``)."""
    whole = dict(schema) if root is None else {**schema, "$defs": root.get("$defs", {})}
    return jsonschema.Draft202012Validator(whole).is_valid(value)


def fit(value: Any, schema: Schema, root: Schema | None = None) -> Any:
    """``value`` as constrained decoding under ``schema`` could have produced it: every
    property the schema does not declare is dropped, at every depth. Everything else is
    kept as it is (``check`` then says whether the rest is admitted)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if "anyOf" in schema:
        # the first variant whose fitted value it admits, as a decoder taking that branch would
        fitted = [fit(value, variant, root) for variant in schema["anyOf"]]
        for variant, candidate in zip(schema["anyOf"], fitted, strict=True):
            if admits(candidate, variant, root):
                return candidate
        return fitted[0]
    if "allOf" in schema:
        for part in schema["allOf"]:
            value = fit(value, part, root)
        return value
    if schema.get("type") == "object" and isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        if schema.get("additionalProperties", True) is not False:
            return {key: fit(item, properties[key], root) if key in properties else item
                    for key, item in value.items()}
        return {key: fit(item, properties[key], root) for key, item in value.items() if key in properties}
    if schema.get("type") == "array" and isinstance(value, list) and "items" in schema:
        return [fit(item, schema["items"], root) for item in value]
    return value


def check(value: Any, schema: Schema) -> list[str]:
    """Every way ``value`` breaks the wire ``schema``: '<path>: <message>' lines, sorted."""
    validator = jsonschema.Draft202012Validator(dict(schema))
    return sorted(f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
                  for error in validator.iter_errors(value))


def empty_only(schema: Schema) -> list[str]:
    """The path of every property, array item or variant of ``schema`` (a wire schema)
    that admits only empty values: an object that declares no property and forbids any
    other (only ``{}``), an array whose items admit only empty values, or a choice whose
    every non-null variant does."""
    return sorted(set(_empty_paths(schema, schema, "(root)", frozenset())))


def _empty(schema: Schema, root: Schema, seen: frozenset[str]) -> bool:
    if "$ref" in schema:
        if schema["$ref"] in seen:
            return False  # a recursive type admits its own non-empty values
        return _empty(_resolve(schema, root), root, seen | {schema["$ref"]})
    if "anyOf" in schema:
        real = [v for v in schema["anyOf"] if _resolve(v, root).get("type") != "null"]
        return bool(real) and all(_empty(v, root, seen) for v in real)
    if "enum" in schema or "const" in schema:
        return False
    if schema.get("type") == "object":
        return not schema.get("properties") and schema.get("additionalProperties", True) is False
    if schema.get("type") == "array":
        return "items" in schema and _empty(schema["items"], root, seen)
    return False


def _empty_paths(schema: Schema, root: Schema, path: str, seen: frozenset[str]) -> Iterator[str]:
    if _empty(schema, root, seen):
        yield path
        return
    if "$ref" in schema:
        if schema["$ref"] not in seen:
            yield from _empty_paths(_resolve(schema, root), root, path, seen | {schema["$ref"]})
        return
    for index, variant in enumerate(schema.get("anyOf", ())):
        yield from _empty_paths(variant, root, f"{path}|{index}", seen)
    for name, part in schema.get("properties", {}).items():
        yield from _empty_paths(part, root, f"{path}.{name}", seen)
    if "items" in schema:
        yield from _empty_paths(schema["items"], root, f"{path}[]", seen)
