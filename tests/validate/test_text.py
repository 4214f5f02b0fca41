"""The text definitions' fast readings equal the contract's expressions, on generated text.

``norm``, ``mentions`` and headings are defined in validator-rules.md by regular
expressions; the validator reads them with plain string operations (faster, and
for headings linear where the expression is quadratic). Each is held equal to the
expression it replaces on inputs hypothesis generates from the characters that
matter to it, plus any text at all.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from stay.validate._text import (
    CONTRACT_SENTENCE_BREAK,
    Body,
    _classes,
    _count,
    count_words,
    fence,
    heading,
    mentions,
    mentions_normed,
    norm,
    sentence_spans,
    sentences,
    words,
)
from tests.parity.harness import examples, plain_reference

FROZEN = plain_reference()

# Every character str.isspace() or \s knows, and neighbours that are not whitespace.
SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace() or re.fullmatch(r"\s", chr(c))]
NEAR_SPACES = ["\u200b", "\u2060", "\ufeff", "\x00", "\x1b", "\xa0", "\u180e"]


def text_of(alphabet: list[str], max_size: int = 40) -> st.SearchStrategy[str]:
    """Text mostly drawn from ``alphabet``, sometimes any text at all."""
    return st.lists(st.sampled_from(alphabet), max_size=max_size).map("".join) | st.text(max_size=max_size)


def contract_heading(line: str) -> tuple[int, str] | None:
    match = FROZEN.HEADING_RE.match(line)
    return None if match is None else (len(match.group(1)), match.group(2).strip())


HEADING_PIECES = ["#", "#", "#", "##", "#######", " ", " ", "\t", "a", "b c", "\n", "\r", "\xa0", "\u2003", "x#", "# "]


@settings(max_examples=examples(3_000))
@given(text_of(HEADING_PIECES, 16))
@example("# Title ##")
@example("## A section #")
@example("# C# ##")
@example("#\t#")
@example("#  \t ")
@example("# x\n")
@example("# x\n\n")
@example("####### seven")
def test_heading_reads_lines_as_the_contract_expression_does(line: str) -> None:
    assert heading(line) == contract_heading(line)


def test_a_100_kb_heading_line_is_read_in_one_pass() -> None:
    """Runs of blanks are where the contract's expression backtracks (over 90 s on one
    such line). Each shape is checked against the expression at a length it handles,
    and its 100 KB version against the answer the expression gives at any length."""
    n = 100_000
    shapes = [
        ("# x{} y", " ", (1, "x{} y")),        # blanks inside the text are kept
        ("# x{}#", " \t", (1, "x")),           # a closing run after blanks is dropped
        ("#{}", " ", (1, "")),                  # nothing but blanks
        ("# a{} b", " #", (1, "a{} b")),        # hashes inside the text are kept
        ("######{}x", "\t", (6, "x")),          # every blank after the marker goes
        ("# t{}", " ", (1, "t")),               # trailing blanks go
    ]
    for shape, run, (level, text) in shapes:
        short = shape.format(run * 20)
        assert heading(short) == contract_heading(short) == (level, text.format(run * 20).strip())
        assert heading(shape.format(run * (n // len(run)))) == (level, text.format(run * (n // len(run))).strip())


@settings(max_examples=examples(1_000))
@given(text_of(SPACES + NEAR_SPACES + ["a", "B", "İ", "ß", "ǅ", "Σ"]))
def test_norm_is_casefold_and_the_contract_whitespace_fold(text: str) -> None:
    assert norm(text) == FROZEN.norm(text)


MENTION_PIECES = ["a", "b", "ab", "ba", "1", "_", "-", " ", "  ", "\t", "\n", ".", "é", "A", "é", "İ", "ß", "ss"]


@settings(max_examples=examples(2_000))
@given(text_of(MENTION_PIECES, 24), text_of(MENTION_PIECES, 5))
@example("", "")
@example("ab", "")
@example("a b", "")
@example("aab ab", "ab")
@example("ab aab", "ab")
@example("abab", "ab")
def test_mentions_is_the_contract_expression(text: str, term: str) -> None:
    expected = FROZEN.mentions(text, term)
    assert mentions(text, term) is expected
    assert mentions_normed(norm(text), term) is expected


WORD_PIECES = ["a", "Bc", "1", "'", "\u2019", "-", " ", "  ", "\n", ".", "!", "?", ". ", "? ", "é", "x.y"]


@settings(max_examples=examples(3_000))
@given(text_of([*WORD_PIECES, "''", "--", "'-", "a'", "-b", "\u2019\u2019", "?", "\x00", "\ud800", "²", "٣", "ａ"], 30))
@example("a'b-c\u2019d")
@example("'a' -b- a''b a--b a'-b")
@example("rock-'n'-roll")
def test_count_words_is_the_number_of_words(text: str) -> None:
    assert count_words(text) == len(words(text))
    classes = _classes(text)
    assert len(classes) == len(text)  # one byte per character: spans index both
    for start in range(0, len(text) + 1, 3):
        for end in range(start, len(text) + 1, 2):
            assert _count(classes, start, end) == len(words(text[start:end]))


@settings(max_examples=examples(2_000))
@given(text_of([*WORD_PIECES, "...", ".!", "?\t", ".\n\n", ".\xa0", "!\u2003", " . ", "a.b"], 30))
def test_sentence_spans_are_the_contract_split(paragraph: str) -> None:
    assert [paragraph[start:end] for start, end in sentence_spans(paragraph)] == \
        CONTRACT_SENTENCE_BREAK.split(paragraph)


@settings(max_examples=examples(1_000))
@given(text_of(WORD_PIECES, 30))
def test_a_paragraphs_words_are_its_sentences_words(paragraph: str) -> None:
    """les007 counts a paragraph's words as the sum of its sentences' (les008's): a
    sentence break is whitespace, which no word holds."""
    assert len(words(paragraph)) == sum(len(words(sentence)) for sentence in sentences(paragraph))


@settings(max_examples=examples(1_000))
@given(text_of(["`", "`", "~", "~", " ", "x", "```", "~~~"], 12))
def test_fence_reads_a_line_start_as_the_contract_expression_does(start: str) -> None:
    match = FROZEN.FENCE_OPEN_RE.match(start)
    assert fence(start) == (None if match is None else match.group(1))


LINE_PIECES = ["# ", "## ", "```", "~~~", "`", "``", "- ", "1. ", "| ", "> ", "word", "two words.", " ", "\t", ""]


@settings(max_examples=examples(500))
@given(st.lists(text_of(LINE_PIECES, 6), max_size=12))
def test_body_counts_match_the_contract_definitions(lines: list[str]) -> None:
    body = Body.parse(lines)
    assert body.paragraph_words == tuple(len(words(p)) for p in body.paragraphs)
    for index, paragraph in enumerate(body.paragraphs):
        assert body.sentence_words(index) == [len(words(s)) for s in sentences(paragraph)]
        assert body.sentence_count(index) == len(sentences(paragraph))
    assert body.normed_text == norm(body.text) and body.normed_prose == norm(body.prose_text)


BODY_PIECES = [*LINE_PIECES, "### h ###", "#\t#", "####### no", "  ```py", "~~~~", "    ~~~", "`code` span", "2) two",
               "> quote", "<b>", "![img](x)", "+ item", "* item", "A sentence. Another one! A third?", "don't-stop",
               "\u2019", "é", "\xa0", "\u2028", "  ", "\t#"]


@settings(max_examples=examples(1_000))
@given(st.lists(text_of(BODY_PIECES, 5), max_size=14))
def test_body_is_the_frozen_references_body(lines: list[str]) -> None:
    """Every part of a parsed body, against the reference validator's own Body class."""
    from tests.parity.harness import reference

    ours, theirs = Body.parse(lines), reference().Body(lines)
    assert ours.headings == tuple(theirs.headings)
    assert ours.code_infos == tuple(theirs.code_infos)
    assert ours.paragraphs == tuple(theirs.paragraphs)
    assert ours.prose_words == theirs.prose_words
    assert ours.prose_text == theirs.prose_text
    assert ours.text == theirs.text
    assert ours.normed_text == reference().norm(theirs.text)
    assert ours.normed_prose == reference().norm(theirs.prose_text)
