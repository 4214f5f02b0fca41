"""The stages: one ``Stage`` declaration each, from which the pipeline derives its graph,
the artefact graph, the dispatch and the node handlers. A stage is pure: typed inputs to
a model request, and the model's structured answer to artefacts. No I/O, clock or
randomness inside; stages build requests and never call a model.

Adding a stage: one module declaring its ``STAGE``, one line below, one prompt file."""

from __future__ import annotations

from collections.abc import Mapping

from stay.stages import assessment, audience, capstone, content, curriculum, exercises, outcomes, plan, quiz
from stay.stages._prompt import (
    REFERENCE_NAMES,
    REGENERATE,
    SHARED_TEMPLATES,
    Prompts,
    answer_schema,
    packaged_prompts_dir,
    reference_set,
    render_inputs,
)
from stay.stages._stage import (
    AllPlansInput,
    BriefInput,
    EarlierPlansInput,
    FileInput,
    LessonOutcomesInput,
    LessonPlanInput,
    ModuleIdInput,
    Phase,
    RevisitedPlansInput,
    Scope,
    Source,
    Stage,
)

REGISTRY: tuple[Stage, ...] = (
    audience.STAGE,
    curriculum.STAGE,
    outcomes.STAGE,
    assessment.STAGE,
    plan.STAGE,
    content.STAGE,
    exercises.STAGE,
    quiz.STAGE,
    capstone.STAGE,
)
"""Every stage, in the order the pipeline runs them (the design stages in this order)."""

STAGES: Mapping[str, Stage] = {stage.name: stage for stage in REGISTRY}
"""stage name -> its declaration."""

__all__ = [
    "REFERENCE_NAMES",
    "REGENERATE",
    "REGISTRY",
    "SHARED_TEMPLATES",
    "STAGES",
    "AllPlansInput",
    "BriefInput",
    "EarlierPlansInput",
    "FileInput",
    "LessonOutcomesInput",
    "LessonPlanInput",
    "ModuleIdInput",
    "Phase",
    "Prompts",
    "RevisitedPlansInput",
    "Scope",
    "Source",
    "Stage",
    "answer_schema",
    "packaged_prompts_dir",
    "reference_set",
    "render_inputs",
]
