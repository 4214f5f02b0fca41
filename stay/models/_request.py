"""What a stage asks a model, and what comes back: plain data, no client in sight."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["analysis", "planning", "writing", "judging"]
ROLES: tuple[Role, ...] = ("analysis", "planning", "writing", "judging")

MAX_TOKENS = 16_000
"""Output cap per call. A chat model's default cap is sized for a chat reply and is
the most common cause of an artefact that fails its schema for no visible reason:
not malformed, cut off."""


class SystemBlock(BaseModel):
    """One block of the system prompt; ``cache`` marks the end of the stable prefix."""

    model_config = ConfigDict(frozen=True)

    text: str
    cache: bool = False


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


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(input_tokens=self.input_tokens + other.input_tokens,
                     output_tokens=self.output_tokens + other.output_tokens,
                     cache_creation_input_tokens=self.cache_creation_input_tokens
                     + other.cache_creation_input_tokens,
                     cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens)


class ModelAnswer(BaseModel):
    """A model's structured answer to one request."""

    model_config = ConfigDict(frozen=True)

    data: dict[str, Any]
    model: str
    usage: Usage = Usage()
