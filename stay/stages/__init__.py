"""The stages: one ``Stage`` declaration each, from which the pipeline derives its graph,
the artefact graph, the dispatch and the node handlers. A stage is pure: typed inputs to
a model request, and the model's structured answer to artefacts. No I/O, clock or
randomness inside; stages build requests and never call a model.

Adding a stage: one module declaring its ``STAGE`` (with its artefact kind and offline
answer), one line below, an input in each stage that reads it, one prompt file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stay.errors import UsageError
from stay.stages import (
    assessment,
    audience,
    capstone,
    content,
    curriculum,
    example,
    exercises,
    outcomes,
    plan,
    quiz,
    review,
)
from stay.stages._prompt import (
    REGENERATE,
    SHARED_TEMPLATES,
    Prompts,
    answer_schema,
    checked_references,
    packaged_prompts_dir,
    read_prompt,
    render_inputs,
)
from stay.stages._references import COMMON_REFERENCES
from stay.stages._stage import (
    AllPlansInput,
    DataFilesInput,
    DefinitionsInput,
    EarlierLessonsInput,
    EarlierPlansInput,
    LessonOutcomesInput,
    ModuleIdInput,
    Phase,
    Scope,
    Source,
    Stage,
    View,
    lesson_file,
)

REGISTRY: tuple[Stage, ...] = (
    audience.STAGE,
    curriculum.STAGE,
    outcomes.STAGE,
    assessment.STAGE,
    example.STAGE,
    plan.STAGE,
    content.STAGE,
    exercises.STAGE,
    quiz.STAGE,
    capstone.STAGE,
    review.STAGE,
)
"""Every stage, in the order the pipeline runs them (the design stages in this order)."""

STAGES: Mapping[str, Stage] = {stage.name: stage for stage in REGISTRY}
"""stage name -> its declaration."""


from stay.stages._offline import honour_note  # noqa: E402  (a test double's record of a note)


def offline_answer(stage: str, inputs: Mapping[str, Any], stages: Sequence[Stage] | None = None) -> dict[str, Any]:
    """The offline backend's answer for one stage, from the named inputs its request
    carries (``ModelRequest.inputs``), as plain JSON data: public, so fakes and tests
    outside stay can answer as the offline backend does (``tests/models/fake_api.py``
    serves it over HTTP). Pure and deterministic; ``inputs`` is not modified. An unknown
    stage or a missing input is a one-line UsageError naming it. ``stages`` None: the
    registry (a default help() can show)."""
    declared = {known.name: known for known in (REGISTRY if stages is None else stages)}
    if stage not in declared:
        raise UsageError(f"offline_answer: unknown stage {stage!r}; the stages are {', '.join(declared)}")
    return declared[stage].answer_offline(inputs)

__all__ = [
    "COMMON_REFERENCES",
    "REGENERATE",
    "REGISTRY",
    "SHARED_TEMPLATES",
    "STAGES",
    "AllPlansInput",
    "DataFilesInput",
    "DefinitionsInput",
    "EarlierLessonsInput",
    "EarlierPlansInput",
    "LessonOutcomesInput",
    "ModuleIdInput",
    "Phase",
    "Prompts",
    "Scope",
    "Source",
    "Stage",
    "View",
    "answer_schema",
    "checked_references",
    "honour_note",
    "lesson_file",
    "offline_answer",
    "packaged_prompts_dir",
    "read_prompt",
    "render_inputs",
]
