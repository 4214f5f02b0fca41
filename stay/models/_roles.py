"""How each role thinks; which model plays it is a setting (``stay.settings``).

Planning gets the strongest model because every later stage inherits its
mistakes; writing a cheaper one because it runs once per lesson per artefact and
is checked mechanically afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from stay.requests import Role
from stay.settings import DEFAULT_MODELS

__all__ = ["DEFAULT_MODELS", "MIN_CACHEABLE_TOKENS", "OUTPUT_LIMIT", "SCREENING", "THINKING", "Effort", "Thinking",
           "min_cacheable_tokens", "thinks_adaptively"]

# Which model plays which role is a setting (stay.settings: DEFAULT_MODELS, and
# STAY_MODEL / STAY_MODEL_<ROLE> read once by Settings.from_env).


Effort = Literal["low", "medium", "high", "xhigh", "max"]


@dataclass(frozen=True)
class Thinking:
    """How a role thinks: adaptive thinking (``thinking={"type": "adaptive"}``) at an
    ``output_config.effort`` level, with ``room`` tokens reserved for it. Thinking tokens
    count toward ``max_tokens``, so a request asks for the answer's room plus this."""

    effort: Effort
    room: int


THINKING: Mapping[Role, Thinking] = {
    # Every later stage inherits the plan's mistakes: think hard, and leave room to.
    "planning": Thinking(effort="high", room=16_000),
    # Reading one brief into an audience: moderate reasoning.
    "analysis": Thinking(effort="medium", room=8_000),
    # Writes from a detailed plan that already did the reasoning; runs once per lesson
    # per artefact, so thinking is paid 3x per lesson. Medium, not low: effort also
    # shapes the prose, and a lesson must fill its minutes.
    "writing": Thinking(effort="medium", room=8_000),
    # One verdict per item, many items: low effort keeps judging cheap.
    "judging": Thinking(effort="low", room=4_000),
}
"""Thinking per role, set explicitly rather than left to each model's default (Opus 5.5
always thinks and defaults to medium effort; Sonnet 5.5 thinks by default at high)."""

OUTPUT_LIMIT = 64_000
"""The largest ``max_tokens`` assumed for a model the Models API has not described (its
``ModelInfo.max_tokens``, read by the up-front model check, comes first): 64,000 is the
documented output limit of Opus 4.5, Sonnet 4.5 and Haiku 4.5, and no later model stay
knows of publishes less. It bounds the one automatic retry of a cut-off answer."""

SCREENING = Thinking(effort="low", room=2_000)
"""The input screen: a classification of one brief."""

_ADAPTIVE = ("claude-opus-5", "claude-sonnet-5", "claude-haiku-5", "claude-fable-", "claude-mythos-",
             "claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-4-6")


def thinks_adaptively(model: str) -> bool:
    """Whether ``model`` takes adaptive thinking and the effort parameter (the 4.6
    generation and later). Others get neither field, so their own defaults apply."""
    return model.startswith(_ADAPTIVE)


MIN_CACHEABLE_TOKENS: Mapping[str, int] = {
    # Published by Anthropic (prompt-caching docs, "minimum cacheable prompt length"), per
    # model-id prefix; the longest matching prefix wins. 512 for the 5.5 Sonnet and Haiku and
    # for Opus 5 (issue 23's audit of the docs), and for Fable 5 and Mythos 5.
    "claude-sonnet-5-5": 512, "claude-haiku-5-5": 512, "claude-opus-5": 512,
    "claude-fable-5": 512, "claude-mythos-5": 512,
    "claude-sonnet-5": 1_024, "claude-opus-4-8": 1_024, "claude-sonnet-4": 1_024, "claude-opus-4": 1_024,
    "claude-opus-4-7": 2_048,
    "claude-opus-4-6": 4_096, "claude-opus-4-5": 4_096, "claude-haiku-4-5": 4_096,
}
"""The smallest prefix, in tokens, each model caches: a shorter one is neither written
nor read. ``claude-opus-5`` covers Opus 5 and, as no figure of its own is published,
Opus 5.5 (planning: one call a course, so a wrong guess costs one write at most)."""

UNPUBLISHED_MIN_CACHEABLE = 1_024
"""A model the table does not know: the floor of the generations before 5.5."""


def min_cacheable_tokens(model: str) -> int:
    """The minimum cacheable prefix of ``model``, in tokens (``MIN_CACHEABLE_TOKENS``)."""
    known = [prefix for prefix in MIN_CACHEABLE_TOKENS if model.startswith(prefix)]
    return MIN_CACHEABLE_TOKENS[max(known, key=len)] if known else UNPUBLISHED_MIN_CACHEABLE
