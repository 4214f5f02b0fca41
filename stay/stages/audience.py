"""Stage 1, audience: who the learners are, what they know and want, how long they have."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stay.artefacts import Artefact, Audience, DurationLimits, parse_duration
from stay.errors import AnswerError
from stay.stages import _offline
from stay.stages._stage import BriefInput, Stage


def lessons_share(made: Sequence[Artefact], inputs: Mapping[str, Any], limits: DurationLimits) -> None:
    """The budget is the lessons' share of the brief's time (``DurationLimits.lessons_share``):
    a budget of the whole time leaves exercises and the capstone none, and prc001 fails the course."""
    audience = made[0]
    assert isinstance(audience, Audience)
    minutes = parse_duration(inputs["brief"].time_available)
    share = limits.lessons_share(minutes)
    if audience.time_budget_minutes != share:
        raise AnswerError(f"stage audience (audience.yaml): time_budget_minutes is {audience.time_budget_minutes}; "
                          f"the lessons' share of {minutes} minutes is {share} ({limits.practice_percent}% is kept "
                          "for exercises and the capstone); ask again")


STAGE = Stage(
    name="audience", role="analysis", phase="design", scope="course", answer=Audience,
    offline=_offline.audience,
    inputs=(("brief", BriefInput()),),
    needs=("backward-design.md",),
    check=lessons_share,
)
