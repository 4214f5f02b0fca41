"""Call-scoped hooks a backend reaches through whatever wraps it (context variables, so no
``complete`` in between passes them on): the cost cap's (``hold_more`` before a further billed
request of a call, ``hold_instead`` before a first request roomier than the gateway held for),
and the request cache's record of the answer room a cut-off request needs (``Room``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from stay.requests import ModelAnswer

HoldMore = Callable[[dict[str, Any], ModelAnswer | None], bool | None]
"""Told (the parameters to be sent, the reply already paid or None); returns once held, or raises
``CostCapReached``; True when it counted the paid reply (the answer's usage then leaves it out)."""

HoldInstead = Callable[[dict[str, Any]], None]
"""Told the first request's parameters when they differ from those held for; holds them instead."""

_HOLD: ContextVar[tuple[HoldMore, HoldInstead | None] | None] = ContextVar("stay_hold_more", default=None)


@contextmanager
def holding(hold: HoldMore, instead: HoldInstead | None = None) -> Iterator[None]:
    """``hold`` is told of every further billed request of the call made inside, ``instead`` of a
    roomier first request (without it, ``hold`` is, on top of the first hold, never under it)."""
    token = _HOLD.set((hold, instead))
    try:
        yield
    finally:
        _HOLD.reset(token)


def hold_more(params: dict[str, Any], paid: ModelAnswer | None) -> bool:
    """Before a further billed request of the current call: hold it, or stop here. True when
    ``paid`` was counted as a call of its own (no gateway around: False)."""
    hooks = _HOLD.get()
    return hooks is not None and bool(hooks[0](params, paid))


def hold_instead(params: dict[str, Any]) -> None:
    """Before the call's first request goes out roomier than held for: hold it instead, or stop here."""
    hooks = _HOLD.get()
    if hooks is None:
        return
    hold, instead = hooks
    if instead is None:
        hold(params, None)
    else:
        instead(params)

@dataclass(frozen=True)
class Room:
    known: int | None
    """The answer room an earlier run found this request needs, or None."""
    remember: Callable[[int], None]
    """Records the answer room this request needs (its answer was cut off at less)."""


_ROOM: ContextVar[Room | None] = ContextVar("stay_answer_room", default=None)


@contextmanager
def sizing(room: Room) -> Iterator[None]:
    """``room`` is what the backend's call made inside knows of its request's room."""
    token = _ROOM.set(room)
    try:
        yield
    finally:
        _ROOM.reset(token)


def known_room() -> int | None:
    """The answer room an earlier run found the current request needs, or None."""
    room = _ROOM.get()
    return None if room is None else room.known


def needs_room(answer_tokens: int) -> None:
    """Before a retry with more room: the current request needs ``answer_tokens``."""
    room = _ROOM.get()
    if room is not None:
        room.remember(answer_tokens)
