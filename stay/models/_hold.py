"""The cost cap's hook inside a backend: a billed request the gateway did not hold.

The gateway holds one request's worst case against the run's cost cap before it asks the
backend (``stay.pipeline._gateway``). A backend that sends a second billed request for
the same call (the Claude backend's retry of an answer cut off at ``max_tokens``, with
more room) tells ``hold_more`` first, with the parameters it is about to send and the
reply already paid: the gateway holds that request's own worst case too, or raises
``CostCapReached`` (having counted the paid reply) so it is never sent.

A context variable, not an argument: the hook belongs to the one call the gateway is
making in this thread, and it must reach the backend through whatever wraps it (the
request cache, a caller's backend) without every ``complete`` in between passing it on.
With no gateway around (a library caller, the evals), nothing is held.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from stay.requests import ModelAnswer

HoldMore = Callable[[dict[str, Any], ModelAnswer | None], None]
"""Told (the request's parameters as they will be sent, the reply already paid for or None
when it cannot be read); returns once the request is held, or raises ``CostCapReached``."""

_HOLD: ContextVar[HoldMore | None] = ContextVar("stay_hold_more", default=None)


@contextmanager
def holding(hold: HoldMore) -> Iterator[None]:
    """``hold`` is told of every further billed request of the call made inside."""
    token = _HOLD.set(hold)
    try:
        yield
    finally:
        _HOLD.reset(token)


def hold_more(params: dict[str, Any], paid: ModelAnswer | None) -> None:
    """Before a further billed request of the current call: hold it, or stop here."""
    hold = _HOLD.get()
    if hold is not None:
        hold(params, paid)
