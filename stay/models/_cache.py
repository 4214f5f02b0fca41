"""The request cache: answers keyed by a hash of the full request, under .runs/cache/.

A resumed run, or a re-scored eval, never pays twice for the same request; a
replayed run makes no call at all. On a miss, ``explain_miss`` names the parts of the
request that changed since the nearest cached one (the same stage and file, with the
fewest changed parts), because "cache miss" alone is the question every caching
harness leaves open.

Every paid token is reported once, in the run that uses the answer: a live answer's
usage comes back from the call that paid it; an answer a Message Batch paid for is
stored unreported, and the first run to use it reports its usage at the batch price.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stay.errors import ReplayMiss
from stay.models._protocol import ModelClient
from stay.models._roles import DEFAULT_MODELS
from stay.models._screen import Screening, screen_request, screening_of, verdict
from stay.requests import ModelAnswer, ModelRequest, Usage


def request_key(request: ModelRequest, model: str, salt: str = "") -> str:
    """The cache key of a request. A ``salt`` (an eval epoch) makes otherwise identical
    requests distinct builds, without touching the prompt; no salt, the key as before."""
    document: dict[str, object] = {"model": model, "request": request.model_dump(mode="json")}
    if salt:
        document["salt"] = salt
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def differences(cached: dict[str, Any], cached_model: str | None, request: ModelRequest, model: str) -> list[str]:
    """The parts of ``request`` that differ from a cached request, in words."""
    now = request.model_dump(mode="json")
    changed = []
    if cached_model != model:
        changed.append(f"model ({cached_model} -> {model})")
    for name, label in (("max_tokens", "max_tokens"), ("output_schema", "the output schema")):
        if cached.get(name) != now[name]:
            changed.append(label)
    changed += [label for label in _system_changes(cached.get("system"), now["system"]) if label not in changed]
    was = cached.get("inputs", {}) if isinstance(cached.get("inputs"), dict) else {}
    inputs = sorted(k for k in set(was) | set(now["inputs"]) if was.get(k) != now["inputs"].get(k))
    if inputs:
        changed.append(f"inputs: {', '.join(inputs)}")
    return changed


def _system_changes(was: Any, now: list[dict[str, Any]]) -> list[str]:
    """Which parts of the system prompt changed, by the blocks' labels."""
    if not isinstance(was, list) or [b.get("label") for b in was if isinstance(b, dict)] != [
            b.get("label") for b in now]:
        return ["the system prompt's layout"]
    pairs = enumerate(zip(was, now, strict=True))
    return [block.get("label") or f"system block {index + 1}" for index, (old, block) in pairs
            if old.get("text") != block.get("text")]


@dataclass
class RequestCache:
    directory: Path
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    salt: str = ""
    """Keys every entry apart from the same request under another salt (see ``request_key``)."""

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def _entry(self, request: ModelRequest, model: str) -> dict[str, Any] | None:
        path = self._path(request_key(request, model, self.salt))
        if not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            ModelAnswer.model_validate(entry["answer"])
        except (ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss, never a crash
        return entry if isinstance(entry, dict) else None

    def get(self, request: ModelRequest, model: str) -> ModelAnswer | None:
        """The cached answer as it was stored (with the usage it was paid with)."""
        entry = self._entry(request, model)
        return None if entry is None else ModelAnswer.model_validate(entry["answer"])

    def put(self, request: ModelRequest, model: str, answer: ModelAnswer, *, reported: bool = True) -> None:
        """Store an answer. ``reported=False``: its usage has not been counted by any run
        yet (a batch paid for it); the first ``claim`` reports it."""
        from stay.artefacts import write_text_atomic

        entry = {"model": model, "request": request.model_dump(mode="json"),
                 "answer": answer.model_dump(mode="json"), "reported": reported}
        write_text_atomic(self._path(request_key(request, model, self.salt)), json.dumps(entry, sort_keys=True))

    def claim(self, request: ModelRequest, model: str) -> ModelAnswer | None:
        """The cached answer as a run should count it: with its usage if no run has
        reported it yet (then it is marked reported), else with none (paid once)."""
        with self._lock:
            entry = self._entry(request, model)
            if entry is None:
                return None
            answer = ModelAnswer.model_validate(entry["answer"])
            if entry.get("reported", True):
                return answer.model_copy(update={"usage": Usage(), "batch": False})
            self.put(request, model, answer, reported=True)
            return answer

    def explain_miss(self, request: ModelRequest, model: str) -> str:
        """What changed since the nearest cached request for the same stage and file:
        the one with the fewest changed parts (ties: the first by file name)."""
        best: list[str] | None = None
        if self.directory.is_dir():
            for path in sorted(self.directory.glob("*.json")):
                try:
                    entry = json.loads(path.read_text(encoding="utf-8"))
                    cached = entry["request"]
                except (ValueError, KeyError, TypeError):
                    continue
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
        return f"{self.inner.name} (replay)" if self.replay else self.inner.name

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        cached = self.cache.claim(request, model)
        if cached is not None:
            self.hits += 1
            return cached
        if self.replay:
            why = self.cache.explain_miss(request, model)
            raise ReplayMiss(f"replay has no answer for this request: {why}")
        self.misses += 1
        answer = self.inner.complete(request, model)
        self.cache.put(request, model, answer)
        return answer

    def screening(self, text: str) -> Screening:
        """The screen, through the cache: a rerun does not pay for it again; a replayed
        run uses the recorded verdict, or (none recorded) skips the screen, calling nothing."""
        request, model = screen_request(text), getattr(self.inner, "screen_model", DEFAULT_MODELS["analysis"])
        cached = self.cache.claim(request, model)
        if cached is not None:  # paid for by an earlier run: nothing to count now
            return Screening(verdict(cached), request)
        if self.replay:
            return Screening(None, request)
        found = screening_of(self.inner, text)
        if found.answer is not None and found.reason is None:  # a rejected brief leaves no directory
            self.cache.put(found.request, model, found.answer)
        return found

    def screen(self, text: str) -> str | None:
        return self.screening(text).reason
