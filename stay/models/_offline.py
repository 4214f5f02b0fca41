"""The offline backend: deterministic answers with no network, and faults on request.

It is the default when ``ANTHROPIC_API_KEY`` is unset. From any reasonable brief it
writes a complete course that passes the validator with --strict, in honest template
prose (see ``_offline_course``). For the tests of later work it can also inject
latency, errors, defects and a moderation flag.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stay.models._offline_course import ANSWERS
from stay.models._request import ModelAnswer, ModelRequest, Usage

OFFLINE_MODEL = "offline"

# Defects the backend can be asked to inject, by name: the stage whose answer they
# damage, and how. Each makes the validator fire a known rule.
DEFECTS = {
    "banned-phrase": "content",        # les009: the prose says "simply"
    "missing-why-wrong": "quiz",       # qz009: a distractor without its misconception
    "exercise-level": "exercises",     # exe005: an exercise pitched at another level
    "vague-criterion": "capstone",     # prj004: a rubric criterion that says "good"
    "banned-verb": "outcomes",         # out005: an outcome that "understands"
}


class InjectedError(RuntimeError):
    """An error the offline backend was asked to raise."""


@dataclass
class OfflineBackend:
    """Answers every stage from its inputs. ``calls`` counts requests per stage."""

    latency: float = 0.0
    """Seconds each call sleeps, to make concurrency observable."""
    errors: Mapping[str, int] = field(default_factory=dict)
    """stage -> how many of its next calls raise ``InjectedError``."""
    defects: frozenset[str] = frozenset()
    """Names from ``DEFECTS`` to inject into every answer of their stage."""
    flag: str | None = None
    """A moderation reason to flag every brief with."""
    name: str = "offline"
    calls: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _errors_left: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        unknown = set(self.defects) - set(DEFECTS)
        if unknown:
            raise ValueError(f"unknown defects {sorted(unknown)}; known: {sorted(DEFECTS)}")
        self._errors_left = dict(self.errors)

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def screen(self, text: str) -> str | None:
        return self.flag

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        with self._lock:
            self.calls[request.stage] = self.calls.get(request.stage, 0) + 1
            failing = self._errors_left.get(request.stage, 0) > 0
            if failing:
                self._errors_left[request.stage] -= 1
        if self.latency:
            time.sleep(self.latency)
        if failing:
            raise InjectedError(f"injected error in stage {request.stage} ({request.artefact})")
        data = ANSWERS[request.stage](copy.deepcopy(request.inputs))
        for defect in sorted(self.defects):
            if DEFECTS[defect] == request.stage:
                _inject(defect, data)
        words = len(request.user.split()) + sum(len(b.text.split()) for b in request.system)
        return ModelAnswer(data=data, model=OFFLINE_MODEL,
                           usage=Usage(input_tokens=words, output_tokens=len(str(data).split())))


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
    elif defect == "banned-verb":
        first = data["outcomes"][0]
        first["verb"], first["text"] = "understand", "Understand " + first["text"].split(" ", 1)[1]
