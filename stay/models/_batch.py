"""Message Batches as a cache warmer: ``prefetch`` submits what the request cache lacks (half
price), polls, and stores each answer under a live call's key, marked paid by a batch. Every
batch id is recorded under ``.runs/batches/`` at once, so a stopped run's batch is collected
next time instead of paid again. Batch calls retry as live ones; a poll is retried until expiry."""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from stay._bounds import Damaged, load_stored_json
from stay._display import one_line
from stay.artefacts import write_text_atomic
from stay.errors import ModelError, ModelUnavailable, RefusalError, StayError, TruncationError, Unreachable, UnsafeId
from stay.models._anthropic import AnthropicBackend, answer_from, request_params, usage_of
from stay.models._cache import RequestCache, request_key
from stay.models._protocol import (
    BATCH_CACHE_TTL,
    CONFIG_STATUSES,
    THINKING,
    _Deadline,
    backoff,
    budget_for,
    cost,
    jittered,
)
from stay.requests import ModelAnswer, ModelRequest

MAX_BATCH_REQUESTS = 100_000
MAX_BATCH_BYTES = 256 * 1000 * 1000  # 256 MB in decimal megabytes: the safe side of the limit
_ENVELOPE = 1_024  # bytes kept free in each batch for the JSON around the requests

BATCH_ID = re.compile(r"msgbatch_[A-Za-z0-9]{1,128}")
"""A record's file name is built from a batch id, so any other shape is refused before a path is."""

Billed = Callable[[ModelRequest, ModelAnswer], None]
"""Told of a batch entry billed without an answer (a refusal, a cut-off), as an answer with no data."""


def hour_long(params: dict[str, Any]) -> dict[str, Any]:
    """Every breakpoint a ``BATCH_CACHE_TTL`` entry (the API wants longer entries first)."""
    def marked(block: Any) -> Any:
        if isinstance(block, dict) and "cache_control" in block:
            return {**block, "cache_control": {**block["cache_control"], "ttl": BATCH_CACHE_TTL}}
        return block

    messages = [{**turn, "content": [marked(b) for b in turn["content"]]} if isinstance(turn.get("content"), list)
                else turn for turn in params.get("messages", [])]
    return {**params, "system": [marked(b) for b in params.get("system", [])], "messages": messages}


@dataclass(frozen=True)
class BatchOutcome:
    batch_ids: tuple[str, ...]  # earlier runs' first, then the ones this call submitted
    submitted: int  # requests submitted in new batches
    succeeded: int
    failed: dict[str, str]  # custom id -> why: those are asked live later
    resumed: int = 0  # requests collected from batches an earlier run submitted

    @property
    def batch_id(self) -> str:  # the last batch's id, for a caller to look up
        return self.batch_ids[-1] if self.batch_ids else ""


_SERVER_FIX = "the service (or ANTHROPIC_BASE_URL) is not the Message Batches API; nothing was written or deleted"
_RECORD_FIX = "delete the record if no batch of yours is running; nothing was written or deleted"


def checked_id(batch_id: object, where: str, fix: str = _SERVER_FIX, *, path: Path | None = None) -> str:
    if isinstance(batch_id, str) and BATCH_ID.fullmatch(batch_id):
        return batch_id
    shown = repr(batch_id)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    raise UnsafeId(f"{where}: batch id {shown} is not a Message Batch id ('msgbatch_' then letters and "
                   f"digits); {fix}", path=path, field=None if path is None else "batch_id")


@dataclass
class _Ledger:
    """Batch records under .runs/batches/: one JSON file per batch still to collect, named by its id."""

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
                batch_id = checked_id(record["batch_id"], f"{path}: field 'batch_id'", _RECORD_FIX, path=path)
                if path.name != f"{batch_id}.json":
                    raise UnsafeId(f"{path}: field 'batch_id': holds batch {batch_id}, not the one the file's "
                                   f"name says; {_RECORD_FIX}", path=path, field="batch_id")
                yield path, record

    def add(self, batch_id: str, custom_ids: list[str]) -> None:
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
    rules: AnthropicBackend  # whose retry rules every batch call follows
    billed: Billed
    succeeded: int = 0
    failed: dict[str, str] = field(default_factory=dict)

    def api(self, what: str, call: Callable[[], Any], *, missing_ok: bool = False) -> Any:
        """``call()``, retried as a live call; ``missing_ok``: a 404 is None."""
        import anthropic

        where = f"Message Batches: {what}"

        def send(_timeout: Any) -> Any:
            try:
                return call()
            except anthropic.NotFoundError:
                if missing_ok:
                    return None
                raise ModelError(f"{where}: the API answered 404 (not found)") from None
        try:  # each batch call's retries and waits have a deadline too
            return self.rules._retried(send, where, _Deadline(self.rules, 0, where))
        except ModelUnavailable as exc:  # nothing is lost: say where the ids are
            raise ModelUnavailable(f"{exc} (every batch id is stored under .runs/batches/)") from None

    def wait(self, batch: Any) -> Any:
        waited = 0.0
        while batch.processing_status != "ended":
            if waited >= self.timeout_seconds:
                raise ModelUnavailable(f"batch {batch.id} did not end within {self.timeout_seconds:g} s; it "
                                       "keeps running and its id is stored under .runs/batches/: rerun to "
                                       "collect it")
            self.sleep(self.poll_seconds)
            waited += self.poll_seconds
            batch, spent = self.poll(batch)
            waited += spent
            self.say(progress_line(batch))
        return batch

    def poll(self, batch: Any) -> tuple[Any, float]:
        """One poll, and the seconds spent on failures: a poll is free and the batch runs on, so a
        transient failure is polled through (whatever the cap) while the batch can still end."""
        where = f"Message Batches: polling batch {batch.id}"
        until, spent, streak = poll_until(batch), 0.0, 0
        while True:
            try:
                return self.client.messages.batches.retrieve(batch.id), spent
            except StayError:
                raise
            except Exception as exc:
                failure = self.rules._classify(exc, where, streak)
                left = until - self.rules.wall()
                # a 401, 403 or 404 is final whatever its body says: no wait changes a key or an id; a
                # service that took the batch and cannot be reached now is a transient failure here
                passing = failure.retryable or isinstance(failure.error, Unreachable)
                if not passing or getattr(exc, "status_code", None) in CONFIG_STATUSES or left <= 0:
                    kind = ModelUnavailable if isinstance(failure.error, ModelUnavailable) else ModelError
                    raise kind(f"{failure.error}; the batch id is stored under .runs/batches/: a rerun "
                               "reattaches to it (or submits its requests again if the server no longer "
                               "has it)") from None
                hint = failure.wait_hint
                pause = backoff(streak, self.rules.jitter()) if hint is None else jittered(hint, self.rules.jitter())
                pause = min(pause, left)
                if not streak:
                    ends = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until))
                    status = getattr(exc, "status_code", None)
                    what = f"HTTP {status}" if isinstance(status, int) else type(exc.__cause__ or exc).__name__
                    self.say(f"batch {batch.id}: a poll failed ({what}); the batch runs on at the "
                             f"server, so polling goes on through failures until {ends}, when it can no longer "
                             "be running")
                streak += 1
                self.rules.sleep(pause)
                spent += pause

    def finish(self, batch: Any, book: _Ledger, recorded: str) -> str:
        """Wait for ``batch``, collect its answers, and strike its record (``recorded``, the id it is under)."""
        self.wait(batch)
        self.collect(batch.id)
        book.done(recorded)
        return str(batch.id)

    def collect(self, batch_id: str) -> None:
        results = self.api(f"reading the results of batch {batch_id}",
                           lambda: list(self.client.messages.batches.results(batch_id)))
        for line in results:
            job = self.todo.get(line.custom_id)
            if job is None:
                continue  # not needed any more (its inputs changed since it was submitted)
            request, model = job
            where = f"  stage {request.stage} ({request.artefact}), batch {batch_id}"
            again = "asking it again live, at the full price (twice the batch's)"
            if line.result.type != "succeeded":  # errored, canceled, expired: no message, not billed
                self.failed[line.custom_id] = line.result.type
                self.say(f"{where}: {line.result.type}, not billed; {again}")
                continue
            try:
                budget = budget_for(request, model, THINKING.get(request.role))
                answer = answer_from(line.result.message, request, budget=budget, batch=True)
            except Exception as exc:  # refused, cut off, not JSON, malformed: billed all the same
                self.failed[line.custom_id] = str(exc) or type(exc).__name__
                self.say(f"{where}: {self.bill(request, model, line.result.message, exc)}; {again}")
                continue
            self.cache.put(request, model, answer, reported=False)
            self.succeeded += 1

    def bill(self, request: ModelRequest, model: str, message: Any, exc: Exception) -> str:
        kinds: dict[type, str] = {RefusalError: "refused", TruncationError: "cut off"}
        what = kinds.get(type(exc)) or f"unreadable ({one_line(exc)})"
        try:
            usage = usage_of(message, f"stage {request.stage} ({request.artefact})")
        except ModelError:
            return f"{what}, with no usage to count"
        self.billed(request, ModelAnswer(data={}, model=model, usage=usage, batch=True))
        dollars = cost(model, usage, batch=True)
        price = "an unknown price" if dollars is None else f"${dollars:.4f}"
        return f"{what}, billed {price} at the batch price (counted)"


BATCH_LIFETIME = 24 * 3600.0
"""The batch docs' 24 hours: the bound on polling when a batch says no ``expires_at``."""


def poll_until(batch: Any) -> float:
    expires, created = getattr(batch, "expires_at", None), getattr(batch, "created_at", None)
    if isinstance(expires, datetime):
        return expires.timestamp()
    start = created.timestamp() if isinstance(created, datetime) else time.time()
    return start + BATCH_LIFETIME


def progress_line(batch: Any) -> str:
    counts = getattr(batch, "request_counts", None)
    if counts is None:
        return f"batch {batch.id}: {batch.processing_status}"
    ended = counts.succeeded + counts.errored + counts.canceled + counts.expired
    return (f"batch {batch.id}: {ended}/{ended + counts.processing} ended ({counts.succeeded} succeeded, "
            f"{counts.errored} errored, {counts.canceled} canceled, {counts.expired} expired), "
            f"{counts.processing} processing")


def split(entries: Sequence[dict[str, Any]], *, max_requests: int = MAX_BATCH_REQUESTS,
          max_bytes: int = MAX_BATCH_BYTES) -> list[list[dict[str, Any]]]:
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
             ledger: Path | None = None, poll_seconds: float = 30.0,
             timeout_seconds: float = 24 * 3600, sleep: Callable[[float], None] = time.sleep,
             progress: Callable[[str], None] | None = None, max_requests: int = MAX_BATCH_REQUESTS,
             max_bytes: int = MAX_BATCH_BYTES, retries: AnthropicBackend | None = None,
             billed: Billed | None = None) -> BatchOutcome | None:
    """Answer ``jobs`` into ``cache``: collect the batches ``ledger`` (``.runs/batches/``) records, then
    submit what is missing. None when the cache holds every answer; ``retries``: whose retry rules."""
    say = progress or (lambda _line: None)
    rules = retries if retries is not None else AnthropicBackend(client, progress=say, sleep=sleep)
    todo = {request_key(request, model): (request, model) for request, model in jobs
            if cache.get(request, model) is None}
    if not todo:
        return None
    book = _Ledger(ledger if ledger is not None else cache.directory.parent / "batches")
    run = _Collector(client, cache, todo, say, sleep, poll_seconds, timeout_seconds, rules,
                     billed or (lambda _request, _answer: None))
    batch_ids: list[str] = []
    covered: set[str] = set()
    for _path, record in book.records():
        listed = record.get("custom_ids")
        ids = {i for i in listed if isinstance(i, str)} if isinstance(listed, list) else set()
        if not ids & set(todo):
            continue
        stored = record["batch_id"]  # checked by records(): the only id a record's file is named by
        batch = run.api(f"looking up batch {stored}", functools.partial(client.messages.batches.retrieve, stored),
                        missing_ok=True)
        if batch is None:  # gone (batches are kept 29 days): its requests are submitted again
            say(f"batch {stored}: submitted by an earlier run, no longer on the server")
            book.done(stored)
            continue
        checked_id(batch.id, f"Message Batches: batch {stored} as the server returned it")
        say(f"batch {batch.id}: submitted by an earlier run, {batch.processing_status}; collecting it "
            "instead of submitting its requests again")
        batch_ids.append(run.finish(batch, book, stored))
        covered |= ids & set(todo)
    entries = [{"custom_id": key, "params": hour_long(request_params(request, model, THINKING.get(request.role)))}
               for key, (request, model) in sorted(todo.items()) if key not in covered]
    submitted: list[Any] = []
    for chunk in split(entries, max_requests=max_requests, max_bytes=max_bytes):
        batch = run.api("creating a batch", functools.partial(client.messages.batches.create, requests=chunk))
        checked_id(batch.id, "Message Batches: the batch just created")
        book.add(batch.id, [entry["custom_id"] for entry in chunk])
        say(f"batch {batch.id}: {len(chunk)} requests submitted (its id is stored under .runs/batches/)")
        submitted.append(batch)
    batch_ids += [run.finish(batch, book, batch.id) for batch in submitted]
    say(f"batches: {run.succeeded} answers collected, {len(run.failed)} to ask again live (at the full price)")
    return BatchOutcome(tuple(batch_ids), len(entries), run.succeeded, dict(run.failed), len(covered))
