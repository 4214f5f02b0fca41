"""Wave: the capstone project, beside the lessons: it needs only the plans."""

from __future__ import annotations

from stay.artefacts import Project
from stay.stages import _offline
from stay.stages._stage import AllPlansInput, BriefInput, FileInput, Stage
from stay.stages.answers import CapstoneAnswer, project

STAGE = Stage(
    name="capstone", role="planning", phase="wave", scope="course",
    answer=CapstoneAnswer,
    offline=_offline.capstone, makes=Project, make=project,
    inputs=(("brief", BriefInput()), ("audience", FileInput("audience.yaml")),
            ("curriculum", FileInput("curriculum.yaml")), ("outcomes", FileInput("outcomes.yaml")),
            ("assessment", FileInput("assessment.yaml")), ("plans", AllPlansInput())),
    needs=("capstone-design.md",),
)
