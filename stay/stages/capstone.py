"""Wave: the capstone project, beside the lessons: it needs only the plans."""

from __future__ import annotations

from stay.artefacts import Assessment, Curriculum, LessonPlan, Outcomes, Project, to_data
from stay.models import ModelAnswer, ModelRequest, Role
from stay.stages._prompt import Prompts, build_request, parse_answer, reference_set

STAGE = "capstone"
ROLE: Role = "planning"
REFERENCES = reference_set("capstone-design.md", "assessment-design.md", "house-style.yaml",
                           "course-state.md")
PATH = "project.yaml"


def request(curriculum: Curriculum, outcomes: Outcomes, assessment: Assessment,
            plans: list[LessonPlan], prompts: Prompts) -> ModelRequest:
    return build_request(stage=STAGE, role=ROLE, references=REFERENCES, prompts=prompts,
                         artefact=PATH, output=Project,
                         inputs={"curriculum": to_data(curriculum), "outcomes": to_data(outcomes),
                                 "assessment": to_data(assessment),
                                 "plans": [to_data(plan) for plan in plans]})


def artefact(answer: ModelAnswer) -> Project:
    return parse_answer(Project, answer, STAGE, PATH)
