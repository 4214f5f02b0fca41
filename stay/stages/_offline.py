"""What the stages' offline answers share: brief text made safe to reuse, and repairs, which keep
the current file and take from the fresh answer only what the defects name."""

from __future__ import annotations

import copy
import difflib
import itertools
import re
from collections.abc import Iterator, Mapping
from typing import Any

from stay.errors import UsageError
from stay.requests import OfflineAnswer

# Words house style bans from prose (prose.banned_phrases) or rubric criteria
# (rubric.vague_words); brief text is scrubbed of them before it is reused anywhere.
_SCRUB = ("simply", "obviously", "just", "easy", "easily", "of course", "trivial", "trivially",
          "everyone knows", "good", "appropriate", "adequate", "proper", "properly", "nice",
          "clear", "clearly", "sufficient", "reasonable", "satisfactory")
_SCRUB_RE = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(re.escape(w) for w in _SCRUB) + r")(?![A-Za-z0-9])",
                       re.IGNORECASE)
APPLIED = ("apply", "analyze", "evaluate", "create")  # the Bloom levels an exercise practises
PEOPLE = ("Ana Ruiz, the team lead who sets the task", "Ben Okafor, the team member who carries it out")


def scrub(text: str) -> str:
    """Brief text made safe to reuse: no banned or vague words, one line, no stray '#'."""
    text = _SCRUB_RE.sub("", " ".join(text.split()))
    text = re.sub(r"\s+([,.;:])", r"\1", text)
    return " ".join(text.replace("#", "").split()).strip(" ,;:.") or "the topic"


def subtopics(topic: str) -> list[str]:
    """The part after a colon, split on top-level commas and semicolons."""
    text = topic.split(":", 1)[1] if ":" in topic else topic
    depth, cuts = 0, [-1]
    for index, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if char in ",;" and depth <= 0:
            cuts.append(index)
    parts = [text[start + 1:end] for start, end in itertools.pairwise([*cuts, len(text)])]
    cleaned = [scrub(re.sub(r"^\s*(?:and|or)\s+", "", part)) for part in parts]
    return [part for part in cleaned if part and part != "the topic"] or [scrub(topic)]


def lessons_of(curriculum_data: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(module, lesson) for module in curriculum_data["modules"] for lesson in module["lessons"]]


def capstone_outcome(module: dict[str, Any]) -> str:
    """The outcome a module's capstone rubric row assesses: its last lesson's applied one."""
    return f"{module['lessons'][-1]['id']}-o2"


def capstone_outcomes(curriculum_data: dict[str, Any]) -> set[str]:
    return {capstone_outcome(module) for module in curriculum_data["modules"]}


_QUOTED = re.compile(r"'([^']+)'")


def answer_offline(stage: str, offline: OfflineAnswer, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A ``reviewer_note`` is not acted on: template answers cannot follow guidance, and writing
    the note into the file would pass it off as a revision (``stay revise`` says so instead)."""
    try:
        data = offline(copy.deepcopy(dict(inputs)))
        current, defects = inputs.get("current_version"), inputs.get("defects_to_fix")
        if current is not None and isinstance(defects, list):  # a repair: keep the file, fix what is named
            data = keep_file(stage, data, current, defects)
        return data  # a reviewer_note is not acted on: the pipeline's revise says so (stay.pipeline._gates)
    except KeyError as exc:
        raise UsageError(f"offline_answer: stage {stage!r} needs the input {exc.args[0]!r}; give it the "
                         "inputs its request carries (ModelRequest.inputs)") from None


def keep_file(stage: str, fresh: dict[str, Any], current: object, defects: list[Any]) -> dict[str, Any]:
    found = [d for d in defects if isinstance(d, dict)]
    if isinstance(current, str) and isinstance(fresh.get("body"), str):
        body = _keep_lines(current, fresh["body"], {p for d in found for p in _QUOTED.findall(str(d["message"]))})
        return fresh if body is None else {**fresh, "body": body}
    if not isinstance(current, dict):
        return fresh
    subjects = {str(d["subject"]).split(" ", 1)[0] for d in found}
    fixed = {item["id"]: item for item in _items(fresh) if item["id"] in subjects}
    if not fixed:
        return fresh
    kept = _patched(current, fixed)
    if "plans" in fresh and "lesson" in current:  # a module's call: this plan among the fresh others
        return {**fresh, "plans": [kept if plan.get("lesson") == current["lesson"] else plan
                                   for plan in fresh["plans"]]}
    assert isinstance(kept, dict)
    return kept


def _keep_lines(current: str, fresh: str, phrases: set[str]) -> str | None:
    """``current`` with each diff hunk that mentions one of ``phrases`` taken from ``fresh``."""
    old, new = current.splitlines(keepends=True), fresh.splitlines(keepends=True)
    patterns = [re.compile(r"(?<!\w)" + re.escape(p) + r"(?!\w)", re.IGNORECASE) for p in phrases]
    touched = {i for i, line in enumerate(old) if any(p.search(line) for p in patterns)}
    if not touched:
        return None
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        out += new[j1:j2] if tag != "equal" and touched.intersection(range(i1, i2)) else old[i1:i2]
    return "".join(out)


def _items(data: object) -> Iterator[dict[str, Any]]:
    if isinstance(data, dict):
        if isinstance(data.get("id"), str):
            yield data
        for value in data.values():
            yield from _items(value)
    elif isinstance(data, list):
        for value in data:
            yield from _items(value)


def _patched(data: object, fixed: dict[str, dict[str, Any]]) -> object:
    if isinstance(data, dict):
        if isinstance(data.get("id"), str) and data["id"] in fixed:
            return fixed[data["id"]]
        return {key: _patched(value, fixed) for key, value in data.items()}
    if isinstance(data, list):
        return [_patched(value, fixed) for value in data]
    return data


def honour_note(stage: str, data: dict[str, Any], note: str) -> dict[str, Any]:
    """The note recorded where the artefact has free text, scrubbed and cut to 25 words: a test
    double's (``stay.testing.RiggedBackend``) way to show a revision read its note."""
    said = " ".join(scrub(note).split()[:25]).rstrip(".")
    if not said:
        return data
    line = f"Revised on review: {said}."
    if stage == "audience":
        data["learners"] = f"{data['learners']} {line}"
    elif stage == "curriculum" and data.get("modules"):
        data["modules"][0]["summary"] = f"{data['modules'][0]['summary']} {line}"
    elif stage == "assessment":
        data["strategy"] = f"{data['strategy']} {line}"
    elif stage == "content":
        data["body"] = data["body"].rstrip("\n") + f"\n\n{line}\n"
    elif stage == "exercises" and data.get("exercises"):
        data["exercises"][0]["hints"] = [*data["exercises"][0]["hints"], line]
    elif stage == "quiz" and data.get("items"):
        data["items"][0]["explanation"] = f"{data['items'][0]['explanation']} {line}"
    elif stage == "capstone":
        data["brief"] = f"{data['brief']} {line}"
    return data
