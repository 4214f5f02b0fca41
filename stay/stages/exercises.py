"""Wave: practice for each of a lesson's outcomes at apply or above."""

from __future__ import annotations

from stay.artefacts import Exercises
from stay.stages import _offline
from stay.stages._stage import DefinitionsInput, FileInput, LessonOutcomesInput, LessonPlanInput, Stage

STAGE = Stage(
    name="exercises", role="writing", phase="wave", scope="lesson",
    answer=Exercises,
    offline=_offline.exercises,
    inputs=(("plan", LessonPlanInput()), ("outcomes", LessonOutcomesInput()),
            ("audience", FileInput("audience.yaml")), ("definitions", DefinitionsInput())),
    needs=("assessment-design.md",),
    shared=("audience",),
)
