"""Message Batches: many requests at half price, collected into the request cache.

A batch is a cache warmer. ``prefetch`` submits every request the cache does not
hold yet (create), waits for the batches (poll, saying how many have ended), and
stores each answer (collect) under the same key a live call would use, marked as paid
by a batch: the run that uses it reports its usage at the batch price. The run or the
scoring that follows then answers from the cache and makes no live call.

Every batch id is stored under ``.runs/batches/`` the moment it exists, so a run that
stops while a batch is running (Ctrl-C, a crash, the poll timeout) leaves a record,
and the next run collects that batch, running or ended, instead of paying for the same
requests again. Requests beyond one batch's limits (100,000 requests or 256 MB) are
split across batches.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stay._stored import Damaged, load_stored_json
from stay.errors import ModelError, ModelUnavailable, UnsafeId
from stay.models._cache import RequestCache, request_key
from stay.models._roles import THINKING
from stay.models._wire import answer_from, budget_for, one_line, redact, request_params
from stay.requests import ModelRequest

MAX_BATCH_REQUESTS = 100_000
MAX_BATCH_BYTES = 256 * 1000 * 1000
"""256 MB, counted in decimal megabytes to stay on the safe side of the limit."""
MAX_BATCH = MAX_BATCH_REQUESTS  # the name this module exported before
_ENVELOPE = 1_024
"""Bytes kept free in each batch for the JSON around the requests."""

BATCH_ID = re.compile(r"msgbatch_[A-Za-z0-9]{1,128}")
"""A Message Batch id as the API makes them (``msgbatch_013Zva2CMHLNnXjNJJKqJ2EF``; the
length may change, so up to 128): a record's file name is built from it, so an id of any
other shape, from a response or from disk, is refused before any path is."""

Params = Callable[[ModelRequest, str], dict[str, Any]]


def default_params(request: ModelRequest, model: str) -> dict[str, Any]:
    """What the Claude backend would send live, with its default thinking per role."""
    return request_params(request, model, THINKING.get(request.role))


@dataclass(frozen=True)
class BatchOutcome:
    batch_ids: tuple[str, ...]
    """Every batch this call collected, earlier runs' first, then the ones it submitted."""
    submitted: int
    """Requests this call submitted in new batches."""
    succeeded: int
    failed: dict[str, str]
    """custom id -> why (errored, canceled or expired): those are asked live later."""
    resumed: int = 0
    """Requests collected from batches an earlier run submitted."""

    @property
    def batch_id(self) -> str:
        return self.batch_ids[-1] if self.batch_ids else ""


_SERVER_FIX = "the service (or ANTHROPIC_BASE_URL) is not the Message Batches API; nothing was written or deleted"
_RECORD_FIX = "delete the record if no batch of yours is running; nothing was written or deleted"


def checked_id(batch_id: object, where: str, fix: str = _SERVER_FIX) -> str:
    """``batch_id`` if it has BATCH_ID's shape, else UnsafeId naming ``where`` it came from."""
    if isinstance(batch_id, str) and BATCH_ID.fullmatch(batch_id):
        return batch_id
    shown = repr(batch_id)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    raise UnsafeId(f"{where}: batch id {shown} is not a Message Batch id ('msgbatch_' then letters and "
                   f"digits); {fix}")


@dataclass
class _Ledger:
    """Batch records under .runs/batches/: one JSON file per batch still to collect, named
    by its id. Every id is checked (``checked_id``) before a path is built from it."""

    directory: Path

    def records(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob("*.json")):
            try:  # bounded, a regular file only: a planted FIFO or a huge file is skipped like damage
                record = load_stored_json(path)
            except (Damaged, OSError):
                continue
            if isinstance(record, dict) and "batch_id" in record:
                batch_id = checked_id(record["batch_id"], f"{path}: field 'batch_id'", _RECORD_FIX)
                if path.name != f"{batch_id}.json":
                    raise UnsafeId(f"{path}: field 'batch_id': holds batch {batch_id}, not the one the file's "
                                   f"name says; {_RECORD_FIX}")
                yield path, record

    def add(self, batch_id: str, custom_ids: list[str]) -> None:
        from stay.artefacts import write_text_atomic

        write_text_atomic(self._path(batch_id),
                          json.dumps({"batch_id": batch_id, "custom_ids": sorted(custom_ids)}, sort_keys=True))

    def done(self, batch_id: str) -> None:
        self._path(batch_id).unlink(missing_ok=True)

    def _path(self, batch_id: str) -> Path:
        return self.directory / f"{checked_id(batch_id, 'Message Batches')}.json"  # checked before: a backstop


@dataclass
class _Collector:
    client: Any
    cache: RequestCache
    todo: dict[str, tuple[ModelRequest, str]]
    say: Callable[[str], None]
    sleep: Callable[[float], None]
    poll_seconds: float
    timeout_seconds: float
    secret: str | None
    succeeded: int = 0
    failed: dict[str, str] = field(default_factory=dict)

    def api(self, what: str, call: Callable[[], Any]) -> Any:
        import anthropic

        try:
            return call()
        except (anthropic.APIConnectionError, anthropic.RateLimitError, anthropic.InternalServerError) as exc:
            raise ModelUnavailable(f"Message Batches: {what} failed ({type(exc).__name__}: "
                                   f"{one_line(redact(str(exc), [self.secret]))}); every batch id is stored "
                                   "under .runs/batches/: rerun to continue") from None
        except anthropic.APIError as exc:
            raise ModelError(f"Message Batches: {what} failed ({type(exc).__name__}: "
                             f"{one_line(redact(str(exc), [self.secret]))})") from None

    def lookup(self, batch_id: str) -> Any:
        """A stored batch, or None when the server no longer has it."""
        import anthropic

        try:
            return self.client.messages.batches.retrieve(batch_id)
        except anthropic.NotFoundError:
            return None
        except anthropic.APIError:
            return self.api(f"looking up batch {batch_id}", lambda: self.client.messages.batches.retrieve(batch_id))

    def wait(self, batch: Any) -> Any:
        """Poll until the batch ends, saying how far it got each time."""
        waited = 0.0
        while batch.processing_status != "ended":
            if waited >= self.timeout_seconds:
                raise ModelUnavailable(f"batch {batch.id} did not end within {self.timeout_seconds:g} s; it "
                                       "keeps running and its id is stored under .runs/batches/: rerun to "
                                       "collect it")
            self.sleep(self.poll_seconds)
            waited += self.poll_seconds
            batch = self.api(f"polling batch {batch.id}",
                             functools.partial(self.client.messages.batches.retrieve, batch.id))
            self.say(progress_line(batch))
        return batch

    def collect(self, batch_id: str) -> int:
        """Store every answer of an ended batch that this run needs; returns how many
        of this run's requests the batch held."""
        held = 0
        results = self.api(f"reading the results of batch {batch_id}",
                           lambda: list(self.client.messages.batches.results(batch_id)))
        for line in results:
            job = self.todo.get(line.custom_id)
            if job is None:
                continue  # not needed any more (its inputs changed since it was submitted)
            held += 1
            request, model = job
            if line.result.type != "succeeded":
                self.failed[line.custom_id] = line.result.type
                continue
            try:
                budget = budget_for(request, model, THINKING.get(request.role))
                answer = answer_from(line.result.message, request, budget=budget, batch=True)
            except ModelError as exc:  # truncated, refused, malformed: the live call reports it
                self.failed[line.custom_id] = str(exc)
                continue
            except Exception as exc:
                self.failed[line.custom_id] = f"{type(exc).__name__}: {exc}"
                continue
            self.cache.put(request, model, answer, reported=False)
            self.succeeded += 1
        return held


def progress_line(batch: Any) -> str:
    """``batch msgbatch_1: 5/7 ended (5 succeeded, 0 errored, 0 canceled, 0 expired), 2 processing``."""
    counts = getattr(batch, "request_counts", None)
    if counts is None:
        return f"batch {batch.id}: {batch.processing_status}"
    ended = counts.succeeded + counts.errored + counts.canceled + counts.expired
    return (f"batch {batch.id}: {ended}/{ended + counts.processing} ended ({counts.succeeded} succeeded, "
            f"{counts.errored} errored, {counts.canceled} canceled, {counts.expired} expired), "
            f"{counts.processing} processing")


def split(entries: Sequence[dict[str, Any]], *, max_requests: int = MAX_BATCH_REQUESTS,
          max_bytes: int = MAX_BATCH_BYTES) -> list[list[dict[str, Any]]]:
    """Batch entries in order, in as few batches as the limits allow."""
    chunks: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = _ENVELOPE
    for entry in entries:
        length = len(json.dumps(entry).encode()) + 1
        if length + _ENVELOPE > max_bytes:
            raise ModelError(f"request {entry['custom_id']} is {length} bytes, more than one batch may hold "
                             f"({max_bytes}); send it live instead")
        if current and (len(current) >= max_requests or size + length > max_bytes):
            chunks.append(current)
            current, size = [], _ENVELOPE
        current.append(entry)
        size += length
    if current:
        chunks.append(current)
    return chunks


def prefetch(client: Any, jobs: Sequence[tuple[ModelRequest, str]], cache: RequestCache, *,
             params: Params = default_params, ledger: Path | None = None, poll_seconds: float = 30.0,
             timeout_seconds: float = 24 * 3600, sleep: Callable[[float], None] = time.sleep,
             progress: Callable[[str], None] | None = None, max_requests: int = MAX_BATCH_REQUESTS,
             max_bytes: int = MAX_BATCH_BYTES) -> BatchOutcome | None:
    """Answer ``jobs`` (request, model) through Message Batches into ``cache``.

    First collects any batch an earlier run stored in ``ledger`` (default: ``batches/``
    beside the cache directory, i.e. ``.runs/batches/``), waiting for it if it is still
    running; then submits what is still missing, split to the limits. Returns None when
    the cache already holds every answer (no batch is created or read).
    """
    say = progress or (lambda _line: None)
    todo = {request_key(request, model): (request, model) for request, model in jobs
            if cache.get(request, model) is None}
    if not todo:
        return None
    book = _Ledger(ledger if ledger is not None else cache.directory.parent / "batches")
    run = _Collector(client, cache, todo, say, sleep, poll_seconds, timeout_seconds,
                     getattr(client, "api_key", None))
    batch_ids: list[str] = []
    covered: set[str] = set()
    for _path, record in book.records():
        listed = record.get("custom_ids")
        ids = {i for i in listed if isinstance(i, str)} if isinstance(listed, list) else set()
        if not ids & set(todo):
            continue
        stored = record["batch_id"]  # checked by records(): the only id a record's file is named by
        batch = run.lookup(stored)
        if batch is None:  # gone (batches are kept 29 days): its requests are submitted again
            say(f"batch {stored}: submitted by an earlier run, no longer on the server")
            book.done(stored)
            continue
        checked_id(batch.id, f"Message Batches: batch {stored} as the server returned it")
        say(f"batch {batch.id}: submitted by an earlier run, {batch.processing_status}; collecting it "
            "instead of submitting its requests again")
        run.wait(batch)
        run.collect(batch.id)
        covered |= ids & set(todo)
        batch_ids.append(batch.id)
        book.done(stored)
    resumed = len(covered)
    remaining = [(key, job) for key, job in sorted(todo.items()) if key not in covered]
    entries = [{"custom_id": key, "params": params(request, model)} for key, (request, model) in remaining]
    submitted: list[Any] = []
    for chunk in split(entries, max_requests=max_requests, max_bytes=max_bytes):
        batch = run.api("creating a batch", functools.partial(client.messages.batches.create, requests=chunk))
        checked_id(batch.id, "Message Batches: the batch just created")
        book.add(batch.id, [entry["custom_id"] for entry in chunk])
        say(f"batch {batch.id}: {len(chunk)} requests submitted (its id is stored under .runs/batches/)")
        submitted.append(batch)
    for batch in submitted:
        run.wait(batch)
        run.collect(batch.id)
        batch_ids.append(batch.id)
        book.done(batch.id)
    say(f"batches: {run.succeeded} answers collected, {len(run.failed)} to ask again live")
    return BatchOutcome(tuple(batch_ids), len(entries), run.succeeded, dict(run.failed), resumed)
