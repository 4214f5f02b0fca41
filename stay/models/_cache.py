"""The request cache: answers keyed by a hash of the full request, under .runs/cache/, so a
resumed run never pays twice and a replay calls nothing; a miss is explained. Every paid token
is reported once (a batch's answer by the first run to use it). An answer that fails its
asker's check moves to ``rejected/``, never served again, so the next run asks anew."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from stay._bounds import MAX_STORED_BYTES, Damaged, load_stored_json
from stay.artefacts import write_text_atomic
from stay.errors import AnswerError, ReplayMiss
from stay.models._protocol import (
    DEFAULT_MODELS,
    ModelClient,
    Price,
    Room,
    Screening,
    prices_of,
    screen_request,
    screening_of,
    sizing,
    verdict,
)
from stay.requests import ModelAnswer, ModelRequest, Usage

ROOMS_DIR = "rooms"  # one small record per cut-off request's key, rewritten in place
ROOM_RECORD_BYTES = 4096  # a room record is about 200 bytes; a larger one is ignored unread
REJECTIONS_KEPT = 3
"""Enough to see whether a model fails the same way again; reruns cannot grow it without bound."""


def request_key(request: ModelRequest, model: str, salt: str = "") -> str:
    """The cache key of a request; a ``salt`` (an eval epoch) keys identical requests apart."""
    document: dict[str, object] = {"model": model, "request": request.model_dump(mode="json")}
    if salt:
        document["salt"] = salt
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def differences(cached: dict[str, Any], cached_model: str | None, request: ModelRequest, model: str) -> list[str]:
    now = request.model_dump(mode="json")
    changed = [f"model ({cached_model} -> {model})"] if cached_model != model else []
    changed += [label for name, label in (("max_tokens", "max_tokens"), ("output_schema", "the output schema"))
                if cached.get(name) != now[name]]
    changed += [label for label in _system_changes(cached.get("system"), now["system"]) if label not in changed]
    was = cached.get("inputs", {}) if isinstance(cached.get("inputs"), dict) else {}
    inputs = sorted(k for k in set(was) | set(now["inputs"]) if was.get(k) != now["inputs"].get(k))
    if inputs:
        changed.append(f"inputs: {', '.join(inputs)}")
    return changed


def _system_changes(was: Any, now: list[dict[str, Any]]) -> list[str]:
    if not isinstance(was, list) or not all(isinstance(b, dict) for b in was) or [
            b.get("label") for b in was] != [b.get("label") for b in now]:  # a damaged entry: its layout
        return ["the system prompt's layout"]
    pairs = enumerate(zip(was, now, strict=True))
    return [block.get("label") or f"system block {index + 1}" for index, (old, block) in pairs
            if old.get("text") != block.get("text")]


def _stored(path: Path, limit: int = MAX_STORED_BYTES) -> dict[str, Any] | None:
    """None when missing or damaged: the cache is a convenience, so damage costs a call, never the run."""
    try:
        document = load_stored_json(path, limit)
    except (OSError, Damaged):
        return None
    return document if isinstance(document, dict) else None


def _damage(path: Path) -> str:
    try:
        document = load_stored_json(path)
    except Damaged as exc:
        return exc.reason
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    answer = document.get("answer") if isinstance(document, dict) else None
    try:
        ModelAnswer.model_validate(answer)
    except ValidationError as exc:
        where = "".join(f".{part}" for part in exc.errors()[0]["loc"])
        return f"field 'answer{where}' is invalid"
    return "not a cache entry"


@dataclass
class RequestCache:
    directory: Path
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    salt: str = ""  # keys every entry apart from the same request under another salt

    def _path(self, request: ModelRequest, model: str, under: Path | None = None) -> Path:
        return (under or self.directory) / f"{request_key(request, model, self.salt)}.json"

    @property
    def rejected_dir(self) -> Path:
        return self.directory.parent / "rejected"

    @staticmethod
    def _entry(path: Path) -> tuple[dict[str, Any], ModelAnswer] | None:
        """The entry and its answer (usage included: counts, never negative); a damaged one is a miss, never a crash."""
        entry = _stored(path)
        if entry is None:
            return None
        try:
            return entry, ModelAnswer.model_validate(entry.get("answer"))
        except ValueError:
            return None

    def get(self, request: ModelRequest, model: str) -> ModelAnswer | None:
        found = self._entry(self._path(request, model))
        return None if found is None else found[1]

    def put(self, request: ModelRequest, model: str, answer: ModelAnswer, *, reported: bool = True) -> None:
        """Store an answer; ``reported=False`` (a batch paid it): the first ``claim`` reports its usage."""
        entry = {"model": model, "request": request.model_dump(mode="json"),
                 "answer": answer.model_dump(mode="json"), "reported": reported}
        write_text_atomic(self._path(request, model), json.dumps(entry, sort_keys=True))

    def claim(self, request: ModelRequest, model: str) -> ModelAnswer | None:
        """With its usage if unreported yet, else with none."""
        with self._lock:
            found = self._entry(self._path(request, model))
            if found is None:
                return None
            entry, answer = found
            if entry.get("reported", True):
                return answer.model_copy(update={"usage": Usage(), "batch": False})
            self.put(request, model, answer, reported=True)
            return answer

    def room(self, request: ModelRequest, model: str) -> int | None:
        """Recorded before a retry is sent, so a run the cost cap stops pays the cut-off once."""
        record = _stored(self._path(request, model, self.directory / ROOMS_DIR), ROOM_RECORD_BYTES)
        room = record.get("answer_tokens") if record is not None else None
        return room if type(room) is int and room > 0 else None  # not a bool, a float or a string

    def remember_room(self, request: ModelRequest, model: str, answer_tokens: int) -> None:
        record = {"answer_tokens": answer_tokens, "model": model, "stage": request.stage,
                  "artefact": request.artefact}
        write_text_atomic(self._path(request, model, self.directory / ROOMS_DIR), json.dumps(record, sort_keys=True))

    def reject(self, request: ModelRequest, model: str, why: str, *, raw: str | None = None) -> None:
        """Move the answer to ``rejected/`` with ``why`` (``raw``: one not even JSON, never cached)."""
        own = self._path(request, model)
        record = self.rejected_dir / own.name  # the same key: the request is hashed once
        with self._lock:
            found = self._entry(own)
            rejection = {"why": why, "answer": found[0]["answer"] if found is not None else None, "raw": raw}
            document = {"model": model, "request": request.model_dump(mode="json"),
                        "rejections": [*self._rejections(record), rejection][-REJECTIONS_KEPT:]}
            # the record first: a crash between the two leaves the answer to be checked, and rejected, again
            write_text_atomic(record, json.dumps(document, sort_keys=True))
            own.unlink(missing_ok=True)

    @staticmethod
    def _rejections(record: Path) -> list[dict[str, Any]]:
        document = _stored(record)  # none yet, or a damaged record: start it again
        kept = document.get("rejections") if document is not None else None
        return [item for item in kept if isinstance(item, dict)] if isinstance(kept, list) else []

    def rejection(self, request: ModelRequest, model: str) -> str | None:
        kept = self._rejections(self._path(request, model, self.rejected_dir))
        return str(kept[-1].get("why")) if kept else None

    def explain_miss(self, request: ModelRequest, model: str) -> str:
        """A rejection, or what changed since the nearest cached request for the same stage and file."""
        rejected = self.rejection(request, model)
        if rejected is not None:
            record = self._path(request, model, self.rejected_dir)
            return (f"stage {request.stage} ({request.artefact}): its answer was rejected ({rejected}); it is "
                    f"kept for diagnosis only, in {record}, and never served")
        own = self._path(request, model)
        if os.path.lexists(own):  # there, but not an answer stay can serve
            return (f"stage {request.stage} ({request.artefact}): its cache entry {own} is damaged "
                    f"({_damage(own)}) and never served; run without --replay to ask again")
        best: list[str] | None = None
        if self.directory.is_dir():
            for path in sorted(self.directory.glob("*.json")):
                entry = _stored(path) or {}
                cached = entry.get("request")
                if not isinstance(cached, dict) or (cached.get("stage"), cached.get("artefact")) != (
                        request.stage, request.artefact):
                    continue
                changed = differences(cached, entry.get("model"), request, model)
                if best is None or len(changed) < len(best):
                    best = changed
        if best is None:
            return f"no cached request for stage {request.stage} ({request.artefact})"
        what = "; ".join(best) if best else "no visible change"
        return f"stage {request.stage} ({request.artefact}): {what} since the nearest cached request"


REPLAY = " (replay)"  # added to the inner backend's name: the same backend answers


@dataclass
class CachedBackend:
    """Any backend, behind the request cache. ``replay=True`` forbids calls entirely."""

    inner: ModelClient
    cache: RequestCache
    replay: bool = False
    hits: int = 0
    misses: int = 0

    @property
    def name(self) -> str:
        return self.inner.name + REPLAY if self.replay else self.inner.name

    @property
    def prices(self) -> Mapping[str, Price]:  # an answer from the cache is priced as when it was paid for
        return prices_of(self.inner)

    @property
    def features(self) -> frozenset[str]:
        features = getattr(self.inner, "features", None)
        return frozenset({"screen"}) if features is None else frozenset(features)  # a plain ModelClient screens

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        cached = self.cache.claim(request, model)
        if cached is not None:
            self.hits += 1
            return cached
        if self.replay:
            why = self.cache.explain_miss(request, model)
            raise ReplayMiss(f"replay has no answer for this request: {why}")
        self.misses += 1
        # an earlier cut-off's room is asked for at once; a cut-off now is recorded before its retry is sent
        room = Room(self.cache.room(request, model),
                    lambda answer_tokens: self.cache.remember_room(request, model, answer_tokens))
        try:
            with sizing(room):
                answer = self.inner.complete(request, model)
        except AnswerError as exc:  # not JSON, or not an object: kept for diagnosis like any rejected answer
            self.cache.reject(request, model, str(exc), raw=exc.raw)
            raise
        self.cache.put(request, model, answer)
        return answer

    def reject(self, request: ModelRequest, model: str, why: str) -> None:
        self.cache.reject(request, model, why)

    def screening(self, text: str) -> Screening:
        """A rerun pays nothing; a replay uses the recorded verdict or skips the screen."""
        request, model = screen_request(text), getattr(self.inner, "screen_model", DEFAULT_MODELS["analysis"])
        cached = self.cache.claim(request, model)
        if cached is not None:  # paid for by an earlier run: nothing to count now
            return Screening(verdict(cached), request)
        if self.replay:  # no call may be made: said and logged as unscreened, never as screened
            return Screening(None, request, skipped="a replay with no recorded verdict for this brief")
        found = screening_of(self.inner, text)
        if found.answer is not None and found.reason is None:  # a rejected brief leaves no directory
            self.cache.put(found.request, model, found.answer)
        return found

    def screen(self, text: str) -> str | None:
        return self.screening(text).reason
