"""Write each cached prompt prefix once, however many calls are in flight.

The API can serve a prefix from its cache only once an earlier request that wrote it
has begun its response ("a cache entry becomes available after the first response
begins", the prompt-caching docs): eight calls sent at once with one shared prefix pay
eight cache writes. ``PrefixGate`` lets the first request with a given cache key (scope
and prefix) through and holds every later one that shares the prefix until the first
one's response has started (its stream's first event; a whole answer, when it does not
stream); they then read the cache. A prefix counts as written for the cache's lifetime
(5 minutes), refreshed by every call that uses it, as the API refreshes it.

Only requests wait, never the pipeline: the wave is unchanged, and a request whose
prefixes are all written (or all its own to write) goes straight through.

A key is what the API keys its cache on, so the gate never holds a request for a
sharing that cannot happen. The cache is a prefix of tools, then system, then messages,
and per the docs it is invalidated by a change of: the model; the tool definitions
(``tools``, and ``tool_choice``); ``output_config.format`` (structured outputs: "changing
the output format invalidates the prompt cache", the schema being compiled into the
prompt); the thinking settings (``thinking``, and the ``output_config.effort`` that sets
how much it thinks). The thinking docs keep system-level entries across a thinking
change; stay never sends one system prompt at two efforts (the effort is the role's), so
the gate scopes every breakpoint by all of these rather than split hairs.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from stay.models._roles import min_cacheable_tokens

CACHE_TTL = 300.0
"""Seconds a 5-minute cache entry lives after its last use."""

CHARS_PER_TOKEN = 4
"""About four characters a token: a prefix is measured in characters, as no tokenizer runs
here. A prefix a little short of the model's minimum is then gated for nothing (latency
only); one a little over it is never left to pay a write per call."""

_SCOPE = ("tools", "tool_choice", "thinking")
"""Request fields besides the model and ``output_config`` that scope the cache."""


def cache_scope(params: Mapping[str, Any]) -> str:
    """What every prefix of this request is keyed on besides its text (see the module
    docstring): model, tools, thinking, and ``output_config`` (format and effort)."""
    config = params.get("output_config") or {}
    scope = {"model": params.get("model"), **{name: params.get(name) for name in _SCOPE},
             "format": config.get("format"), "effort": config.get("effort")}
    return json.dumps(scope, sort_keys=True, default=str)


def prefix_keys(params: Mapping[str, Any], *, min_tokens: int | None = None) -> list[str]:
    """A key per ``cache_control`` breakpoint of a Messages API request, shortest first:
    its cache scope and every block up to the breakpoint, in cache order (system, then the
    message's content). Prefixes shorter than the model's minimum cacheable length
    (``min_cacheable_tokens``, unless ``min_tokens`` is given) are left out: nothing is
    cached for them, so holding a request for one would only add latency."""
    floor = (min_cacheable_tokens(str(params.get("model"))) if min_tokens is None else min_tokens) * CHARS_PER_TOKEN
    system = params.get("system") or []
    blocks: list[Any] = [{"text": system}] if isinstance(system, str) else list(system)
    for message in params.get("messages") or []:
        content = message.get("content")
        blocks += [{"text": content}] if isinstance(content, str) else list(content or [])
    keys, digest, chars = [], hashlib.sha256(cache_scope(params).encode()), 0
    for block in blocks:
        text = block.get("text", "") if isinstance(block, Mapping) else ""
        digest.update(json.dumps(text).encode())
        chars += len(text)
        if isinstance(block, Mapping) and block.get("cache_control") and chars >= floor:
            keys.append(digest.copy().hexdigest())
    return keys


class PrefixGate:
    """Per cache key (scope and prefix): one writer in flight; the rest wait for its answer."""

    def __init__(self, *, ttl: float = CACHE_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._changed = threading.Condition()
        self._writing: set[str] = set()
        self._fresh_until: dict[str, float] = {}
        self._ungated_until: dict[str, float] = {}
        self._async_waiters: list[tuple[Any, Any]] = []
        """(event loop, asyncio.Event) of every coroutine waiting (``ahold``)."""
        self.waits = 0
        """How many requests were held for another request's cache write (for tests)."""

    def _fresh(self, key: str) -> bool:
        return self._fresh_until.get(key, float("-inf")) > self.clock()

    def _claim(self, keys: Sequence[str]) -> list[str] | None:
        """Under the lock: None while another request is writing one of ``keys``; else the
        keys this request writes (those not in the cache), now marked as being written."""
        if any(key in self._writing for key in keys):
            return None
        now = self.clock()
        mine = [key for key in keys
                if not self._fresh(key) and self._ungated_until.get(key, float("-inf")) <= now]
        self._writing.update(mine)
        return mine

    def _notify(self) -> None:
        """Under the lock: wake every waiter, threads and coroutines alike."""
        self._changed.notify_all()
        for loop, event in self._async_waiters:
            loop.call_soon_threadsafe(event.set)
        self._async_waiters.clear()

    def _begin(self, keys: Sequence[str], mine: Sequence[str]) -> None:
        """The response has begun (or an answer came): every key is fresh, waiters go."""
        with self._changed:
            self._writing.difference_update(mine)
            until = self.clock() + self.ttl
            for key in keys:
                self._fresh_until[key] = until
            self._notify()

    def _fail(self, mine: Sequence[str]) -> None:
        """A write that failed before its response began: its prefixes go ungated."""
        with self._changed:
            self._writing.difference_update(mine)
            until = self.clock() + self.ttl
            for key in mine:
                self._ungated_until[key] = until
            self._notify()

    @contextmanager
    def hold(self, keys: Sequence[str]) -> Iterator[Callable[[], None]]:
        """Wait while another request is writing one of ``keys``; then send, writing
        the ones not in the cache. Yields ``started``, to call when the response begins:
        the waiters are let go then, not at its end. A write that failed before its
        response began leaves its prefixes ungated for the cache's lifetime: when the
        service is failing, the requests that waited must fail together, not one writer
        after another."""
        with self._changed:
            waited = False
            while (mine := self._claim(keys)) is None:
                waited = True
                self._changed.wait()
            self.waits += waited
        with self._holding(keys, mine) as started:
            yield started

    @asynccontextmanager
    async def ahold(self, keys: Sequence[str]) -> AsyncIterator[Callable[[], None]]:
        """``hold`` for a coroutine: it waits on an ``asyncio.Event`` the writer sets (from
        any thread), so a held call never blocks its event loop."""
        import asyncio

        waited = False
        while True:
            with self._changed:
                mine = self._claim(keys)
                if mine is not None:
                    self.waits += waited
                    break
                event = asyncio.Event()
                self._async_waiters.append((asyncio.get_running_loop(), event))
            waited = True
            await event.wait()
        with self._holding(keys, mine) as started:
            yield started

    @contextmanager
    def _holding(self, keys: Sequence[str], mine: list[str]) -> Iterator[Callable[[], None]]:
        begun = False

        def started() -> None:
            nonlocal begun
            begun = True
            self._begin(keys, mine)

        answered = False
        try:
            yield started
            answered = True
        finally:
            if answered or begun:
                self._begin(keys, mine)  # an answer is a use: it refreshes the entries too
            else:
                self._fail(mine)
