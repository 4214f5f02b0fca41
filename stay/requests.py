"""What a stage asks a model, and what comes back: plain data, no client in sight.

A leaf module: the stages build these requests and the model layer answers them, and
neither imports the other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from stay.settings import ROLES, Role

__all__ = ["MAX_TOKENS", "ROLES", "ModelAnswer", "ModelRequest", "OfflineAnswer", "Role", "SystemBlock", "Usage"]

OfflineAnswer = Callable[[dict[str, Any]], dict[str, Any]]
"""A stage's answer with no model asked: its request's inputs as plain data to its answer
as plain data, pure (``stay.stages.Stage.answer_offline``)."""

MAX_TOKENS = 16_000
"""The room for a call's answer, in tokens. A chat model's default cap is sized for a
chat reply and is the most common cause of an artefact that fails its schema for no
visible reason: not malformed, cut off. The Claude backend adds the role's thinking
room on top (``stay.models.THINKING``); ``AnthropicBackend(answer_tokens=...)`` raises
it for every request, past the SDK's non-streaming limit if need be (such requests
stream)."""


class SystemBlock(BaseModel):
    """One block of the system prompt. ``cache`` marks a prefix worth caching: the
    blocks up to and including this one, which a later call will send again unchanged
    (a breakpoint no later call can read only pays the cache-write premium). ``label``
    names the block in explanations, e.g. what changed since a cached request."""

    model_config = ConfigDict(frozen=True)

    text: str
    cache: bool = False
    label: str = ""


class ModelRequest(BaseModel):
    """A stage's request: a pure function of the stage and its inputs.

    ``system`` holds the stable prefix (instructions, then reference documents),
    ``shared`` and ``user`` the inputs rendered for this call (those shared by every call
    of the stage first), ``inputs`` the same inputs as data (the offline backend answers
    from them; a real model reads the text).
    """

    model_config = ConfigDict(frozen=True)

    stage: str
    role: Role
    artefact: str = Field(description="The file this answer becomes, for progress and errors.")
    system: tuple[SystemBlock, ...]
    shared: str = ""
    """The start of the user message that every call of the stage in one run shares
    (e.g. the audience, for every lesson of the wave): cached after the system prompt."""
    user: str
    output_schema: dict[str, Any]
    output_name: str
    max_tokens: int = MAX_TOKENS
    inputs: dict[str, Any] = Field(default_factory=dict)
    offline: OfflineAnswer | None = Field(default=None, exclude=True, repr=False)
    """The stage's offline answer, which the offline backend answers with: carried by the
    request, since the model layer may not import the stages. Not data (never dumped, so
    never cached, sent or part of a request's key); a real model reads the text."""


Tokens = Annotated[int, Field(ge=0, strict=True)]
"""A count of tokens: a whole number, never negative, whoever reports it (the API, a
cache entry on disk), so no sum of usages can print a negative cost."""


class Usage(BaseModel):
    """Tokens one call (or a sum of calls) was billed for. Total input is input + cache
    writes + cache reads; ``thinking_tokens`` is the part of ``output_tokens`` the model
    spent thinking (already inside ``output_tokens``, never billed twice)."""

    model_config = ConfigDict(frozen=True)

    input_tokens: Tokens = 0
    output_tokens: Tokens = 0
    cache_creation_input_tokens: Tokens = 0
    cache_read_input_tokens: Tokens = 0
    thinking_tokens: Tokens = 0

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(input_tokens=self.input_tokens + other.input_tokens,
                     output_tokens=self.output_tokens + other.output_tokens,
                     cache_creation_input_tokens=self.cache_creation_input_tokens
                     + other.cache_creation_input_tokens,
                     cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
                     thinking_tokens=self.thinking_tokens + other.thinking_tokens)


class ModelAnswer(BaseModel):
    """A model's structured answer to one request."""

    model_config = ConfigDict(frozen=True)

    data: dict[str, Any]
    model: str
    usage: Usage = Usage()
    batch: bool = False
    """True when the usage was paid at the Message Batches price (half of input and
    output), so ``stay.models.cost`` prices it that way."""
    service_tier: str | None = None
    """The response's ``usage.service_tier`` (standard, priority, batch), when it said."""
    inference_geo: str | None = None
    """The response's ``usage.inference_geo`` (global, us), when it said: US-only
    inference is priced higher (``stay.models.answer_cost``)."""
    max_tokens: int | None = None
    """The ``max_tokens`` the request was sent with (its answer's room plus any thinking
    room), when a backend sent one: the trace's ``gen_ai.request.max_tokens``."""
    response_id: str | None = None
    """The response's ``id`` (``msg_...``), when it had one: the trace's
    ``gen_ai.response.id``, to find the call in the provider's console."""
    request_id: str | None = None
    """The API's ``request-id`` for the HTTP exchange that answered (``req_...``), when it
    sent one: the trace's ``stay.request_id``, what the provider's support asks for."""
    stop_reason: str | None = None
    """Why the model stopped (``end_turn``, ``max_tokens``, ``refusal``, ...), when it said:
    the trace's ``gen_ai.response.finish_reasons``."""
