"""The offline judge: deterministic heuristics for runs without a key.

It answers the same requests a model judge gets, with the same answer shapes, so the
whole harness runs end to end in CI; and it says what it is in every result (its
name, and a "heuristic:" prefix on every reason). Never pass a heuristic off as a
model's opinion.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from stay.models import ModelRequest
from stay.scoring._core import JudgeReply

NAME = "offline heuristic judge (not a model)"
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]+")
_STOP = {"your", "own", "words", "small", "realistic", "task", "with", "from", "that", "this", "into",
         "their", "about", "using", "when", "what", "which", "where", "there", "these", "those",
         "them", "then", "than", "have", "will", "would", "could", "should"}
_GENERIC = ("not the right answer", "it is wrong", "incorrect", "wrong answer")


def _content(text: str) -> set[str]:
    return {w.casefold()[:6] for w in _WORD.findall(text) if len(w) >= 4 and w.casefold() not in _STOP}


def _sections(body: str) -> dict[str, str]:
    found: dict[str, list[str]] = {}
    current = ""
    for line in body.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            found[current] = []
        elif current and line.strip() and not line.startswith("#"):
            found[current].append(line.strip())
    return {heading: " ".join(lines) for heading, lines in found.items()}


def _coverage(inputs: dict[str, Any]) -> dict[str, Any]:
    outcome = inputs["outcome"]
    keys = _content(outcome["text"]) - {outcome["verb"].casefold()[:6]}
    sections = _sections(inputs["lesson"])
    best, best_hits = "", 0
    for heading in inputs["sections_that_should_teach_it"]:
        for sentence in re.split(r"(?<=[.!?])\s+", sections.get(heading, "")):
            hits = len(keys & _content(sentence))
            if hits > best_hits:
                best, best_hits = sentence, hits
    teaches = bool(keys) and best_hits >= max(1, round(0.6 * len(keys)))
    return {"quote": best if teaches else "", "teaches": teaches,
            "reason": f"heuristic: {best_hits} of {len(keys)} key words of the outcome in the best sentence "
                      "of the sections meant to teach it"}


def _distractor(inputs: dict[str, Any]) -> dict[str, Any]:
    why = inputs["why_wrong"]
    shared = _content(why) & _content(inputs["wrong_option"])
    generic = len(why.split()) < 5 or any(phrase in why.casefold() for phrase in _GENERIC)
    embodies = bool(shared) and not generic
    return {"embodies": embodies,
            "reason": f"heuristic: why_wrong {'is generic' if generic else 'is specific'} and shares "
                      f"{len(shared)} key words with the option"}


def _alignment(inputs: dict[str, Any]) -> dict[str, Any]:
    outcome, exercise = inputs["outcome"], inputs["exercise"]
    verb = outcome["verb"].casefold()
    asks = verb in {w.casefold() for w in _WORD.findall(exercise["task"])}
    aligned = asks and exercise["bloom"] == outcome["bloom"]
    return {"aligned": aligned,
            "reason": f"heuristic: the task {'asks' if asks else 'does not ask'} the learner to "
                      f"'{verb}', at level {exercise['bloom']} for an outcome at {outcome['bloom']}"}


def _specificity(inputs: dict[str, Any]) -> dict[str, Any]:
    levels = list(inputs["levels"].values())
    long_enough = all(len(level.split()) >= 5 for level in levels)
    apart = all(len(set(a.split()) ^ set(b.split())) >= 2 for a, b in itertools.pairwise(levels))
    distinct = len(set(levels)) == len(levels)
    ok = long_enough and apart and distinct
    return {"distinguishable": ok,
            "reason": "heuristic: levels are distinct, at least five words, and differ from their "
                      f"neighbours by at least two words: {ok}"}


_HEURISTICS = {"judge-outcome_coverage": _coverage, "judge-distractor_quality": _distractor,
               "judge-exercise_alignment": _alignment, "judge-rubric_specificity": _specificity}


class OfflineJudge:
    """Judges with heuristics; its name, in every result, says it is not a model."""

    @property
    def name(self) -> str:
        return NAME

    def ask(self, request: ModelRequest) -> JudgeReply:
        import json

        data = _HEURISTICS[request.stage](request.inputs)
        return JudgeReply(data, json.dumps(data, sort_keys=True), "offline-heuristic")
