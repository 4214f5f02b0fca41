"""What the pipeline needs from a model backend: ``ModelClient`` (a name, ``complete``,
``screen``), and ``Backend``, what a plug-in registered under ``stay.backends`` must be
(a ``ModelClient`` with ``prices`` and ``features``); and the input screen, a request like
any other (counted, priced, cached) whose reply is read strictly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from stay.errors import AnswerError
from stay.requests import ModelAnswer, ModelRequest, SystemBlock

if TYPE_CHECKING:
    from stay.models._prices import Price

FEATURES = frozenset({"caching", "batches", "thinking", "count_tokens", "screen"})
"""What a backend may declare; only ``screen`` changes what a run does (without it: ``--no-screen``)."""


@runtime_checkable
class ModelClient(Protocol):
    """Answers a stage's request with structured data matching its output schema."""

    @property
    def name(self) -> str:
        """Shown in progress and recorded in the run log, e.g. 'offline' or 'anthropic'."""
        ...

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer: ...

    def screen(self, text: str) -> str | None:
        """Input moderation: a reason to reject ``text``, or None to let it through."""
        ...


@runtime_checkable
class Backend(ModelClient, Protocol):
    """A backend as a plug-in makes it. ``prices`` maps the model ids its answers name to their
    ``Price`` (a missing one is unpriced: cost "unknown", a cost cap over it refused);
    ``features`` is drawn from ``FEATURES``; ``default_models`` is optional (``getattr``)."""

    @property
    def prices(self) -> Mapping[str, Price]: ...

    @property
    def features(self) -> frozenset[str]: ...


def prices_of(backend: ModelClient) -> Mapping[str, Price]:
    """A backend's own ``prices``, or Claude's for a plain ``ModelClient`` that declares none."""
    from stay.models._prices import PRICES

    found = getattr(backend, "prices", None)
    return found if isinstance(found, Mapping) else PRICES


def can_screen(backend: ModelClient) -> bool:
    """Whether "screen" is in its ``features``; a plain ``ModelClient`` has ``screen``, so it can."""
    features = getattr(backend, "features", None)
    return features is None or "screen" in features


@runtime_checkable
class Rejecting(Protocol):
    """A backend that keeps answers (the request cache), told when one failed the asker's check
    so that it never serves it again."""

    def reject(self, request: ModelRequest, model: str, why: str) -> None: ...


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
"""Room for the verdict; the screen's thinking room comes on top, so it cannot crowd it out."""


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
    """A screen's outcome: the reason to reject (or None), and the answer paid for now, whose
    usage the run counts (None: nothing paid now)."""

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
