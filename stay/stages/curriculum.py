"""Stage 2, curriculum: modules and lessons, sized to the audience's time budget."""

from __future__ import annotations

from stay.artefacts import Audience, Brief, Curriculum, to_data
from stay.models import ModelAnswer, ModelRequest, Role
from stay.stages._prompt import Prompts, build_request, parse_answer, reference_set

STAGE = "curriculum"
ROLE: Role = "planning"
REFERENCES = reference_set("backward-design.md", "cognitive-load.md", "house-style.yaml",
                           "course-state.md")
PATH = "curriculum.yaml"


def request(brief: Brief, audience: Audience, prompts: Prompts) -> ModelRequest:
    return build_request(stage=STAGE, role=ROLE, references=REFERENCES, prompts=prompts,
                         artefact=PATH, output=Curriculum,
                         inputs={"brief": to_data(brief), "audience": to_data(audience)})


def artefact(answer: ModelAnswer) -> Curriculum:
    return parse_answer(Curriculum, answer, STAGE, PATH)
