"""The offline backend rigged for tests: counted, gauged, and on request slowed down, failing,
damaged or flagging. A subclass, not a wrapper: its defects rewrite the offline generator's own
answers, and the pipeline must still treat it as offline."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stay.errors import StayError, UsageError
from stay.models import SCREEN_STAGE, ModelRequest, OfflineBackend
from stay.stages import REGISTRY, honour_note
from stay.testing._quality import BUILD_NOISE, degrade

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
    """Degradations the validator cannot see (``--stay-quality``, ``stay.testing._quality``);
    without a seed, which items are degraded is a hash of their ids."""
    seed: int | str | None = None  # seeded build-to-build noise around quality's rates
    quality_noise: float = BUILD_NOISE  # its sd on the logit scale
    calls: dict[str, int] = field(default_factory=dict)
    screened: list[str] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lessons_in_flight: dict[str, int] = field(default_factory=dict)
    most_lessons_in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _errors_left: dict[str, int] = field(default_factory=dict, repr=False)
    _defects_left: dict[str, int | None] = field(default_factory=dict, repr=False)
    _gathered: threading.Event = field(default_factory=threading.Event, repr=False)

    def __post_init__(self) -> None:
        counts = (dict(self.defects) if isinstance(self.defects, Mapping)
                  else dict.fromkeys(self.defects, None))
        unknown = set(counts) - set(DEFECTS)
        if unknown:
            raise UsageError(f"unknown defects {sorted(unknown)}; known: {sorted(DEFECTS)}")
        self._defects_left = counts
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
            inject = []
            for name, left in sorted(self._defects_left.items()):
                if DEFECTS[name] == request.stage and (left is None or left > 0):
                    inject.append(name)
                    if left is not None:
                        self._defects_left[name] = left - 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if lesson:
                self.lessons_in_flight[lesson] = self.lessons_in_flight.get(lesson, 0) + 1
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
                    self.lessons_in_flight[lesson] -= 1
                    if not self.lessons_in_flight[lesson]:
                        del self.lessons_in_flight[lesson]
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
