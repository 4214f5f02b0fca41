"""Wave: a quiz item per outcome, and retrieval items for earlier terms."""

from __future__ import annotations

from stay.artefacts import Quiz
from stay.stages import _offline
from stay.stages._stage import DefinitionsInput, FileInput, LessonOutcomesInput, LessonPlanInput, Stage

STAGE = Stage(
    name="quiz", role="writing", phase="wave", scope="lesson", answer=Quiz,
    offline=_offline.quiz,
    inputs=(("plan", LessonPlanInput()), ("outcomes", LessonOutcomesInput()),
            ("audience", FileInput("audience.yaml")), ("definitions", DefinitionsInput())),
    needs=("assessment-design.md",),
    shared=("audience",),
)
