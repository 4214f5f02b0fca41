"""Message Batches: many requests at half price, collected into the request cache.

A batch is a cache warmer. ``prefetch`` submits every request the cache does not
hold yet as one batch (create), waits for it (poll), and stores each answer
(collect) under the same key a live call would use; the run or the scoring that
follows then answers from the cache and makes no live call. Used for the wave's
generation requests and for judge requests at scale.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stay.errors import ModelError
from stay.models._anthropic import answer_from, request_params
from stay.models._cache import RequestCache, request_key
from stay.models._request import ModelRequest

MAX_BATCH = 100_000


@dataclass(frozen=True)
class BatchOutcome:
    batch_id: str
    submitted: int
    succeeded: int
    failed: dict[str, str]
    """custom id -> why (errored, canceled or expired): those are asked live later."""


def prefetch(client: Any, jobs: Sequence[tuple[ModelRequest, str]], cache: RequestCache, *,
             poll_seconds: float = 30.0, timeout_seconds: float = 24 * 3600,
             sleep: Callable[[float], None] = time.sleep,
             progress: Callable[[str], None] | None = None) -> BatchOutcome | None:
    """Answer ``jobs`` (request, model) through one Message Batch into ``cache``.

    Returns None when the cache already holds every answer (no batch is created).
    """
    say = progress or (lambda _line: None)
    todo = {request_key(request, model): (request, model) for request, model in jobs
            if cache.get(request, model) is None}
    if not todo:
        return None
    if len(todo) > MAX_BATCH:
        raise ModelError(f"{len(todo)} requests exceed one batch's {MAX_BATCH}; split the run")
    batch = client.messages.batches.create(requests=[
        {"custom_id": key[:64], "params": request_params(request, model)}
        for key, (request, model) in sorted(todo.items())])
    by_id = {key[:64]: key for key in todo}
    say(f"batch {batch.id}: {len(todo)} requests submitted")
    waited = 0.0
    while batch.processing_status != "ended":
        if waited >= timeout_seconds:
            raise ModelError(f"batch {batch.id} did not end within {timeout_seconds:.0f} s; it keeps "
                             "running, and a later run can collect it")
        sleep(poll_seconds)
        waited += poll_seconds
        batch = client.messages.batches.retrieve(batch.id)
        counts = getattr(batch, "request_counts", None)
        if counts is not None:
            say(f"batch {batch.id}: {counts.succeeded} done, {counts.processing} processing")
    succeeded, failed = 0, {}
    for line in client.messages.batches.results(batch.id):
        key = by_id.get(line.custom_id)
        if key is None:
            continue
        request, model = todo[key]
        if line.result.type != "succeeded":
            failed[line.custom_id] = line.result.type
            continue
        try:
            cache.put(request, model, answer_from(line.result.message, request))
            succeeded += 1
        except ModelError as exc:  # truncated or refused: the live call will report it properly
            failed[line.custom_id] = str(exc)
        except Exception as exc:
            failed[line.custom_id] = f"{type(exc).__name__}: {exc}"
    say(f"batch {batch.id}: {succeeded} answers collected, {len(failed)} to ask again live")
    return BatchOutcome(batch.id, len(todo), succeeded, failed)
