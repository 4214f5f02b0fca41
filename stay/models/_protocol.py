"""What the pipeline needs from a model backend, and the public protocol a backend implements.

``ModelClient`` is the least a run can use (a name, ``complete``, ``screen``): a test's
stand-in or a caller's adapter. ``Backend`` is what a backend registered under the
``stay.backends`` entry points (``stay.models._registry``, ``docs/plugins.md``) must be:
a ``ModelClient`` that also says what it costs (``prices``) and what it can do
(``features``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from stay.requests import ModelAnswer, ModelRequest

if TYPE_CHECKING:
    from stay.models._prices import Price

FEATURES = frozenset({"caching", "batches", "thinking", "count_tokens", "screen"})
"""What a backend may declare in ``features``; only ``screen`` changes what a run does
(a backend without it cannot screen a brief: the run needs ``--no-screen``)."""


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
    """A backend as a plug-in makes it: a ``ModelClient`` with its prices and features.

    ``prices`` maps the model ids its answers name (``ModelAnswer.model``) to their
    ``stay.models.Price``; a model missing from it is unpriced, so a run's cost is
    "unknown" (never $0) and a cost cap over it is refused before anything is asked.
    ``features`` is drawn from ``FEATURES``. Optional, read with ``getattr``:
    ``default_models`` (role -> model id, used where no ``STAY_MODEL_<ROLE>`` is set)."""

    @property
    def prices(self) -> Mapping[str, Price]: ...

    @property
    def features(self) -> frozenset[str]: ...


def prices_of(backend: ModelClient) -> Mapping[str, Price]:
    """The table a backend's answers are priced at: its own ``prices``; Claude's
    (``PRICES``) for a plain ``ModelClient`` that declares none (a caller's adapter, as before
    backends declared prices)."""
    from stay.models._prices import PRICES

    found = getattr(backend, "prices", None)
    return found if isinstance(found, Mapping) else PRICES


def can_screen(backend: ModelClient) -> bool:
    """Whether a backend can screen a brief: "screen" in its ``features``; a plain
    ``ModelClient`` (no ``features``) has the protocol's ``screen``, so it can."""
    features = getattr(backend, "features", None)
    return features is None or "screen" in features


@runtime_checkable
class Rejecting(Protocol):
    """A backend that keeps answers (the request cache) and is told when one failed the
    asker's check, so that it never serves that answer again. Apart from ``ModelClient``,
    which stays what every backend must do: only a backend that remembers needs it."""

    def reject(self, request: ModelRequest, model: str, why: str) -> None: ...
