"""Stage 1, audience: who the learners are, what they know and want, how long they have."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stay.artefacts import DEFAULT_LIMITS, Artefact, Audience, Brief, DurationLimits, parse_duration
from stay.errors import AnswerError
from stay.stages._offline import scrub, subtopics
from stay.stages._stage import Stage


def lessons_share(made: Sequence[Artefact], inputs: Mapping[str, Any], limits: DurationLimits) -> None:
    """A budget of the whole time leaves practice none, and prc001 fails the course."""
    audience = made[0]
    assert isinstance(audience, Audience)
    minutes = parse_duration(inputs["brief"].time_available)
    share = limits.lessons_share(minutes)
    if audience.time_budget_minutes != share:
        raise AnswerError(f"stage audience (audience.yaml): time_budget_minutes is {audience.time_budget_minutes}; "
                          f"the lessons' share of {minutes} minutes is {share} ({limits.practice_percent}% is kept "
                          "for exercises and the capstone); ask again")

def offline(inputs: dict[str, Any]) -> dict[str, Any]:
    brief = inputs["brief"]
    subjects = subtopics(brief["topic"])
    answer: dict[str, Any] = {
        "learners": scrub(brief["audience"]) + ".",
        "prior_knowledge": [f"The everyday context the brief describes: {scrub(brief['audience'])}."],
        "goals": [f"Use {subject} in their own work." for subject in subjects[:4]],
        "constraints": [scrub(c) + "." for c in brief.get("constraints") or []],
        "misconceptions": [f"That {subject} is learnt by reading alone, with no practice."
                           for subject in subjects[:3]],
        "time_budget_minutes": DEFAULT_LIMITS.lessons_share(parse_duration(brief["time_available"])),
    }
    return answer


STAGE = Stage(
    name="audience", role="analysis", phase="design", scope="course", answer=Audience,
    offline=offline,
    inputs=(("brief", Brief),),
    needs=("backward-design.md",),
    check=lessons_share,
)
