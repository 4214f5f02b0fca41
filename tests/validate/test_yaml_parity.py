"""The YAML fast path gives exactly ``yaml.safe_load``'s verdict: a differential test.

``stay.validate._text.safe_load`` parses with libyaml and hands anything libyaml may
read differently to PyYAML's pure parser (the contract's ``yaml.safe_load``). These
tests generate YAML-shaped snippets (block and flow syntax, anchors, aliases, merge
keys, tags, directives, block and quoted scalars, very long keys) salted with the
characters the parsers treat differently (tabs, byte order marks, CR, NEL, U+2028,
U+2029, C0 and C1 controls, NUL, surrogates, non-characters) and compare the value,
or the class of the error, with the pure parser's. In CI the five generators run
22,000 examples together (HYPOTHESIS_PROFILE=ci), in six tests so pytest-xdist
can spread them (about 70 s of CPU); a developer's run is a tenth.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.validate._text import _pure_only, pure_load, safe_load
from tests.parity.harness import examples

# Characters the parsers may treat differently, and characters both must reject.
SPECIAL = ["\t", "\r", "\r\n", "\ufeff", "\x85", "\u2028", "\u2029", "\x00", "\x07", "\x0b", "\x0c", "\x1b",
           "\x1c", "\x7f", "\x80", "\x9f", "\xa0", "\u3000", "\u200b", "\ud800", "\udfff", "\ufffe", "\uffff"]
SYNTAX = ["\n", "\n", " ", "  ", "    ", "- ", "-", ":", ": ", "? ", "?", "[", "]", "{", "}", ", ", ",", "#", " #",
          "# c", "&a ", "*a", "&b ", "*b", "&a", "*a:", "<<: ", "<<: *a\n", "{<<: *a}", "[*a]", "---", "...", "--- ",
          "\n...\n", "\n---\n", "%YAML 1.1\n", "%YAML 1.2\n", "%YAML 2.0\n", "%TAG !e! tag:e.com,2000:\n", "%FOO bar\n",
          "|", ">", "|-", ">+", "|2", "|1-", ": |\n  ", ": >-\n   ", "|\n  a\n b", ">\n a\n  b\n c", "|+\n\n", ">-\n  \n",
          "'", '"', "''", "\\", "\\n", "\\t", "\\x41", "\\u2028", "\\U0001F600", "\\ud800", "\\N", "\\_", "\\ ", "\\/",
          "\\e", "\\0", "\\x", "'a\n  b'", '"a\n  b"', '"\\\n b"', "!", "!!", "! ", "!<!> ", "!<>", "!!str ", "!!str,",
          "!!int ", "!!float ", "!!bool ", "!!null ", "!!binary ", "!!timestamp ", "!!set ", "!!omap ", "!!pairs ",
          "!!map ", "!!seq ", "!!merge ", "!t ", "!e!x ", "!<tag:yaml.org,2002:str> ", "!%21 ", "a", "b", "key",
          "x y", "a?b", "b?", "?c", "x:y", "a#b", "a #b", '"a":', "'a':", "[a,b]", "{a:b}", "{a: b}", "[a: b]",
          "{? a}", "[? a : b]", "{a, b}", "[,]", "{,}", "{a\n: b}", "[a\n: b]", "- ? a\n  : b", "? - a\n: - b",
          "&a a: &b b", "*a : b", "1", "0x1F", "0o7", "1_000", "1.5", "-.inf", ".nan", "1e400", "true", "yes",
          "null", "~", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "=", "@", "`", "%", "é", "😀"]
LONG = ["k" * 1020, "k" * 1030, "é" * 600, "😀" * 300]
TOKENS = SYNTAX + SPECIAL + LONG

tokens = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=30).map("".join)

FLOW = ["[", "]", "{", "}", ", ", ",", ": ", ":", "?", "? ", "a", "b?", "?c", "a?b", "x:y", "!!str", "!!str,",
        "!!int", "!a", "!", "!<!>", "&a", "*a", '"q"', "'s'", '"a":', "'a':", "\n", "\n ", " ", "\t", "-", "- ",
        "#c", " #c", "1", "null", "", "{a\n: b}", "[a\n: b]", "!e!x", "%", "\r", "\ufeff", "\u2028"]
flow = st.builds(lambda start, parts: start + "".join(parts), st.sampled_from(["", "k: ", "- ", "? "]),
                 st.lists(st.sampled_from(FLOW), min_size=1, max_size=14))

line = st.builds(lambda indent, parts: " " * indent + "".join(parts), st.sampled_from([0, 0, 1, 2, 4]),
                 st.lists(st.sampled_from(TOKENS), max_size=5))
lines = st.builds(lambda parts, brk, end: brk.join(parts) + end, st.lists(line, min_size=1, max_size=8),
                  st.sampled_from(["\n", "\r\n", "\r", "\x85", "\u2028"]), st.sampled_from(["", "\n"]))

values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=True, width=32)
    | st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(["x: y", "- a", "# no", "it's", ""]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


# A small grammar of YAML lines: mostly well formed, so the parsers get past the first
# token and disagree (if they do) on what is deep inside. Separators and comments
# are drawn with the characters the parsers treat differently among them.
separator = st.sampled_from([" "] * 8 + ["  ", "", "", "\t", " \t", "\u3000", "\xa0"])
comment = st.sampled_from(["", "", "", " #c", "#c", "\t# c", " # c"])
scalar = st.sampled_from(["a", "b c", "1", "1.5", "null", "~", "true", "'q'", "'it''s'", '"d\\n"', '"\\x41"', "a?b",
                          "x:y", "a#b", "é", "", "it's", "-1", "2001-12-14", "!", "&", "*", "%", "@a", "a,b"])
properties = st.sampled_from(["", "", "", "&a ", "!!str ", "!!int ", "! ", "!<!> ", "!t ", "!!str", "!", "&a", "!!map ",
                              "!!seq ", "!!set ", "!!binary "])


def _flow(items: list[str], mapping: bool, gaps: list[str]) -> str:
    opener, closer = ("{", "}") if mapping else ("[", "]")
    joined = ",".join(gap + item for gap, item in zip(gaps, items, strict=False))
    return opener + joined + closer


flow_node = st.recursive(
    st.builds(lambda props, value: props + value, properties, scalar),
    lambda inner: st.builds(_flow, st.lists(inner | st.builds(lambda k, s, v: k + ":" + s + v, scalar, separator, inner),
                                            max_size=3),
                            st.booleans(), st.lists(separator, min_size=3, max_size=3)),
    max_leaves=5,
)
block_header = st.builds(lambda style, chomp, digit, gap, note: style + chomp + digit + gap + note,
                         st.sampled_from(["|", ">"]), st.sampled_from(["", "-", "+"]),
                         st.sampled_from(["", "1", "2"]), separator, st.sampled_from(["", "#c", "# c"]))
node = st.one_of(
    st.builds(lambda props, value: props + value, properties, scalar),
    flow_node,
    st.builds(lambda header, body: header + "\n" + body, block_header,
              st.sampled_from(["  text\n  more", "   deeper\n  text", "\n  after blank", " one", "  a\n\n  b"])),
)
entry = st.builds(
    lambda indent, kind, key, gap, value, note: " " * indent + {"map": key + ":" + gap, "seq": "-" + gap,
                                                                "key": "?" + gap, "bare": ""}[kind] + value + note,
    st.sampled_from([0, 0, 1, 2, 4]), st.sampled_from(["map", "map", "seq", "key", "bare"]),
    st.sampled_from(["a", "b", "k", "x y", "'q'", '"d"', "<<", "? a", "&a k", "!!str k", "a", "b", "k" * 1025]),
    separator, node, comment,
)
documents = st.builds(
    lambda start, entries, brk, end: start + brk.join(entries) + end,
    st.sampled_from(["", "", "", "", "--- ", "---\n", "%YAML 1.1\n---\n", "%TAG !t! tag:e.com,2000:\n---\n", "\ufeff"]),
    st.lists(entry, min_size=1, max_size=6), st.sampled_from(["\n"] * 6 + ["\r\n", "\r", "\u2028", "\x85"]),
    st.sampled_from(["", "\n", "\n...\n", "\n---\n"]),
)


@st.composite
def damaged_documents(draw: st.DrawFn) -> str:
    """A document PyYAML wrote, with a few special characters or syntax tokens inserted or overwritten."""
    flow_style = draw(st.sampled_from([None, True, False]))
    text = yaml.safe_dump(draw(values), default_flow_style=flow_style, allow_unicode=draw(st.booleans()))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        piece = draw(st.sampled_from(SPECIAL + SYNTAX))
        text = text[:at] + piece + text[at + draw(st.integers(0, 1)):]
    return text


def _canonical(value: Any, seen: dict[int, int]) -> Any:
    """A comparable picture of a parsed value: types kept (1, 1.0 and True differ), NaN equal
    to NaN, and a shared or recursive container (an alias) shown as a back reference."""
    if isinstance(value, (dict, list, set, tuple)):
        if id(value) in seen:
            return ("ref", seen[id(value)])
        seen[id(value)] = len(seen)
    if isinstance(value, dict):
        return ("dict", tuple((_canonical(k, seen), _canonical(v, seen)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_canonical(v, seen) for v in value))
    if isinstance(value, set):
        return ("set", tuple(sorted(repr(_canonical(v, seen)) for v in value)))
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, repr(value))


def verdict(load: Any, text: str) -> tuple[str, Any]:
    """The value ``load`` gives for ``text``, or the class of the error it raises."""
    try:
        return ("value", _canonical(load(text), {}))
    except Exception as exc:  # the class is the verdict: sch001 fires on any of them
        return ("error", type(exc).__name__)


def assert_same_verdict(text: str) -> None:
    assert verdict(safe_load, text) == verdict(pure_load, text), repr(text)


@settings(max_examples=examples(3_000))
@given(documents)
def test_grammar_documents_parse_as_safe_load_does_1(text: str) -> None:
    assert_same_verdict(text)


@pytest.mark.slow  # a CI shard of the one above: the same strategy, more examples
@settings(max_examples=examples(3_000))
@given(documents)
def test_grammar_documents_parse_as_safe_load_does_2(text: str) -> None:
    assert_same_verdict(text)


@settings(max_examples=examples(4_000))
@given(tokens)
def test_token_soup_parses_as_safe_load_does(text: str) -> None:
    assert_same_verdict(text)


@settings(max_examples=examples(4_000))
@given(flow)
def test_flow_collections_parse_as_safe_load_does(text: str) -> None:
    assert_same_verdict(text)


@settings(max_examples=examples(4_000))
@given(lines)
def test_indented_lines_parse_as_safe_load_does(text: str) -> None:
    assert_same_verdict(text)


@settings(max_examples=examples(4_000))
@given(damaged_documents())
def test_damaged_documents_parse_as_safe_load_does(text: str) -> None:
    assert_same_verdict(text)


def _libyaml(text: str) -> tuple[str, Any]:
    return verdict(lambda t: yaml.load(t, Loader=yaml.CSafeLoader), text)


# One witness per reason a text is kept from libyaml: libyaml alone would get it wrong.
WITNESSES = {
    "tab after a colon": "time_budget_minutes:\t180\n",
    "tab before a comment": "a: 1\t# note\n",
    "tab after a quoted value": "a: 'x'\t\n",
    "tab in a flow mapping": "b: {\tkey: v}\n",
    "byte order mark at the start of a later line": "a: 1\n\ufeffb: 2\n",
    "NEL as a line break": "tru\x85\x85\t\n ..\n",
    "U+2029 as a line break": "\ufeff :b\u2029\t",
    "U+2028 in a plain scalar": "0x1F1.5- \\_null\\u2028: 0o72001-12-14[\\\t",
    "block scalar header straight into a comment": "|#",
    "non-specific tag on an empty node": "!",
    "verbatim non-specific tag on an empty key": "!<!> : v",
    "question mark inside a flow plain scalar": "k: {a?b}",
    "tag followed by a comma in a flow sequence": "k: [\n !!str,] ",
}


@pytest.mark.parametrize("text", WITNESSES.values(), ids=WITNESSES.keys())
def test_each_route_to_the_pure_parser_is_needed_and_taken(text: str) -> None:
    assert _libyaml(text) != verdict(pure_load, text), "libyaml agrees here: this witness shows nothing"
    assert _pure_only(text)
    assert_same_verdict(text)


def test_a_well_formed_course_file_takes_the_fast_path() -> None:
    from tests.conftest import SAMPLE

    texts = [path.read_text(encoding="utf-8") for path in sorted(SAMPLE.rglob("*.yaml"))]
    assert texts and not any(_pure_only(text) for text in texts)


def test_a_resolver_added_to_safe_loader_at_run_time_is_honoured() -> None:
    """The fast path reads SafeLoader's resolver table, so it follows yaml.safe_load
    even when a program changes that table after stay was imported."""
    import re

    had_own = "yaml_implicit_resolvers" in yaml.SafeLoader.__dict__
    saved = {key: list(value) for key, value in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    assert safe_load("bang: 1") == {"bang": 1}
    try:
        yaml.add_implicit_resolver("tag:example.com,2024:bang", re.compile(r"^bang$"), ["b"],
                                   Loader=yaml.SafeLoader)
        assert verdict(safe_load, "bang: 1") == verdict(pure_load, "bang: 1") == ("error", "ConstructorError")
    finally:
        if had_own:
            yaml.SafeLoader.yaml_implicit_resolvers = saved
        else:
            del yaml.SafeLoader.yaml_implicit_resolvers
    assert safe_load("bang: 1") == {"bang": 1}
