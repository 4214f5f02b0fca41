"""Stage 3, outcomes: one to four observable, Bloom-levelled outcomes per lesson."""

from __future__ import annotations

import re
from typing import Any

from stay.artefacts import Audience, Curriculum, Outcomes
from stay.stages._offline import lessons_of
from stay.stages._stage import Stage


def _outcome_safe(text: str) -> str:
    """No 'and'/'or' inside an outcome's text: each outcome is one behaviour."""
    return re.sub(r"\b(and|or)\b", lambda m: "&" if m.group(1) == "and" else "/", text)


def offline(inputs: dict[str, Any]) -> dict[str, Any]:
    found = []
    for _module, lesson in lessons_of(inputs["curriculum"]):
        subject = _outcome_safe(lesson["title"])
        found.append({"id": f"{lesson['id']}-o1", "lesson": lesson["id"], "bloom": "understand",
                      "verb": "explain", "text": f"Explain {subject} in your own words."})
        found.append({"id": f"{lesson['id']}-o2", "lesson": lesson["id"], "bloom": "apply",
                      "verb": "use", "text": f"Use {subject} on a small, realistic task."})
    return {"outcomes": found}


STAGE = Stage(
    name="outcomes", role="planning", phase="design", scope="course", answer=Outcomes,
    offline=offline,
    inputs=(("audience", Audience), ("curriculum", Curriculum)),
    needs=("blooms-taxonomy.md",),
)
