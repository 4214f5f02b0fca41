"""The stages: pure functions from typed inputs to a model request, and from the
model's structured answer to an artefact. No I/O, clock or randomness inside;
stages build requests and never call a model."""

from __future__ import annotations

from types import ModuleType

from stay.stages import (
    assessment,
    audience,
    capstone,
    content,
    curriculum,
    exercises,
    outcomes,
    plan,
    quiz,
)
from stay.stages._prompt import REFERENCE_NAMES, Prompts, packaged_prompts_dir, reference_set

STAGES: dict[str, ModuleType] = {
    module.STAGE: module
    for module in (audience, curriculum, outcomes, assessment, plan, content, exercises, quiz, capstone)
}
"""stage name -> its module (STAGE, ROLE, REFERENCES, request(), artefact())."""

__all__ = ["REFERENCE_NAMES", "STAGES", "Prompts", "packaged_prompts_dir", "reference_set"]
