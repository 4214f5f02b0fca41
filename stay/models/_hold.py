"""The cost cap's hook inside a backend: a billed request the gateway did not hold.

The gateway holds one request's worst case against the run's cost cap before it asks the
backend (``stay.pipeline._run``). A backend that sends a second billed request for
the same call (a retry of an answer cut off at ``max_tokens``, with more room; a
JSON-mode answer asked again) tells ``hold_more`` first, with the parameters it is about
to send and the reply already paid: the gateway counts that reply at once, as a call of
its own, and holds the next request's own worst case too, or raises ``CostCapReached``
so it is never sent. A backend whose first request goes out with more room than the
gateway held for (the room an earlier run's cut-off answer needed) tells
``hold_instead`` first: that worst case takes the first one's place.

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

HoldMore = Callable[[dict[str, Any], ModelAnswer | None], bool | None]
"""Told (the request's parameters as they will be sent, the reply already paid for or None
when it cannot be read); returns once the request is held, or raises ``CostCapReached``:
True when it has counted the paid reply (then the backend leaves it out of the answer's usage)."""

HoldInstead = Callable[[dict[str, Any]], None]
"""Told the parameters the call's first request will be sent with in place of those the
gateway held for (a larger answer room: ``stay.models._room``); returns once they are held
instead of the first hold, or raises ``CostCapReached``."""

_HOLD: ContextVar[tuple[HoldMore, HoldInstead | None] | None] = ContextVar("stay_hold_more", default=None)


@contextmanager
def holding(hold: HoldMore, instead: HoldInstead | None = None) -> Iterator[None]:
    """``hold`` is told of every further billed request of the call made inside, and
    ``instead`` of a first request sent otherwise than held for (without one, ``hold`` is
    told of it too, with nothing paid: held on top of the first hold, never under it)."""
    token = _HOLD.set((hold, instead))
    try:
        yield
    finally:
        _HOLD.reset(token)


def hold_more(params: dict[str, Any], paid: ModelAnswer | None) -> bool:
    """Before a further billed request of the current call: hold it, or stop here. True
    when ``paid`` was counted, as a call of its own: the answer's usage must leave it out;
    False (no gateway around: a library caller) when the answer's usage must include it."""
    hooks = _HOLD.get()
    return hooks is not None and bool(hooks[0](params, paid))


def hold_instead(params: dict[str, Any]) -> None:
    """Before the current call's first request goes out with ``params`` rather than those
    the gateway held for: hold them in place of that hold, or stop here."""
    hooks = _HOLD.get()
    if hooks is None:
        return
    hold, instead = hooks
    if instead is None:
        hold(params, None)
    else:
        instead(params)
