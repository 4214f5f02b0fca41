"""Wave: a lesson's prose, written to its plan's sections."""

from __future__ import annotations

from stay.artefacts import Audience, LessonContent, LessonPlan, Outcome, to_data
from stay.models import ModelAnswer, ModelRequest, Role
from stay.stages._prompt import Prompts, build_request, parse_answer, reference_set
from stay.stages.answers import LessonBody

STAGE = "content"
ROLE: Role = "writing"
REFERENCES = reference_set("house-style.yaml", "example-design.md", "cognitive-load.md",
                           "course-state.md")
SHARED = ("audience",)
"""Inputs every call of this stage shares in a run: sent first, and cached."""


def request(plan: LessonPlan, outcomes: list[Outcome], audience: Audience, path: str,
            prompts: Prompts) -> ModelRequest:
    return build_request(stage=STAGE, role=ROLE, references=REFERENCES, prompts=prompts,
                         artefact=path, output=LessonBody,
                         inputs={"plan": to_data(plan),
                                 "outcomes": [to_data(outcome) for outcome in outcomes],
                                 "audience": to_data(audience)}, shared=SHARED)


def artefact(answer: ModelAnswer, plan: LessonPlan, path: str) -> LessonContent:
    body = parse_answer(LessonBody, answer, STAGE, path).body
    return LessonContent(lesson=plan.lesson, title=plan.title,
                         body=body if body.endswith("\n") else body + "\n")
