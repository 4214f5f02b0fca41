"""Rendering a request's inputs: remembered plain values render exactly as afresh."""

from __future__ import annotations

import datetime
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.stages import _prompt, render_inputs
from tests.parity.harness import examples


def _fresh(value: Any) -> str:
    dumper = yaml.CSafeDumper if hasattr(yaml, "CSafeDumper") else yaml.SafeDumper
    return yaml.dump(value, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)


scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
           | st.text(max_size=30) | st.sampled_from(["1", "1.0", "true", "null", "~", "-0.0", "", " x ", "a: b"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=25)


@settings(max_examples=examples(600, dev=60), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["audience", "plan", "note"]), values), min_size=1, max_size=6))
def test_remembered_renderings_equal_fresh_ones(inputs: list[tuple[str, Any]]) -> None:
    for name, value in inputs:  # each value twice: once to remember, once from memory
        expected = f"## {name}\n\n```yaml\n{_fresh(value)}```\n"
        assert render_inputs({name: value}) == expected
        assert render_inputs({name: value}) == expected


def test_values_that_look_alike_are_told_apart() -> None:
    """Equal reprs are the only key; these pairs are equal (or print alike) and render apart."""
    pairs = [(1, 1.0), (1, True), (0, False), ("1", 1), ({"a": 1}, {"a": 1.0}), ([1], [True]),
             (-0.0, 0.0), ("None", None)]
    for left, right in pairs:
        assert render_inputs({"x": left}) == f"## x\n\n```yaml\n{_fresh(left)}```\n"
        assert render_inputs({"x": right}) == f"## x\n\n```yaml\n{_fresh(right)}```\n"
        assert render_inputs({"x": left}) != render_inputs({"x": right})


def test_values_that_are_not_plain_data_are_never_remembered() -> None:
    day = datetime.date(2026, 11, 30)
    _prompt._RENDERED.clear()
    rendered = render_inputs({"a": [day], "b": {1: "int key"}, "c": {"k": {"a set"}}, "d": [1, 2]})
    assert list(_prompt._RENDERED) == [repr([1, 2])]  # only the plain one
    assert rendered == "\n".join(f"## {name}\n\n```yaml\n{_fresh(value)}```\n" for name, value in
                                 (("a", [day]), ("b", {1: "int key"}), ("c", {"k": {"a set"}}), ("d", [1, 2])))


@settings(max_examples=examples(300, dev=40), deadline=None)
@given(st.lists(values, min_size=1, max_size=3) | st.dictionaries(st.text(max_size=8), values, min_size=1, max_size=3),
       st.booleans())
def test_a_list_or_dict_in_a_value_twice_renders_as_fresh_as_two_equal_copies(inner: Any, shared_first: bool) -> None:
    """The same object twice is written with an anchor and an alias, two equal copies
    without; their reprs are the same, so neither may be answered from the other's memory."""
    import copy

    shared, copies = {"a": inner, "b": inner}, {"a": inner, "b": copy.deepcopy(inner)}
    for value in ((shared, copies) if shared_first else (copies, shared)):
        assert render_inputs({"x": value}) == f"## x\n\n```yaml\n{_fresh(value)}```\n"
    assert _fresh(shared) != _fresh(copies)  # the case is real: the two texts differ
