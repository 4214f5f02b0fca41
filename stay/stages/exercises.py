"""Wave: practice for each of a lesson's outcomes at apply or above."""

from __future__ import annotations

from stay.artefacts import Audience, Exercises, LessonPlan, Outcome, to_data
from stay.models import ModelAnswer, ModelRequest, Role
from stay.stages._prompt import Prompts, build_request, parse_answer, reference_set

STAGE = "exercises"
ROLE: Role = "writing"
REFERENCES = reference_set("assessment-design.md", "blooms-taxonomy.md", "example-design.md",
                           "course-state.md")
SHARED = ("audience",)
"""Inputs every call of this stage shares in a run: sent first, and cached."""


def request(plan: LessonPlan, outcomes: list[Outcome], audience: Audience, path: str,
            prompts: Prompts) -> ModelRequest:
    return build_request(stage=STAGE, role=ROLE, references=REFERENCES, prompts=prompts,
                         artefact=path, output=Exercises,
                         inputs={"plan": to_data(plan),
                                 "outcomes": [to_data(outcome) for outcome in outcomes],
                                 "audience": to_data(audience)}, shared=SHARED)


def artefact(answer: ModelAnswer, path: str) -> Exercises:
    return parse_answer(Exercises, answer, STAGE, path)
