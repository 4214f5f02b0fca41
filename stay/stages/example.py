"""The course's running example, after the design gate and before lesson planning: one
case, its people and its data files, written once and read by every module's planning
call, so every lesson of the course works on the same case and names the same files."""

from __future__ import annotations

from stay.artefacts import CourseExample
from stay.stages import _offline
from stay.stages._stage import BriefInput, FileInput, Stage

STAGE = Stage(
    name="example", role="planning", phase="plan", scope="course", answer=CourseExample,
    offline=_offline.example,
    inputs=(("brief", BriefInput()), ("audience", FileInput("audience.yaml")),
            ("curriculum", FileInput("curriculum.yaml"))),
    needs=("example-design.md",),
)
