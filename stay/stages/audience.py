"""Stage 1, audience: who the learners are, what they know and want, how long they have."""

from __future__ import annotations

from stay.artefacts import Audience
from stay.stages import _offline
from stay.stages._stage import BriefInput, Stage

STAGE = Stage(
    name="audience", role="analysis", phase="design", scope="course", answer=Audience,
    offline=_offline.audience,
    inputs=(("brief", BriefInput()),),
    needs=("backward-design.md",),
)
