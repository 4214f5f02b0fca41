"""Stage 2, curriculum: modules and lessons, sized to the audience's time budget."""

from __future__ import annotations

from stay.artefacts import Curriculum
from stay.stages._prompt import reference_set
from stay.stages._stage import BriefInput, FileInput, Stage

STAGE = Stage(
    name="curriculum", role="planning", phase="design", scope="course", output="curriculum.yaml",
    answer=Curriculum,
    inputs=(("brief", BriefInput()), ("audience", FileInput("audience.yaml"))),
    references=reference_set("backward-design.md", "cognitive-load.md", "house-style.yaml", "course-state.md",
                             "bloom-verbs.yaml"),
)
