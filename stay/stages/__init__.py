"""The stages: one ``Stage`` declaration each, from which the pipeline derives its graphs and
handlers. Adding one: its module, a line in ``BUILTIN_STAGES`` (or a ``stay.stages`` entry point),
a prompt file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any

from stay.errors import UsageError
from stay.stages import (
    _stage,
    capstone,
    design,
    example,
    plan,
    review,
    wave,
)
from stay.stages._offline import honour_note
from stay.stages._stage import (
    COMMON_REFERENCES,
    REGENERATE,
    SHARED_TEMPLATES,
    AllPlansInput,
    DataFilesInput,
    DefinitionsInput,
    EarlierLessonsInput,
    EarlierPlansInput,
    LessonOutcomesInput,
    ModuleIdInput,
    Phase,
    Prompts,
    Scope,
    Source,
    Stage,
    View,
    answer_schema,
    checked_references,
    lesson_file,
    packaged_prompts_dir,
    read_prompt,
    render_inputs,
)

STAGE_GROUP = "stay.stages"  # a plug-in's entry point: ``name = "module:STAGE"``, its ``Stage``
BUILTIN_STAGES: tuple[Stage, ...] = (
    design.AUDIENCE, design.CURRICULUM, design.OUTCOMES, design.ASSESSMENT, example.STAGE, plan.STAGE,
    wave.CONTENT, wave.EXERCISES, wave.QUIZ, capstone.STAGE, review.STAGE)
"""stay's own stages, in the order the pipeline runs them."""


def plugged_stages() -> tuple[Stage, ...]:
    """A plug-in that fails to load, is no ``Stage`` or reuses a name is one line naming it."""
    found: list[Stage] = []
    for point in sorted(entry_points(group=STAGE_GROUP), key=lambda point: point.name):
        where = f"stage plug-in '{point.name}' (entry point {point.value})"
        try:
            stage = point.load()
        except Exception as exc:  # a plug-in's own failure, whatever it raised
            raise UsageError(f"{where} cannot be loaded: {type(exc).__name__}: {exc}") from None
        if not isinstance(stage, Stage):
            raise UsageError(f"{where} is a {type(stage).__name__}, not a stay.stages.Stage")
        if stage.name in {known.name for known in (*BUILTIN_STAGES, *found)}:
            raise UsageError(f"{where} declares stage '{stage.name}', which is taken; give it a name of its own")
        found.append(stage)
    return tuple(found)


REGISTRY: tuple[Stage, ...] = (*BUILTIN_STAGES, *plugged_stages())
"""Every stage, stay's own and then the plug-ins', in the order the pipeline runs them."""
_stage.use_registry(REGISTRY)

STAGES: Mapping[str, Stage] = {stage.name: stage for stage in REGISTRY}


def offline_answer(stage: str, inputs: Mapping[str, Any], stages: Sequence[Stage] | None = None) -> dict[str, Any]:
    """The offline backend's answer for one stage, from its request's ``inputs``, as plain JSON
    data: public, so fakes outside stay can answer as the offline backend does. ``stages`` None:
    the registry (a default help() can show)."""
    declared = {known.name: known for known in (REGISTRY if stages is None else stages)}
    if stage not in declared:
        raise UsageError(f"offline_answer: unknown stage {stage!r}; the stages are {', '.join(declared)}")
    return declared[stage].answer_offline(inputs)


__all__ = [
    "BUILTIN_STAGES", "COMMON_REFERENCES", "REGENERATE", "REGISTRY", "SHARED_TEMPLATES", "STAGES", "STAGE_GROUP",
    "AllPlansInput", "DataFilesInput", "DefinitionsInput", "EarlierLessonsInput", "EarlierPlansInput",
    "LessonOutcomesInput", "ModuleIdInput", "Phase", "Prompts", "Scope", "Source", "Stage", "View", "answer_schema",
    "checked_references", "honour_note", "lesson_file", "offline_answer", "packaged_prompts_dir", "plugged_stages",
    "read_prompt", "render_inputs",
]
