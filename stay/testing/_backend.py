"""The offline backend rigged for tests: counted, gauged, and on request slowed down, failing,
damaged, flagging or worse by a quality knob. A subclass, not a wrapper: its defects rewrite the
offline generator's own answers, and the pipeline must still treat it as offline."""

from __future__ import annotations

import hashlib
import math
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stay.errors import StayError, UsageError
from stay.models import SCREEN_STAGE, ModelRequest, OfflineBackend
from stay.stages import REGISTRY, honour_note

# The quality knob (--stay-quality): degradations the validator cannot see (each a defect a scorer's
# instructions describe, in several wordings, so no judge spots it by one string), with seeded
# build-to-build noise around the knob's rate on the logit scale, for testing the evals harness.
QUALITY_KNOBS = ("distractors", "untaught", "exercises", "rubrics")
BUILD_NOISE = 0.5
"""The sd of a seeded build's rate around the knob's, on the logit scale: at 0.2, 0.09 to 0.39 19 times in 20."""

# Defects the backend can be asked to inject, by name: the stage whose answer they
# damage, and how. Each makes the validator fire a known rule.
DEFECTS = {
    "banned-phrase": "content",        # les009: the prose says "simply"
    "missing-why-wrong": "quiz",       # qz009: a distractor without its misconception
    "exercise-level": "exercises",     # exe005: an exercise pitched at another level
    "vague-criterion": "capstone",     # prj004: a rubric criterion that says "good"
    "banned-verb": "outcomes",         # out005: an outcome that "understands"
    "no-retrieval": "quiz",            # ret001: no item asks about the lesson's term again
}

# what the lesson gauge counts, and what ``gather`` holds (the design stages ask one call at a time)
_WAVE_STAGES = frozenset(stage.name for stage in REGISTRY if stage.phase == "wave" and stage.scope == "lesson")
_HELD_STAGES = frozenset(stage.name for stage in REGISTRY if stage.phase == "wave")


class InjectedFault(StayError, RuntimeError):
    """A fault a test asked ``RiggedBackend`` to raise: a ``StayError``, reported in one line (exit 5)."""


@dataclass
class RiggedBackend(OfflineBackend):
    """The offline backend's answers, with what a test observes (``calls`` per stage, the in-flight
    gauges) or injects."""

    latency: float = 0.0  # seconds each call sleeps, to make concurrency observable
    gather: int = 0
    """Hold every wave call until this many are in flight at once (once), or ``gather_timeout``
    passes: a test that a cap is *reached* then does not depend on how fast threads start."""
    gather_timeout: float = 10.0
    errors: Mapping[str, int] = field(default_factory=dict)
    """stage -> how many of its next calls raise ``InjectedFault``."""
    defects: Mapping[str, int | None] | Iterable[str] = ()
    """Names from ``DEFECTS`` to inject: a mapping gives how many answers to damage (None: all)."""
    records_notes: bool = True
    """Write a revision's reviewer note into the answer, so a test sees the revision read it."""
    flag: str | None = None  # a moderation reason to flag every brief with
    quality: Mapping[str, float] = field(default_factory=dict)
    """Degradations the validator cannot see (``--stay-quality``, ``degrade``);
    without a seed, which items are degraded is a hash of their ids."""
    seed: int | str | None = None  # seeded build-to-build noise around quality's rates
    quality_noise: float = BUILD_NOISE  # its sd on the logit scale
    calls: dict[str, int] = field(default_factory=dict)
    screened: list[str] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lessons_in_flight: Counter[str] = field(default_factory=Counter)
    most_lessons_in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _errors_left: dict[str, int] = field(default_factory=dict, repr=False)
    _defects_left: dict[str, float] = field(default_factory=dict, repr=False)  # math.inf: every answer
    _gathered: threading.Event = field(default_factory=threading.Event, repr=False)

    def __post_init__(self) -> None:
        counts = (dict(self.defects) if isinstance(self.defects, Mapping)
                  else dict.fromkeys(self.defects, None))
        unknown = set(counts) - set(DEFECTS)
        if unknown:
            raise UsageError(f"unknown defects {sorted(unknown)}; known: {sorted(DEFECTS)}")
        self._defects_left = {name: math.inf if left is None else left for name, left in counts.items()}
        self._errors_left = dict(self.errors)

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def screen(self, text: str) -> str | None:
        with self._lock:
            self.screened.append(text)
        return self.flag

    def answer(self, request: ModelRequest) -> dict[str, Any]:
        lesson = _lesson_of(request)
        with self._lock:
            self.calls[request.stage] = self.calls.get(request.stage, 0) + 1
            failing = self._errors_left.get(request.stage, 0) > 0
            if failing:
                self._errors_left[request.stage] -= 1
            inject = [name for name, left in sorted(self._defects_left.items())
                      if DEFECTS[name] == request.stage and left > 0]
            for name in inject:
                self._defects_left[name] -= 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if lesson:
                self.lessons_in_flight[lesson] += 1
                self.most_lessons_in_flight = max(self.most_lessons_in_flight, len(self.lessons_in_flight))
            if self.gather and self.in_flight >= self.gather:
                self._gathered.set()
        try:
            if self.gather and request.stage in _HELD_STAGES:
                self._gathered.wait(self.gather_timeout)
            if self.latency:
                time.sleep(self.latency)
            if failing:
                raise InjectedFault(f"injected error in stage {request.stage} ({request.artefact})")
            if request.stage == SCREEN_STAGE and self.flag is not None:
                data = {"flagged": True, "reason": self.flag}
            else:
                data = super().answer(request)
                note = request.inputs.get("reviewer_note")
                if self.records_notes and isinstance(note, str):
                    data = honour_note(request.stage, data, note)
        finally:
            with self._lock:
                self.in_flight -= 1
                if lesson:
                    self.lessons_in_flight -= Counter([lesson])  # one with none left in flight is dropped
        for name in inject:
            _inject(name, data)
        if self.quality:
            degrade(request, data, self.quality, seed=self.seed, noise=self.quality_noise)
        return data


def _lesson_of(request: ModelRequest) -> str | None:
    if request.stage not in _WAVE_STAGES:
        return None
    return request.artefact.rsplit("/", 1)[-1].split(".", 1)[0]


def _inject(defect: str, data: dict[str, Any]) -> None:
    if defect == "banned-phrase":
        data["body"] = data["body"].replace("This section", "This section simply", 1)
    elif defect == "missing-why-wrong":
        for item in data["items"]:
            for option in item.get("options") or []:
                option.pop("why_wrong", None)
    elif defect == "exercise-level":
        for exercise in data["exercises"]:
            exercise["bloom"] = "create"
    elif defect == "vague-criterion":
        for criterion in data["rubric"]:
            criterion["criterion"] += " The work is good."
    elif defect == "no-retrieval":
        data["items"] = [{**item, "stem": "Which statement matches what this lesson teaches?"}
                         for item in data["items"] if item.get("outcome")]
    elif defect == "banned-verb":
        first = data["outcomes"][0]
        first["verb"], first["text"] = "understand", "Understand " + first["text"].split(" ", 1)[1]


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
