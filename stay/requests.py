"""What a stage asks a model, and what comes back: plain data. A leaf: the stages build these requests and
the model layer answers them, and neither imports the other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from stay.settings import ROLES, Role

__all__ = ["MAX_TOKENS", "ROLES", "ModelAnswer", "ModelRequest", "OfflineAnswer", "Role", "SystemBlock", "Usage"]

OfflineAnswer = Callable[[dict[str, Any]], dict[str, Any]]
"""A stage's answer with no model asked: its inputs as plain data to its answer, pure."""

MAX_TOKENS = 16_000
"""The room for a call's answer, in tokens (thinking comes on top). A chat model's default
cap is the most common cause of an artefact failing its schema for no visible reason: cut off."""


class SystemBlock(BaseModel):
    """One block of the system prompt. ``cache`` marks the blocks up to this one as a prefix a
    later call sends again (a breakpoint none reads only pays the cache-write premium)."""

    model_config = ConfigDict(frozen=True)

    text: str
    cache: bool = False
    label: str = ""


class ModelRequest(BaseModel):
    """A stage's request: a pure function of the stage and its inputs. ``system`` is the stable
    prefix, ``shared`` and ``user`` the rendered inputs, ``inputs`` the same as data (for offline)."""

    model_config = ConfigDict(frozen=True)

    stage: str
    role: Role
    artefact: str = Field(description="The file this answer becomes, for progress and errors.")
    system: tuple[SystemBlock, ...]
    shared: str = ""
    """The start of the user message every call of the stage in one run shares: cached after the system."""
    user: str
    output_schema: dict[str, Any]
    output_name: str
    max_tokens: int = MAX_TOKENS
    inputs: dict[str, Any] = Field(default_factory=dict)
    offline: OfflineAnswer | None = Field(default=None, exclude=True, repr=False)
    """The stage's offline answer (the model layer may not import the stages); never dumped, sent or keyed."""


Tokens = Annotated[int, Field(ge=0, strict=True)]
"""A whole number, never negative, whoever reports it: no sum of usages prints a negative cost."""


class Usage(BaseModel):
    """Tokens one call (or a sum) was billed for: input + cache writes + cache reads; ``thinking_tokens`` is
    inside ``output_tokens``, never billed twice."""

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
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields})


class ModelAnswer(BaseModel):
    """A model's structured answer to one request."""

    model_config = ConfigDict(frozen=True)

    data: dict[str, Any]
    model: str
    usage: Usage = Usage()
    batch: bool = False
    """Paid at the Message Batches price (half of input and output)."""
    service_tier: str | None = None  # the response's usage.service_tier, when it said
    inference_geo: str | None = None  # global or us, when it said: US-only inference is priced higher
    max_tokens: int | None = None  # the max_tokens sent (answer plus thinking room): the trace's
    response_id: str | None = None  # msg_...: the trace's gen_ai.response.id
    request_id: str | None = None  # req_..., what the provider's support asks for
    stop_reason: str | None = None  # end_turn, max_tokens, refusal, ...: the trace's finish_reasons
