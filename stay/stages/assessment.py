"""Stage 4, assessment: how evidence of each outcome is gathered, before any lesson exists."""

from __future__ import annotations

from typing import Any

from stay.artefacts import Assessment, Audience, Curriculum, Outcomes
from stay.stages._offline import capstone_outcomes
from stay.stages._stage import Stage


def offline(inputs: dict[str, Any]) -> dict[str, Any]:
    capstone = capstone_outcomes(inputs["curriculum"])
    evidence = []
    for outcome in inputs["outcomes"]["outcomes"]:
        methods = ["quiz"] if outcome["bloom"] == "understand" else ["quiz", "exercise"]
        if outcome["id"] in capstone:
            methods.append("capstone")
        evidence.append({"outcome": outcome["id"], "methods": methods})
    return {"strategy": "Every outcome is checked by a quiz item. Every outcome at apply or above is "
                        "also practised in an exercise with a worked solution. The capstone assesses "
                        "the last applied outcome of each module, where the module's skills combine.",
            "evidence": evidence}


STAGE = Stage(
    name="assessment", role="planning", phase="design", scope="course",
    answer=Assessment,
    offline=offline,
    inputs=(("audience", Audience), ("curriculum", Curriculum),
            ("outcomes", Outcomes)),
    needs=("assessment-design.md", "blooms-taxonomy.md"),
)
