"""Stage 3, outcomes: one to four observable, Bloom-levelled outcomes per lesson."""

from __future__ import annotations

from stay.artefacts import Audience, Curriculum, Outcomes, to_data
from stay.models import ModelAnswer, ModelRequest, Role
from stay.stages._prompt import Prompts, build_request, parse_answer, reference_set

STAGE = "outcomes"
ROLE: Role = "planning"
REFERENCES = reference_set("blooms-taxonomy.md", "bloom-verbs.yaml", "course-state.md")
PATH = "outcomes.yaml"


def request(audience: Audience, curriculum: Curriculum, prompts: Prompts) -> ModelRequest:
    return build_request(stage=STAGE, role=ROLE, references=REFERENCES, prompts=prompts,
                         artefact=PATH, output=Outcomes,
                         inputs={"audience": to_data(audience), "curriculum": to_data(curriculum)})


def artefact(answer: ModelAnswer) -> Outcomes:
    return parse_answer(Outcomes, answer, STAGE, PATH)
