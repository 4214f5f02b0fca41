"""Write each cached prompt prefix once, however many calls are in flight.

The API can serve a prefix from its cache only once an earlier request that wrote it
has been answered: eight calls sent at once with one shared prefix pay eight cache
writes. ``PrefixGate`` lets the first request with a given (model, prefix) through and
holds every later one that shares the prefix until the first one's response has
arrived; they then read the cache. A prefix counts as written for the cache's
lifetime (5 minutes), refreshed by every call that uses it, as the API refreshes it.

Only requests wait, never the pipeline: the wave is unchanged, and a request whose
prefixes are all written (or all its own to write) goes straight through.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

CACHE_TTL = 300.0
"""Seconds a 5-minute cache entry lives after its last use."""

MIN_PREFIX_CHARS = 4_096
"""Prefixes shorter than this are not gated: below a model's minimum cacheable length
(1,024 tokens or more, about four characters a token) nothing is cached, so holding
a request for one would only add latency."""


def prefix_keys(params: Mapping[str, Any], *, min_chars: int = MIN_PREFIX_CHARS) -> list[str]:
    """A key per ``cache_control`` breakpoint of a Messages API request, shortest first:
    the model and every block up to the breakpoint, in cache order (system, then the
    message's content). Prefixes too short to be cached are left out."""
    system = params.get("system") or []
    blocks: list[Any] = [{"text": system}] if isinstance(system, str) else list(system)
    for message in params.get("messages") or []:
        content = message.get("content")
        blocks += [{"text": content}] if isinstance(content, str) else list(content or [])
    keys, digest, chars = [], hashlib.sha256(str(params.get("model")).encode()), 0
    for block in blocks:
        text = block.get("text", "") if isinstance(block, Mapping) else ""
        digest.update(json.dumps(text).encode())
        chars += len(text)
        if isinstance(block, Mapping) and block.get("cache_control") and chars >= min_chars:
            keys.append(digest.copy().hexdigest())
    return keys


class PrefixGate:
    """Per (model, prefix): one writer in flight; the rest wait for its answer."""

    def __init__(self, *, ttl: float = CACHE_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._changed = threading.Condition()
        self._writing: set[str] = set()
        self._fresh_until: dict[str, float] = {}
        self._ungated_until: dict[str, float] = {}
        self.waits = 0
        """How many requests were held for another request's cache write (for tests)."""

    def _fresh(self, key: str) -> bool:
        return self._fresh_until.get(key, float("-inf")) > self.clock()

    @contextmanager
    def hold(self, keys: Sequence[str]) -> Iterator[None]:
        """Wait while another request is writing one of ``keys``; then send, writing
        the ones not in the cache. A failed write leaves its prefixes ungated for the
        cache's lifetime: when the service is failing, the requests that waited must
        fail together, not one writer after another."""
        with self._changed:
            waited = False
            while any(key in self._writing for key in keys):
                waited = True
                self._changed.wait()
            self.waits += waited
            now = self.clock()
            mine = [key for key in keys
                    if not self._fresh(key) and self._ungated_until.get(key, float("-inf")) <= now]
            self._writing.update(mine)
        answered = False
        try:
            yield
            answered = True
        finally:
            with self._changed:
                self._writing.difference_update(mine)
                until = self.clock() + self.ttl
                for key in keys if answered else mine:
                    (self._fresh_until if answered else self._ungated_until)[key] = until
                self._changed.notify_all()
