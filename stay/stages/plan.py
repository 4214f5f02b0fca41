"""Stage 5, lesson planning: every plan of one module in one call, so the module's
term budget is allocated rather than audited after the fact."""

from __future__ import annotations

from stay.artefacts import Assessment, Curriculum, LessonPlan, Module, Outcomes, to_data
from stay.errors import AnswerError
from stay.models import ModelAnswer, ModelRequest, Role
from stay.stages._prompt import Prompts, build_request, parse_answer, reference_set
from stay.stages.answers import ModulePlans

STAGE = "plan"
ROLE: Role = "planning"
REFERENCES = reference_set("cognitive-load.md", "retrieval-and-spacing.md", "example-design.md",
                           "house-style.yaml", "course-state.md")
SHARED = ("curriculum", "outcomes", "assessment")
"""Inputs every call of this stage shares in a run: sent first, and cached."""


def request(module: Module, curriculum: Curriculum, outcomes: Outcomes, assessment: Assessment,
            earlier_plans: list[LessonPlan], prompts: Prompts) -> ModelRequest:
    return build_request(
        stage=STAGE, role=ROLE, references=REFERENCES, prompts=prompts,
        artefact=f"modules/{module.id}-{module.slug}/*.plan.yaml", output=ModulePlans,
        inputs={"curriculum": to_data(curriculum), "outcomes": to_data(outcomes),
                "assessment": to_data(assessment), "module": module.id,
                "earlier_plans": [to_data(plan) for plan in earlier_plans]},
        shared=SHARED,
    )


def artefact(answer: ModelAnswer, module: Module) -> list[LessonPlan]:
    """The module's plans, one per curriculum lesson, in curriculum order."""
    plans = parse_answer(ModulePlans, answer, STAGE, f"modules/{module.id}-{module.slug}").plans
    if len(plans) != len(module.lessons):
        raise AnswerError(f"stage plan: module {module.id} has {len(module.lessons)} lessons but the "
                          f"answer holds {len(plans)} plans; ask again")
    return plans
