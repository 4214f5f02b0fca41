"""The test helpers' remembered ``safe_load`` (tests/remembered_yaml.py) against a fresh one."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.parity.harness import examples
from tests.remembered_yaml import load_yaml

data = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20)


def _shape(value: Any, seen: dict[int, int]) -> Any:
    """The value with each container replaced by the order it was first met in, so two
    values compare equal only if they share references alike."""
    if isinstance(value, (dict, list)):
        if id(value) in seen:
            return ("shared", seen[id(value)])
        seen[id(value)] = len(seen)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return (type(value).__name__, [(k, _shape(v, seen)) for k, v in items])
    return value


@settings(max_examples=examples(300, dev=60), deadline=None)
@given(data, st.booleans())
def test_a_remembered_parse_is_a_fresh_parse_and_edits_never_reach_it(value: Any, share: bool) -> None:
    document = {"a": value, "b": value} if share else value  # shared: an anchor and an alias
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    first = load_yaml(text)
    assert _shape(first, {}) == _shape(yaml.safe_load(text), {})
    if isinstance(first, dict):
        first["edited"] = True  # a fixture's edit, then the next fixture's parse
    elif isinstance(first, list):
        first.append("edited")
    assert _shape(load_yaml(text), {}) == _shape(yaml.safe_load(text), {})


@pytest.mark.parametrize("text", ["a: [1", "- &x 1\n- *y\n", "!!python/object:os.system x", "a: b\n\tc: d\n"])
def test_a_text_that_raises_raises_each_time_as_a_fresh_parse_does(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as fresh:
        yaml.safe_load(text)
    for _ in range(2):  # the second time from memory, if it were remembered
        with pytest.raises(type(fresh.value)) as remembered:
            load_yaml(text)
        assert str(remembered.value) == str(fresh.value)

