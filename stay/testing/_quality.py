"""``RiggedBackend``'s quality knob: degradations the validator cannot see (each a defect a scorer's
instructions describe, in several wordings, so no judge spots it by one string), with seeded
build-to-build noise around the knob's rate on the logit scale, for testing the evals harness."""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Mapping
from typing import Any

from stay.errors import UsageError
from stay.requests import ModelRequest

QUALITY_KNOBS = ("distractors", "untaught", "exercises", "rubrics")
BUILD_NOISE = 0.5
"""The sd of a seeded build's rate around the knob's, on the logit scale: at 0.2, 0.09 to 0.39 19 times in 20."""

_GENERIC_WHY_WRONG = (
    "This option is incorrect.",
    "That is not the answer this lesson gives.",
    "The correct option is a different one.",
    "This choice is wrong for the situation described.",
    "Learners often pick this one, but it is not right.",
    "It does not match what the lesson says.",
)
_LOWER_TASKS = {
    # Tasks that ask for remembering or describing only: below apply and above.
    "remember": ("List, from memory, the main points of {t}. Write each one down in a sentence.",
                 "Name the parts of {t} that the lesson mentions, in the order they appear.",
                 "Recall how the lesson defines {t} and state it in one sentence."),
    "understand": ("Describe {t} in a short paragraph, as the lesson presents it.",
                   "Summarise the section on {t} in three sentences."),
}
_LEVELS = ("remember", "understand", "apply", "analyze", "evaluate", "create")
_DEGREE_LADDERS = (
    ("The work is excellent and thorough throughout.", "The work is strong and mostly thorough.",
     "The work is partly thorough.", "The work is weak and rarely thorough."),
    ("An outstanding, fully complete submission.", "A very solid, largely complete submission.",
     "A somewhat complete submission.", "A limited, mostly incomplete submission."),
    ("Consistently careful and highly detailed.", "Generally careful and fairly detailed.",
     "Occasionally careful and somewhat detailed.", "Rarely careful and minimally detailed."),
)


def check_knobs(quality: Mapping[str, float]) -> None:
    unknown = set(quality) - set(QUALITY_KNOBS)
    if unknown:
        raise UsageError(f"unknown quality knobs {sorted(unknown)}; known: {QUALITY_KNOBS}")
    for knob, rate in quality.items():
        if not 0.0 <= rate <= 1.0:
            raise UsageError(f"quality knob {knob}={rate}: a share of items, between 0 and 1")


def _unit(*parts: object) -> float:
    """A number in [0, 1) from a hash of ``parts``: the same parts, the same number."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def build_rate(knob: str, rate: float, seed: int | str | None, noise: float = BUILD_NOISE) -> float:
    """This build's share of degraded items: the knob's, or (seeded) a draw around it."""
    if seed is None or noise == 0.0 or rate in (0.0, 1.0):
        return rate
    z = statistics.NormalDist().inv_cdf(min(max(_unit("rate", seed, knob), 1e-12), 1 - 1e-12))
    logit = math.log(rate / (1.0 - rate)) + noise * z
    return 1.0 / (1.0 + math.exp(-logit))


def picked(knob: str, item: str, share: float, seed: int | str | None = None) -> bool:
    """Whether ``item`` is one of the ``share`` degraded by ``knob`` (in this seed's build)."""
    return (_unit(knob, item) if seed is None else _unit("item", seed, knob, item)) < share


def degrade(request: ModelRequest, data: dict[str, Any], quality: Mapping[str, float], *,
            seed: int | str | None = None, noise: float = BUILD_NOISE) -> None:
    """Make some answers worse in ways only a reader would notice; the files stay valid."""
    check_knobs(quality)
    rates = {knob: build_rate(knob, rate, seed, noise) for knob, rate in quality.items() if rate}
    if request.stage == "quiz" and "distractors" in rates:
        _distractors(data, rates["distractors"], seed)
    elif request.stage == "content" and "untaught" in rates:
        _untaught(request, data, rates["untaught"], seed)
    elif request.stage == "exercises" and "exercises" in rates:
        _exercises(request, data, rates["exercises"], seed)
    elif request.stage == "capstone" and "rubrics" in rates:
        _rubrics(data, rates["rubrics"], seed)


def _choice(options: tuple[str, ...], *parts: object) -> str:
    return options[int(_unit("wording", *parts) * len(options))]


def _distractors(data: dict[str, Any], rate: float, seed: int | str | None) -> None:
    for item in data["items"]:
        for k, option in enumerate(item.get("options") or [], 1):
            key = f"{item['id']}/{k}"
            if not option["correct"] and picked("distractors", key, rate, seed):
                option["why_wrong"] = _choice(_GENERIC_WHY_WRONG, seed, key)


def _untaught(request: ModelRequest, data: dict[str, Any], rate: float, seed: int | str | None) -> None:
    """The sections meant to teach a dropped outcome talk around it: its subject's name made vague."""
    plan = request.inputs["plan"]
    term = plan["new_terms"][0]["term"] if plan["new_terms"] else plan["title"]
    dropped = {o for s in plan["sections"] for o in s["covers"] if picked("untaught", o, rate, seed)}
    headings = {s["heading"] for s in plan["sections"] if set(s["covers"]) & dropped}
    vague = _choice(("this topic", "the idea", "it all"), seed, plan["lesson"])
    lines, inside = [], False
    for line in data["body"].split("\n"):
        if line.startswith("## "):
            inside = line[3:].strip() in headings
        elif inside and not line.startswith("#"):
            line = line.replace(term, vague)
        lines.append(line)
    data["body"] = "\n".join(lines)


def _exercises(request: ModelRequest, data: dict[str, Any], rate: float, seed: int | str | None) -> None:
    title = request.inputs["plan"]["title"]
    levels = {o["id"]: o["bloom"] for o in request.inputs.get("outcomes", [])}
    for exercise in data["exercises"]:
        level = levels.get(exercise["outcome"], exercise["bloom"])
        below = [lv for lv in _LEVELS[:_LEVELS.index(level)] if lv in _LOWER_TASKS] if level in _LEVELS else []
        if below and picked("exercises", exercise["id"], rate, seed):
            tasks = tuple(task for lv in below for task in _LOWER_TASKS[lv])
            exercise["task"] = _choice(tasks, seed, exercise["id"]).format(t=title)


def _rubrics(data: dict[str, Any], rate: float, seed: int | str | None) -> None:
    for criterion in data["rubric"]:
        ladder = _DEGREE_LADDERS[int(_unit("ladder", seed, criterion["id"]) * len(_DEGREE_LADDERS))]
        if len(criterion["levels"]) == len(ladder) and picked("rubrics", criterion["id"], rate, seed):
            criterion["levels"] = dict(zip(criterion["levels"], ladder, strict=True))
