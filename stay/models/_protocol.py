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


@runtime_checkable
class Rejecting(Protocol):
    """A backend that keeps answers (the request cache) and is told when one failed the
    asker's check, so that it never serves that answer again. Apart from ``ModelClient``,
    which stays what every backend must do: only a backend that remembers needs it."""

    def reject(self, request: ModelRequest, model: str, why: str) -> None: ...
