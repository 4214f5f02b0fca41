"""The schema check lists exactly the frozen reference's problems, on documents generated from each
schema: mostly the right shape, with fields dropped, nulled, retyped or blank."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.validate._course import SCHEMAS, Schema, problems
from tests.parity.harness import examples, plain_reference

anything = st.none() | st.booleans() | st.integers(-2, 2) | st.floats(allow_nan=False) | st.sampled_from(
    ["", " ", "x", "\t", "0"]) | st.lists(st.sampled_from(["x", "", 1]), max_size=2) | st.dictionaries(
    st.sampled_from(["x", "id"]), st.sampled_from(["x", 1]), max_size=2)


def valid(type_: Schema) -> st.SearchStrategy[Any]:
    """Values with no problem against ``type_``."""
    if isinstance(type_, list):
        return st.lists(valid(type_[0]), max_size=3)
    if isinstance(type_, dict):
        return st.fixed_dictionaries(
            {name: valid(field) for name, field in type_.items() if not name.endswith("?")},
            optional={name[:-1]: valid(field) | st.none() for name, field in type_.items() if name.endswith("?")}
            | {"extra": anything},
        )
    if type_ == "str":
        return st.sampled_from(["text", " padded ", "0", "a\nb"])
    if type_ == "int":
        return st.integers(-3, 300)
    if type_ == "bool":
        return st.booleans()
    return st.dictionaries(st.sampled_from(["a", "b"]), anything, max_size=2)


def shaped(type_: Schema) -> st.SearchStrategy[Any]:
    """Values of ``type_``, now and then something else in their place."""
    if isinstance(type_, list):
        right: st.SearchStrategy[Any] = st.lists(shaped(type_[0]), max_size=3)
    elif isinstance(type_, dict):
        right = st.fixed_dictionaries(
            {},
            optional={name.rstrip("?"): shaped(field) | st.none() for name, field in type_.items()}
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


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_problems_are_the_references(kind: str) -> None:
    schema = SCHEMAS[kind]
    frozen = plain_reference()

    @settings(max_examples=examples(300))
    @given(valid(schema) | shaped(schema) | anything)
    def check(document: object) -> None:
        assert problems(document, schema) == frozen.schema_problems(document, frozen.SCHEMAS[kind])

    check()

