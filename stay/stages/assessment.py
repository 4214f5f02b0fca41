"""Stage 4, assessment: how evidence of each outcome is gathered, before any lesson exists."""

from __future__ import annotations

from stay.artefacts import Assessment, Curriculum, Outcomes, to_data
from stay.models import ModelAnswer, ModelRequest, Role
from stay.stages._prompt import Prompts, build_request, parse_answer, reference_set

STAGE = "assessment"
ROLE: Role = "planning"
REFERENCES = reference_set("assessment-design.md", "blooms-taxonomy.md", "course-state.md")
PATH = "assessment.yaml"


def request(curriculum: Curriculum, outcomes: Outcomes, prompts: Prompts) -> ModelRequest:
    return build_request(stage=STAGE, role=ROLE, references=REFERENCES, prompts=prompts,
                         artefact=PATH, output=Assessment,
                         inputs={"curriculum": to_data(curriculum), "outcomes": to_data(outcomes)})


def artefact(answer: ModelAnswer) -> Assessment:
    return parse_answer(Assessment, answer, STAGE, PATH)
