"""The one thing the pipeline needs from a model backend."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from stay.requests import ModelAnswer, ModelRequest


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
