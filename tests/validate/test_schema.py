"""The schema check's fast verdict equals the full listing of problems, on generated documents.

``problems`` first asks a compiled predicate (``fits``) whether a document has any
problem at all, and builds the listing only when it has; so the predicate must say
"fits" exactly when the listing is empty. Documents are generated from each schema:
mostly the right shape, with fields dropped, nulled, retyped or blank.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.validate._course import SCHEMAS, ListOf, MapOf, Type, _fields, fits, problems
from tests.parity.harness import examples

anything = st.none() | st.booleans() | st.integers(-2, 2) | st.floats(allow_nan=False) | st.sampled_from(
    ["", " ", "x", "\t", "0"]) | st.lists(st.sampled_from(["x", "", 1]), max_size=2) | st.dictionaries(
    st.sampled_from(["x", "id"]), st.sampled_from(["x", 1]), max_size=2)


def valid(type_: Type) -> st.SearchStrategy[Any]:
    """Values with no problem against ``type_``."""
    if isinstance(type_, ListOf):
        return st.lists(valid(type_.item), max_size=3)
    if isinstance(type_, MapOf):
        return st.fixed_dictionaries(
            {field.name: valid(field.type) for field in type_.fields if not field.optional},
            optional={field.name: valid(field.type) | st.none() for field in type_.fields if field.optional}
            | {"extra": anything},
        )
    if type_ == "str":
        return st.sampled_from(["text", " padded ", "0", "a\nb"])
    if type_ == "int":
        return st.integers(-3, 300)
    if type_ == "bool":
        return st.booleans()
    return st.dictionaries(st.sampled_from(["a", "b"]), anything, max_size=2)


def shaped(type_: Type) -> st.SearchStrategy[Any]:
    """Values of ``type_``, now and then something else in their place."""
    if isinstance(type_, ListOf):
        right: st.SearchStrategy[Any] = st.lists(shaped(type_.item), max_size=3)
    elif isinstance(type_, MapOf):
        right = st.fixed_dictionaries(
            {},
            optional={field.name: shaped(field.type) | st.none() for field in type_.fields}
            | {"extra": anything},
        )
    elif type_ == "str":
        right = st.sampled_from(["text", " padded ", "", "   ", "0"])
    elif type_ == "int":
        right = st.integers(-3, 300) | st.booleans()
    elif type_ == "bool":
        right = st.booleans() | st.integers(0, 1)
    else:
        right = st.dictionaries(st.sampled_from(["a", "b"]), anything, max_size=2)
    return st.one_of(*[right] * 11, anything)


def _listing(document: object, schema: MapOf) -> list[str]:
    if not isinstance(document, dict):
        return ["(root) must be a mapping"]
    found: list[str] = []
    _fields(document, schema, "", found)
    return found


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_fits_exactly_when_there_is_no_problem(kind: str) -> None:
    schema = SCHEMAS[kind]

    @settings(max_examples=examples(300))
    @given(valid(schema) | shaped(schema) | anything)
    def check(document: object) -> None:
        listing = _listing(document, schema)
        assert fits(schema)(document) is (listing == [])
        assert problems(document, schema) == listing

    check()
