"""What the request cache knows of one request's answer room, inside the backend's call.

A backend that retries an answer cut off at ``max_tokens`` with more room (the Claude
backend's one retry) says so with ``needs_room`` before it sends the retry: the request
cache records that room for the request (its key is the original request's), so it
outlives a run the cost cap stops between the paid cut-off and its retry. The next run
asks that request straight at that room (``known_room``; the backend holds it against
the cap first, as it holds a retry), so the cut-off is paid once over both runs.

A context variable, as the cost cap's hook (``stay.models._hold``) is, for the same
reason: the record belongs to the one request the cache is asking its backend in this
thread, and must reach the backend without every ``complete`` in between passing it on.
With no request cache around (a library caller), nothing is known or recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


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
