"""Input moderation as a request like any other: counted, priced, cached, and read strictly.

There is no moderation endpoint: the documented approach is a cheap classification call
with structured output before the real work. The screen's request is a ``ModelRequest``
(stage ``moderation``), so its usage is counted and its answer is kept in the request
cache like a stage's. Its reply is read strictly: a truncated or unparseable verdict is
an error that names the screen, never read as "not flagged".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from stay.errors import AnswerError
from stay.requests import ModelAnswer, ModelRequest, SystemBlock

SCREEN_STAGE = "moderation"

SCREEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"flagged": {"type": "boolean"},
                   "reason": {"type": "string", "description": "one sentence"}},
    "required": ["flagged", "reason"],
    "additionalProperties": False,
}
SCREEN_SYSTEM = (
    "You screen course briefs before a pipeline writes a course from them. Flag a brief only "
    "when the course it asks for would teach or promote serious harm (weapons, abuse, hate, "
    "self-harm, crime) when its fields are read together; an unusual or sensitive topic taught "
    "for legitimate learning is not flagged. Answer with the JSON schema: flagged, and a "
    "one-sentence reason."
)
SCREEN_ANSWER_TOKENS = 1_000
"""Room for the verdict (a boolean and one sentence is well under 100 tokens); the
screen's thinking room (``stay.models.SCREENING``) comes on top, so thinking cannot
crowd the verdict out."""


def screen_request(text: str) -> ModelRequest:
    """The screen's request for one brief, given as one message."""
    return ModelRequest(
        stage=SCREEN_STAGE, role="analysis", artefact="the brief",
        system=(SystemBlock(text=SCREEN_SYSTEM),),
        user=f"The brief, as one message:\n\n{text}",
        output_schema=SCREEN_SCHEMA, output_name="Screen", max_tokens=SCREEN_ANSWER_TOKENS,
        inputs={"brief_text": text},
    )


def verdict(answer: ModelAnswer) -> str | None:
    """The reason to reject, or None. A reply that is not a verdict is an AnswerError."""
    flagged, reason = answer.data.get("flagged"), answer.data.get("reason")
    if not isinstance(flagged, bool) or not isinstance(reason, str):
        raise AnswerError(f"stage {SCREEN_STAGE} (the brief): the screen's reply is not a verdict "
                          f"(flagged={flagged!r}, reason={reason!r}); the brief was not screened, run the "
                          "command again", raw=str(answer.data))
    if not flagged:
        return None
    return " ".join(reason.split()) or "flagged, with no reason given"


@dataclass(frozen=True)
class Screening:
    """A screen's outcome: the reason to reject (or None), and the answer this screen paid
    for, whose usage the run counts (None when nothing was paid now: the offline backend,
    a verdict from the request cache, a replayed run)."""

    reason: str | None
    request: ModelRequest
    answer: ModelAnswer | None = None
    skipped: str | None = None
    """Why nothing screened the brief (a replay with no recorded verdict); None: screened."""


class _Screens(Protocol):
    def screen(self, text: str) -> str | None: ...


def screening_of(backend: _Screens, text: str) -> Screening:
    """``backend.screening(text)`` when the backend reports usage, else its plain ``screen``."""
    rich = getattr(backend, "screening", None)
    if callable(rich):
        found = rich(text)
        assert isinstance(found, Screening)
        return found
    return Screening(backend.screen(text), screen_request(text))
