"""Stage 4, assessment: how evidence of each outcome is gathered, before any lesson exists."""

from __future__ import annotations

from stay.artefacts import Assessment
from stay.stages import _offline
from stay.stages._stage import FileInput, Stage

STAGE = Stage(
    name="assessment", role="planning", phase="design", scope="course",
    answer=Assessment,
    offline=_offline.assessment,
    inputs=(("audience", FileInput("audience.yaml")), ("curriculum", FileInput("curriculum.yaml")),
            ("outcomes", FileInput("outcomes.yaml"))),
    needs=("assessment-design.md", "blooms-taxonomy.md"),
)
