"""Repair says which words to change (issue 35 item 5): each defect a repair request lists
quotes, under its line, the sentence, paragraph, code block or item it names in the file
as it stands, found with the validator's own reading of the text; and the instruction
block says how the validator counts, in examples the validator is held to here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from stay.models import ModelAnswer, ModelRequest, request_params
from stay.pipeline import build_course
from stay.pipeline._run import CURRENT, DEFECTS
from stay.stages import REGENERATE, Prompts
from stay.testing import DEFECTS as INJECTABLE
from stay.validate import validate_course
from stay.validate._course import QUOTE_CHARS
from stay.validate._text import Body, count_words, show
from tests.conftest import ROOT
from tests.fixtures.rules import MUTATIONS, make_fixture
from tests.models.fake_api import inputs_of
from tests.parity.harness import reference
from tests.pipeline.test_build import quiet
from tests.pipeline.test_fix import HTTP, Recording

BLOCK = Prompts.load().template(REGENERATE)


def _subject_forms() -> list[re.Pattern[str]]:
    """The subjects the contract names by a place inside a file (``paragraph {k} sentence
    {s}``, ``{item id} option {k}``...), from the "per (subject)" column of its rules table,
    each as an expression with a group per ``{...}``."""
    forms = set()
    for line in (ROOT / "docs" / "contract" / "validator-rules.md").read_text().splitlines():
        cells = re.split(r"(?<!\\)\|", line)
        if len(cells) > 6 and re.fullmatch(r" [a-z]{2,3}[0-9]{3} ", cells[1]):
            forms.update(f for f in re.findall(r"`([^`]*)`", cells[5]) if "{" in f)
    assert forms, "no subject form with a place in the contract's rules table"
    # the longest first, so that ``paragraph {k}`` does not take a sentence's subject
    return [re.compile(re.sub(r"\\\{[^}]*\\\}", "(.+?)", re.escape(form))) for form in sorted(forms, key=len, reverse=True)]


FORMS = _subject_forms()


def _places(data: object, entry: bool = False) -> Iterator[str]:
    """Every scalar in ``data``, and every key of a mapping that is not a list's entry (an
    entry's keys are its fields), as the validator shows one in a subject."""
    if isinstance(data, dict):
        for key, value in data.items():
            if not entry:
                yield show(key)
            yield from _places(value)
    elif isinstance(data, list):
        for value in data:
            yield from _places(value, entry=True)
    else:
        yield show(data)


def _bounded(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS - 1].rstrip() + "…"


def _check_quote(current: object, defect: dict[str, Any], said: str) -> None:
    """``said`` is what ``defect`` names in ``current`` (a lesson's body, or a file's data):
    for a paragraph or sentence, the very text the frozen reference counts (and as many
    words as the message says); for a code block, its lines; for an option, its text; for
    an id, a term or a field that the data holds, the entry holding it; for the whole
    file, for something missing, or for a field of a lesson the message gives, nothing."""
    ref, subject, message = reference(), str(defect["subject"]), str(defect["message"])
    place = next((m for form in FORMS if (m := form.fullmatch(subject))), None)
    if isinstance(current, str):
        lines = ref.split_lines(current)
        if place is not None and subject.startswith("paragraph "):
            k, *s = (int(n) for n in place.groups())
            text = ref.Body(lines).paragraphs[k - 1]
            text = ref.sentences(text)[s[0] - 1] if s else text
            assert said == _bounded(text), (subject, said)
            counted = re.search(r"is ([0-9]+) words", message)
            assert counted is None or len(ref.words(text)) == int(counted[1])
        elif place is not None:  # a code block: its lines, the fences included, as they stand
            found = said.removesuffix("…").splitlines()
            assert found and any(lines[i:i + len(found)] == found for i in range(len(lines))), (subject, said)
            assert not Body.parse([*found, "```"]).code_infos[0]  # the block without a language
        elif subject == "prose":  # the prose lines holding each banned phrase
            phrases = re.findall(r"'(.+?)'(?=, '|$)", message)
            assert phrases and all(ref.mentions(said, p) for p in phrases), said
        else:
            assert said == "", (subject, said)
        return
    if place is not None:  # an option, by its place among its item's options
        item, k = place.groups()
        (options,) = [e["options"] for e in _entries(current) if e.get("id") == item]
        assert said and _option_text(options[int(k) - 1]) in said
    elif subject != "-" and subject in set(_places(current)):
        assert said and (subject in said or said.endswith("…")), (subject, said)  # a long entry's opening
    else:
        assert said == "", (subject, said)


def _option_text(option: dict[str, Any]) -> str:
    return " ".join(str(option["text"]).split())


def _entries(data: object) -> Iterator[dict[str, Any]]:
    if isinstance(data, dict):
        yield data
        for value in data.values():
            yield from _entries(value)
    elif isinstance(data, list):
        for value in data:
            yield from _entries(value)


def _as_it_stands(path: Path) -> object:
    """The file as the validator reads it: a lesson's body after its front matter, or its
    YAML data; None for a file that does not parse."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        lines = reference().split_lines(text)
        close = next((i for i in range(1, len(lines)) if lines[i] == "---"), None)
        return None if close is None else "".join(line + "\n" for line in lines[close + 1:])
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def test_the_contract_names_places_by_paragraph_sentence_code_block_and_option() -> None:
    shown = {form.pattern for form in FORMS}
    assert {re.sub(r"\(\.\+\?\)", "1", p).replace("\\ ", " ") for p in shown} >= {
        "paragraph 1", "paragraph 1 sentence 1", "code block 1", "1 option 1"}


@pytest.mark.slow
def test_every_defect_of_every_rule_fixture_quotes_the_place_it_names(tmp_path: Path) -> None:
    """Over every rule's fixture (each group's, so a rule added later is covered), every
    defect in a file that parses: its quote is what its subject names, read the
    reference's way, or nothing where the subject names no place in the file."""
    seen: set[str] = set()
    for code in MUTATIONS:
        course = make_fixture(code, tmp_path / code)
        for defect in validate_course(course).defects:
            path = course / defect.path
            current = _as_it_stands(path) if path.is_file() else None
            if current is None:
                continue
            _check_quote(current, defect.as_dict(), defect.quote(current))
            seen.update(form.pattern for form in FORMS if form.fullmatch(defect.subject))
    assert seen == {form.pattern for form in FORMS}  # every form the contract names a place by was met


class LongSentence(Recording):
    """The offline backend, but the first lesson body it writes has a paragraph before its
    first section: one sentence, with a price in it, over the house-style limit."""

    damaged = ""

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        answer = super().complete(request, model)
        if request.stage == "content" and not self.damaged and DEFECTS not in request.inputs:
            self.damaged = request.artefact
            limit = yaml.safe_load((ROOT / "data" / "house-style.yaml").read_text())["prose"]["max_sentence_words"]
            sentence = "On the first Monday the till took £1,062.00 " + "and then more " * (limit // 3) + "by noon."
            answer.data["body"] = answer.data["body"].replace("\n\n## ", f"\n\n{sentence}\n\n## ", 1)
        return answer


def test_a_repair_request_quotes_the_long_sentence_it_names_and_the_wire_carries_it(tmp_path: Path) -> None:
    backend = LongSentence()
    build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    (request,) = [r for r in backend.fixes("content") if r.artefact == backend.damaged]
    stood = request.inputs[CURRENT]
    assert isinstance(stood, str)
    (long,) = [d for d in request.inputs[DEFECTS] if d["code"] == "les008"]
    sentence = next(line for line in stood.splitlines() if "£1,062.00" in line)
    assert long["quote"] == sentence
    assert f"- les008 {long['path']} {long['subject']}: {long['message']}\n  > {sentence}\n" in request.user + "\n"
    _check_quote(stood, long, long["quote"])  # the reference counts that sentence's words as the message says
    # the fake Messages API reads the quotes back from the request's text, as the offline backend sees them
    seen = inputs_of(request_params(request, "claude-sonnet-5-5"))
    assert seen[DEFECTS] == [{k: v for k, v in d.items() if k not in ("severity", "owner")}
                             for d in request.inputs[DEFECTS]]


def test_every_defect_the_rigged_backend_injects_is_quoted_in_its_repair_request(tmp_path: Path) -> None:
    backend = Recording(defects=dict.fromkeys(INJECTABLE, 1))
    build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    fixes = [r for r in backend.seen if DEFECTS in r.inputs]
    assert {r.stage for r in fixes} == set(INJECTABLE.values())
    quoted = 0
    for request in fixes:
        for defect in request.inputs[DEFECTS]:
            said = defect.get("quote", "")
            _check_quote(request.inputs[CURRENT], defect, said)
            line = f"- {defect['code']} {defect['path']} {defect['subject']}: {defect['message']}"
            assert line + "".join(f"\n  > {q}" for q in said.splitlines()) in request.user
            quoted += bool(said)
    assert quoted


@pytest.mark.parametrize("kind", ["word", "sentence"])
def test_the_instruction_block_counts_as_the_validator_does(kind: str) -> None:
    ref = reference()
    examples = re.findall(rf"`([^`]+)`\s+(?:counts\s+)?as\s+([0-9]+)\s+{kind}s?\b", BLOCK)
    assert len(examples) >= 2
    for text, n in examples:
        if kind == "word":
            assert count_words(text) == len(ref.words(text)) == int(n), text
        else:
            assert len(ref.sentences(text)) == int(n), text
    assert "`£1,062.00` counts as 3 words" in BLOCK  # the price a blind model miscounted


def test_the_instruction_block_names_every_start_that_makes_a_block_no_paragraph() -> None:
    (said,) = [p for p in BLOCK.split("\n- ") if "is not a paragraph" in p]
    starts = re.findall(r"`([^`]+)`", said.split("is not a paragraph")[0])
    ref = reference()
    assert set(ref.NON_PARAGRAPH_STARTS) <= set(starts)  # every start the contract knows
    assert ref.Body(["Some words here."]).paragraphs == list(Body.parse(["Some words here."]).paragraphs) != []
    for start in starts:
        block = f"{start}{'' if start.endswith(' ') else ' '}Some words here."
        assert ref.Body([block]).paragraphs == list(Body.parse([block]).paragraphs) == [], start
