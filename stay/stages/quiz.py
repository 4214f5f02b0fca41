"""Wave: a quiz item per outcome, and retrieval items for earlier terms."""

from __future__ import annotations

from stay.artefacts import Audience, LessonPlan, Outcome, Quiz, to_data
from stay.models import ModelAnswer, ModelRequest, Role
from stay.stages._prompt import Prompts, build_request, parse_answer, reference_set

STAGE = "quiz"
ROLE: Role = "writing"
REFERENCES = reference_set("house-style.yaml", "assessment-design.md", "blooms-taxonomy.md",
                           "retrieval-and-spacing.md")
SHARED = ("audience",)
"""Inputs every call of this stage shares in a run: sent first, and cached."""


def request(plan: LessonPlan, outcomes: list[Outcome], audience: Audience,
            revisited_plans: list[LessonPlan], path: str, prompts: Prompts) -> ModelRequest:
    return build_request(stage=STAGE, role=ROLE, references=REFERENCES, prompts=prompts,
                         artefact=path, output=Quiz,
                         inputs={"plan": to_data(plan),
                                 "outcomes": [to_data(outcome) for outcome in outcomes],
                                 "audience": to_data(audience),
                                 "revisited_plans": [to_data(p) for p in revisited_plans]},
                         shared=SHARED)


def artefact(answer: ModelAnswer, path: str) -> Quiz:
    return parse_answer(Quiz, answer, STAGE, path)
