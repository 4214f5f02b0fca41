"""Stage 3, outcomes: one to four observable, Bloom-levelled outcomes per lesson."""

from __future__ import annotations

from stay.artefacts import Outcomes
from stay.stages import _offline
from stay.stages._stage import FileInput, Stage

STAGE = Stage(
    name="outcomes", role="planning", phase="design", scope="course", answer=Outcomes,
    offline=_offline.outcomes,
    inputs=(("audience", FileInput("audience.yaml")), ("curriculum", FileInput("curriculum.yaml"))),
    needs=("blooms-taxonomy.md",),
)
