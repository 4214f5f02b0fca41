"""Stage 1, audience: who the learners are, what they know and want, how long they have."""

from __future__ import annotations

from stay.artefacts import Audience, Brief, to_data
from stay.models import ModelAnswer, ModelRequest, Role
from stay.stages._prompt import Prompts, build_request, parse_answer, reference_set

STAGE = "audience"
ROLE: Role = "analysis"
REFERENCES = reference_set("backward-design.md", "course-state.md")
PATH = "audience.yaml"


def request(brief: Brief, prompts: Prompts) -> ModelRequest:
    return build_request(stage=STAGE, role=ROLE, references=REFERENCES, prompts=prompts,
                         artefact=PATH, output=Audience, inputs={"brief": to_data(brief)})


def artefact(answer: ModelAnswer) -> Audience:
    return parse_answer(Audience, answer, STAGE, PATH)
