"""Test doubles for a judge: ``ScriptedJudge`` answers each request with a callable's data;
``heuristic_judge`` with keyword heuristics written from each scorer's instructions (not from how
the offline backend damages a course). They prove the harness's plumbing and statistics, not
what a model judge would say; no ``stay`` command uses them."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from stay.models import ModelRequest
from stay.scoring import JudgeReply, registered

Verdict = tuple[bool, str, str]
"""(passed, why, the quote when there is one)."""
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]+")
_STOP = {"your", "own", "words", "small", "realistic", "task", "with", "from", "that", "this", "into",
         "their", "about", "using", "when", "what", "which", "where", "there", "these", "those",
         "them", "then", "than", "have", "will", "would", "could", "should", "each", "every", "they"}
_BELIEF = re.compile(r"\b(?:confus|assum|think|thought|believ|mistak|treat|expect|suppos|imagin|conflat|equat|"
                     r"overlook|forget|forgot|ignor|misread|mix(?:es|ed|ing)? up)\w*", re.IGNORECASE)
# Degree and filler words: a level that differs from its neighbour only in these names no
# observable difference in the work.
_DEGREE = frozenset((
    "a", "an", "the", "and", "or", "but", "of", "in", "on", "at", "to", "is", "are", "be", "been", "being", "its",
    "it", "this", "that", "with", "some", "any", "excellent", "outstanding", "exemplary", "exceptional", "superb",
    "strong", "solid", "good", "great", "fair", "poor", "weak", "adequate", "sufficient", "satisfactory",
    "acceptable", "basic", "limited", "minimal", "minimally", "little", "much", "thorough", "thoroughly", "complete",
    "completely", "incomplete", "full", "fully", "partial", "partially", "partly", "mostly", "largely", "somewhat",
    "slightly", "very", "highly", "fairly", "quite", "rather", "generally", "consistently", "occasionally", "rarely",
    "often", "sometimes", "always", "never", "seldom", "usually", "frequently", "inconsistently", "many", "few",
    "most", "all", "several", "more", "less", "least", "better", "best", "worse", "worst", "high", "low", "deep",
    "shallow", "superficial", "extensive", "extensively", "considerable", "significant", "notable", "minor", "major",
    "careful", "carefully", "detailed", "clear", "clearly", "unclear", "precise", "precisely", "effective",
    "effectively", "well", "throughout", "work", "submission", "shows", "demonstrates",
))


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


def _coverage(inputs: dict[str, Any]) -> Verdict:
    outcome = inputs["outcome"]
    keys = _content(outcome["text"]) - {outcome["verb"].casefold()[:6]}
    sections = _sections(inputs["lesson"])
    where = inputs["sections_that_should_teach_it"] or list(sections)
    best, best_hits = "", 0
    for heading in where:
        for sentence in re.split(r"(?<=[.!?])\s+", sections.get(heading, "")):
            hits = len(keys & _content(sentence))
            if hits > best_hits:
                best, best_hits = sentence, hits
    teaches = bool(keys) and best_hits >= max(1, round(0.6 * len(keys)))
    return (teaches, f"heuristic: {best_hits} of {len(keys)} key words of the outcome in the best sentence "
                     "of the sections meant to teach it", best if teaches else "")


def _distractor(inputs: dict[str, Any]) -> Verdict:
    why, option = inputs["why_wrong"], inputs["wrong_option"]
    known = [m for m in inputs.get("audience_misconceptions") or [] if len(_content(m) & _content(why)) >= 2]
    belief = bool(_BELIEF.search(why)) or bool(known)
    about_option = bool(_content(option) & (_content(why) | {w for m in known for w in _content(m)}))
    return (belief and about_option,
            f"heuristic: why_wrong {'states' if belief else 'states no'} belief a learner could hold, "
            f"and {'is' if about_option else 'is not'} about what the option says", "")


@cache
def _bloom() -> tuple[Mapping[str, list[str]], tuple[str, ...]]:
    from stay.validate import HouseData, packaged_data_dir

    data = HouseData.load(packaged_data_dir())
    return data.levels, tuple(data.order)


def _instruction_levels(task: str) -> list[str]:
    """The Bloom levels of the task's instructions: each sentence's first word, when it is a
    verb of the table (its highest level when it sits at several). "Write ... down" records,
    it does not create, so it counts for nothing."""
    levels, order = _bloom()
    found = []
    for sentence in re.split(r"(?<=[.!?;:])\s+", task.strip()):
        words = [w.casefold() for w in _WORD.findall(sentence)]
        if not words or (words[0] == "write" and "down" in words):
            continue
        at = [level for level in order if words[0] in levels.get(level, [])]
        if at:
            found.append(at[-1])
    return found


def _alignment(inputs: dict[str, Any]) -> Verdict:
    outcome, exercise = inputs["outcome"], inputs["exercise"]
    _levels, order = _bloom()
    verb = outcome["verb"].casefold()
    asked = _instruction_levels(exercise["task"])
    names_verb = verb in {w.casefold() for w in _WORD.findall(exercise["task"])}
    target = order.index(outcome["bloom"]) if outcome["bloom"] in order else 0
    highest = max((order.index(level) for level in asked), default=-1)
    return (highest >= target or (names_verb and highest < 0),
            f"heuristic: the task's instructions ask for {', '.join(asked) or 'no verb of the table'}; "
            f"the outcome is '{verb}' at {outcome['bloom']}", "")


def _specificity(inputs: dict[str, Any]) -> Verdict:
    levels = [[w.casefold() for w in _WORD.findall(text)] for text in inputs["levels"].values()]
    apart = all({w for w in set(a) ^ set(b) if w not in _DEGREE} for a, b in itertools.pairwise(levels))
    ok = apart and len(levels) >= 2
    return ok, f"heuristic: each level differs from its neighbours in a word that is not a degree word: {ok}", ""


def _no_finding(_inputs: dict[str, Any]) -> Verdict:
    """A keyword cannot tell a wrong key or a contradiction (nor any other scorer's finding): it finds none."""
    return True, "heuristic: no finding (a heuristic cannot tell)", ""


_HEURISTICS: dict[str, Callable[[dict[str, Any]], Verdict]] = {
    "outcome_coverage": _coverage, "distractor_quality": _distractor, "exercise_alignment": _alignment,
    "rubric_specificity": _specificity}


@dataclass
class ScriptedJudge:
    """A judge whose every answer is ``answer(request)``'s data (None: no reply, an
    unparseable item); ``requests`` keeps what it was asked. Its name says it is no model."""

    answer: Callable[[ModelRequest], dict[str, Any] | None]
    name: str = "scripted judge (test double, not a model)"
    requests: list[ModelRequest] = field(default_factory=list, init=False, repr=False, compare=False)

    def ask(self, request: ModelRequest) -> JudgeReply:
        self.requests.append(request)
        data = self.answer(request)
        return JudgeReply(data, json.dumps(data, sort_keys=True), "scripted")


def heuristic_answer(request: ModelRequest) -> dict[str, Any] | None:
    """The keyword heuristics' answer to a judge's request (None for a scorer they do not know)."""
    name = request.stage.removeprefix("judge-")
    found = registered().get(name)
    if found is None or found.field is None:
        return None
    passed, reason, quote = _HEURISTICS.get(name, _no_finding)(request.inputs)
    return found.reply(passed, reason, **({"quote": quote} if quote else {}))


def heuristic_judge() -> ScriptedJudge:
    return ScriptedJudge(heuristic_answer, "heuristic judge (test double, not a model)")
