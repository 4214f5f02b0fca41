"""Answers the size a real model writes, for ``FakeMessagesAPI(realistic=Realism(seed=...))``.

The fake's plain answers are the offline backend's: template prose, shorter than a model
writes, and no thinking. ``Realism`` makes them the length a real model's are, by its own
seeded rules, so that what a realistic build bills can check ``stay estimate`` without
being computed by it (nothing here reads ``stay.pipeline._estimate``; its rules differ):

- a lesson body (an answer with a ``body``, to a request whose inputs carry the lesson's
  ``plan``) is padded with real sentences to a length drawn uniformly from house style's
  band for the plan's minutes (``prose.min_words_per_minute`` to
  ``prose.max_words_per_minute``, read from the data files as the validator reads them),
  kept ``BAND_MARGIN`` inside both ends; the padding is whole paragraphs of at most four
  sentences, each under ``prose.max_sentence_words``, spread over the sections, with no
  banned or vague word, no "and" or "or" and no term, so the lesson still passes;
- the free prose fields (``PROSE_FIELDS``: summaries, explanations, tasks, solutions and
  the like, never ids, titles, terms, outcomes or rubric text, which other checks read)
  are lengthened by a factor drawn uniformly from ``prose_factor`` each, with the same
  sentences;
- a request that thinks (``thinking`` set) spends a number of thinking tokens drawn
  uniformly from ``thinking[effort]`` (its ``output_config.effort``; medium when none).

Every draw is seeded by ``seed`` and the request's own body, so the same build against the
same seed bills the same tokens. The answer is still held to the request's wire schema.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stay.validate import HouseData, default_data_dir

SENTENCES = (
    "Read each step slowly, then say in your own words what it changed.",
    "Before you look at the result, write down what you expect to see.",
    "When the result differs from what you expected, note the difference before you change anything.",
    "A colleague reading the same evidence may see something you missed, so compare your notes.",
    "Keep a short log of what you tried, in the order you tried it.",
    "Try the step once with the example's values, then once more with values from your own work.",
    "The aim is a habit that holds up under time pressure at work.",
    "Name the next step before you take it, then check that it did what you said.",
    "Most mistakes at this point come from skipping a step, not from misreading one.",
    "If a step surprises you, go back one step and run it again.",
)
"""Real sentences for padding, each well under house style's sentence limit, with no
banned or vague word, no "and" or "or" and no term of any course."""

BAND_MARGIN = 0.05
"""How far inside house style's band a padded lesson's length is drawn, at each end: the
fake counts prose words by its own rule, which may differ from the validator's by a few."""

PROSE_FIELDS = frozenset({"learners", "strategy", "summary", "hints", "solution", "task", "setting", "brief",
                          "deliverable", "description", "explanation", "why_wrong", "answer", "reason"})
"""The free prose fields a real model writes longer, by name at any depth (the wire schema's)."""

_FENCE = re.compile(r"^(`{3,}|~{3,})")


def _prose_words(body: str) -> int:
    """Words outside headings and code fences: the prose a learner reads."""
    words, fenced = 0, False
    for line in body.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced and not line.lstrip().startswith("#"):
            words += len(line.split())
    return words


@dataclass(frozen=True)
class Realism:
    """How long a real model writes (the module docstring); seeded."""

    seed: int = 0
    prose_factor: tuple[float, float] = (1.5, 3.0)
    thinking: Mapping[str, tuple[int, int]] = field(default_factory=lambda: {
        "low": (200, 1_500), "medium": (1_000, 3_500), "high": (2_500, 7_000), "xhigh": (4_000, 10_000),
        "max": (6_000, 14_000)})

    def _rng(self, body: dict[str, Any], what: str) -> random.Random:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        return random.Random(f"{self.seed}:{what}:{digest}")

    def thought(self, body: dict[str, Any]) -> int:
        """The thinking tokens a request spends: 0 unless it thinks."""
        if not body.get("thinking"):
            return 0
        low, high = self.thinking[(body.get("output_config") or {}).get("effort") or "medium"]
        return self._rng(body, "thinking").randint(low, high)

    def answer(self, body: dict[str, Any], data: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
        """``data`` as long as a real model writes it."""
        rng = self._rng(body, "answer")
        grown = _lengthen(data, rng, self.prose_factor)
        plan = inputs.get("plan")
        if isinstance(grown, dict) and isinstance(grown.get("body"), str) and isinstance(plan, dict):
            grown["body"] = _padded(grown["body"], float(plan["minutes"]), rng)
        return grown if isinstance(grown, dict) else data


def _lengthen(data: Any, rng: random.Random, factor: tuple[float, float], name: str = "") -> Any:
    if isinstance(data, dict):
        return {key: _lengthen(value, rng, factor, key) for key, value in data.items()}
    if isinstance(data, list):
        return [_lengthen(value, rng, factor, name) for value in data]
    if isinstance(data, str) and name in PROSE_FIELDS and data.strip():
        target = len(data) * rng.uniform(*factor)
        text = data.rstrip()
        text += "" if text.endswith((".", "?", "!")) else "."
        while len(text) < target:
            text += " " + rng.choice(SENTENCES)
        return text
    return data


def _padded(body: str, minutes: float, rng: random.Random) -> str:
    """``body`` with paragraphs of real sentences added, spread over its sections, to a
    seeded length inside house style's band for ``minutes``."""
    house = HouseData.load(default_data_dir())
    low = minutes * float(house["prose.min_words_per_minute"]) * (1 + BAND_MARGIN)
    longest = int(house["prose.max_sentence_words"])
    assert all(len(s.split()) <= longest for s in SENTENCES), "a padding sentence is longer than house style allows"
    # the last paragraph may pass the drawn length by up to four sentences: drawn that far under the top
    overshoot = 4 * max(len(s.split()) for s in SENTENCES)
    high = minutes * float(house["prose.max_words_per_minute"]) * (1 - BAND_MARGIN) - overshoot
    missing = int(rng.uniform(low, high)) - _prose_words(body)
    paragraphs: list[str] = []
    while missing > 0:
        chosen = [rng.choice(SENTENCES) for _ in range(rng.randint(2, 4))]
        paragraphs.append(" ".join(chosen))
        missing -= sum(len(s.split()) for s in chosen)
    # each section (a '## ' heading and what follows) gets its share, after its own prose
    sections = re.split(r"(?m)^(?=## )", body.rstrip("\n"))
    extra: list[list[str]] = [[] for _ in sections]
    for index, paragraph in enumerate(paragraphs):
        extra[1 + index % (len(sections) - 1) if len(sections) > 1 else 0].append(paragraph)
    return "\n\n".join(section.rstrip("\n") + "".join("\n\n" + p for p in added)
                       for section, added in zip(sections, extra, strict=True)).rstrip("\n") + "\n"
