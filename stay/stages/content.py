"""Wave: a lesson's prose, written to its plan's sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stay.artefacts import LessonContent
from stay.stages import _offline
from stay.stages._stage import (
    DefinitionsInput,
    EarlierLessonsInput,
    FileInput,
    LessonOutcomesInput,
    LessonPlanInput,
    Stage,
)
from stay.stages.answers import LessonBody


def _lesson(answer: LessonBody, inputs: Mapping[str, Any]) -> LessonContent:
    plan = inputs["plan"]
    body = answer.body
    return LessonContent(lesson=plan.lesson, title=plan.title, body=body if body.endswith("\n") else body + "\n")


STAGE = Stage(
    name="content", role="writing", phase="wave", scope="lesson", answer=LessonBody,
    offline=_offline.content, makes=LessonContent,
    inputs=(("plan", LessonPlanInput()), ("outcomes", LessonOutcomesInput()),
            ("audience", FileInput("audience.yaml")), ("earlier_lessons", EarlierLessonsInput()),
            ("definitions", DefinitionsInput())),
    needs=("example-design.md",),
    shared=("audience",),
    make=_lesson,
)
