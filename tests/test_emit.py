"""The direct YAML emitter (stay.artefacts._emit) against PyYAML, the definition it replaces.

Wherever ``emit`` writes a document it must be PyYAML's text byte for byte; it may hand a
document back (None) only for what it says it leaves to PyYAML: a double-quoted string,
a key that needs ``?``, a float or other type, a list or dict that appears twice (an
anchor), an empty or scalar document.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.artefacts import dump_yaml
from stay.artefacts._emit import emit
from stay.artefacts._io import pyyaml_dump
from tests.parity.harness import examples

ROOT = Path(__file__).resolve().parents[1]

# Every character class analyze_scalar treats apart: indicators first and inside, the
# whitespace and breaks it looks around, the document markers' characters, printable and
# unprintable unicode (the BOM, a lone surrogate, an astral character), and letters or
# digits that start a resolver's word (true, null, 1.0, 2026-11-30, <<, =).
ALPHABET = (" \n-:#?,[]{}&*!|>'\"%@`.\t\r\x85\u2028\ufeff\xa0\x00\x7f\ud800\U0001F600é~<=+"
            "antyeoNT01_x")
WORDS = ["true", "False", "yes", "NO", "on", "Off", "null", "Null", "~", "", "1", "-1", "+1", "0x1F", "0o7",
         "017", "1_000", "1.0", ".5", "1e3", "1.0e+3", "-.inf", ".NaN", "2026-11-30", "2026-11-30 10:00:00",
         "<<", "=", "---", "...", "--- x", "... x", "- x", "-x", "? x", "?x", ": x", ":x", "x:", "x: y",
         "x:y", "x #y", "x#y", "#x", "'x'", '"x"', "it's", "a\tb", " x", "x ", "x\n", "\nx", "x\n\n",
         "\n", "\n\n", "x\n y", "x \ny", "  code\n    more\n", "\ufeffx", "x\u2028y", "x\x85y", "x\ry",
         "😀", "é", "\ud800", "a" * 122, "a" * 123, "1:30", "12:30:45", "0b101", "190:20:30"]


def _needs_pyyaml(data: Any) -> bool:
    """What the emitter leaves to PyYAML, read off PyYAML's own events and the data."""
    if type(data) not in (dict, list) or not data:
        return True
    events = list(yaml.parse(pyyaml_dump(data)))
    if any(getattr(e, "anchor", None) for e in events):
        return True
    if any(isinstance(e, yaml.ScalarEvent) and e.style == '"' for e in events):
        return True
    return _has_complex_key_or_odd_type(data)


def _has_complex_key_or_odd_type(data: Any) -> bool:
    if type(data) is dict:
        return any(type(k) is not str or not k or len(k) >= 123 or "\n" in k
                   or _has_complex_key_or_odd_type(v) for k, v in data.items())
    if type(data) is list:
        return any(_has_complex_key_or_odd_type(item) for item in data)
    return not (type(data) in (str, int, bool) or data is None)


def _agree(data: Any) -> None:
    expected = pyyaml_dump(data)
    written = emit(data)
    if written is None:
        assert _needs_pyyaml(data), f"emit left {data!r} to PyYAML, which writes it as {expected!r}"
    else:
        assert written == expected
    assert dump_yaml(data) == expected


def _contexts(text: str) -> list[Any]:
    """A string as a mapping value, a key, a sequence item, and last in a nested block."""
    return [{"k": text}, {text: 1}, [text], {"a": [{"b": text}]}, [[text], "x"]]


@pytest.mark.parametrize("text", WORDS)
def test_each_tricky_word_is_written_as_pyyaml_writes_it(text: str) -> None:
    for doc in _contexts(text):
        _agree(doc)


def test_every_short_string_of_the_characters_that_matter() -> None:
    """Exhaustive over strings of up to three characters drawn from the classes the
    scalar analysis distinguishes (2,954 strings), as a value and as a key."""
    letters = " \n-:#?'\t\x85\ufeffé.a1"
    for size in range(1, 4):
        for chars in itertools.product(letters, repeat=size):
            text = "".join(chars)
            _agree({"k": text})
            _agree({text: 1})


documents = st.recursive(
    st.none() | st.booleans() | st.integers(-2**66, 2**66) | st.sampled_from(WORDS)
    | st.text(st.sampled_from(ALPHABET), max_size=12) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(st.sampled_from(ALPHABET), max_size=6) | st.sampled_from(WORDS), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=examples(1_500, dev=150), deadline=None)
@given(documents)
def test_generated_documents_are_written_as_pyyaml_writes_them(data: Any) -> None:
    _agree(data)


@settings(max_examples=examples(300, dev=30), deadline=None)
@given(st.lists(st.text(st.sampled_from("ab \n:-#'"), max_size=8), min_size=1, max_size=3), st.booleans())
def test_a_list_that_appears_twice_is_left_to_pyyaml_for_its_anchor(items: list[str], nested: bool) -> None:
    shared = items
    doc: Any = {"a": shared, "b": shared} if not nested else [{"a": shared}, [shared]]
    assert emit(doc) is None
    assert dump_yaml(doc) == pyyaml_dump(doc) and "&id001" in dump_yaml(doc)


def test_floats_and_other_types_are_left_to_pyyaml() -> None:
    for doc in ({"x": 1.5}, [1.0], {"d": (1, 2)}, {1: "int key"}, {}, [], "scalar", 3):
        assert emit(doc) is None
        assert dump_yaml(doc) == pyyaml_dump(doc)


def _sample_files() -> list[Path]:
    return sorted(p for p in [*ROOT.glob("courses/*/**/*.yaml"), *ROOT.glob("examples/**/*.yaml")]
                  if "/." not in p.as_posix())


def test_every_sample_file_is_written_directly_and_identically() -> None:
    files = _sample_files()
    assert len(files) >= 25
    for path in files:
        data = yaml.safe_load(path.read_text())
        assert emit(data) == pyyaml_dump(data), path
