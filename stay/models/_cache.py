"""The request cache: answers keyed by a hash of the full request, under .runs/cache/.

A resumed run, or a re-scored eval, never pays twice for the same request; a
replayed run makes no call at all. On a miss, ``explain_miss`` names the part of
the request that changed since the nearest cached one (the same stage and file),
because "cache miss" alone is the question every caching harness leaves open.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stay.errors import ReplayMiss
from stay.models._protocol import ModelClient
from stay.models._request import ModelAnswer, ModelRequest, Usage


def request_key(request: ModelRequest, model: str, salt: str = "") -> str:
    """The cache key of a request. A ``salt`` (an eval epoch) makes otherwise identical
    requests distinct builds, without touching the prompt; no salt, the key as before."""
    document: dict[str, object] = {"model": model, "request": request.model_dump(mode="json")}
    if salt:
        document["salt"] = salt
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


@dataclass
class RequestCache:
    directory: Path
    salt: str = ""
    """Keys every entry apart from the same request under another salt (see ``request_key``)."""

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, request: ModelRequest, model: str) -> ModelAnswer | None:
        path = self._path(request_key(request, model, self.salt))
        if not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            return ModelAnswer.model_validate(entry["answer"])
        except (ValueError, KeyError):
            return None  # a damaged entry is a miss, never a crash

    def put(self, request: ModelRequest, model: str, answer: ModelAnswer) -> None:
        from stay.artefacts import write_text_atomic

        entry = {"model": model, "request": request.model_dump(mode="json"),
                 "answer": answer.model_dump(mode="json")}
        write_text_atomic(self._path(request_key(request, model, self.salt)), json.dumps(entry, sort_keys=True))

    def explain_miss(self, request: ModelRequest, model: str) -> str:
        """What changed since the nearest cached request for the same stage and file."""
        nearest: dict[str, Any] | None = None
        if self.directory.is_dir():
            for path in sorted(self.directory.glob("*.json")):
                try:
                    entry = json.loads(path.read_text(encoding="utf-8"))
                except ValueError:
                    continue
                cached = entry.get("request", {})
                if cached.get("stage") == request.stage and cached.get("artefact") == request.artefact:
                    nearest = entry
                    break
        if nearest is None:
            return f"no cached request for stage {request.stage} ({request.artefact})"
        cached = nearest["request"]
        now = request.model_dump(mode="json")
        changed = []
        if nearest.get("model") != model:
            changed.append(f"model ({nearest.get('model')} -> {model})")
        for name, label in (("max_tokens", "max_tokens"), ("output_schema", "the output schema")):
            if cached.get(name) != now[name]:
                changed.append(label)
        blocks = cached.get("system", [])
        if blocks[:1] != now["system"][:1]:
            changed.append("the stage instructions (prompt template)")
        if blocks[1:] != now["system"][1:]:
            changed.append("the reference documents")
        inputs = sorted(k for k in set(cached.get("inputs", {})) | set(now["inputs"])
                        if cached.get("inputs", {}).get(k) != now["inputs"].get(k))
        if inputs:
            changed.append(f"inputs: {', '.join(inputs)}")
        what = "; ".join(changed) if changed else "no visible change"
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
        cached = self.cache.get(request, model)
        if cached is not None:
            self.hits += 1
            return cached.model_copy(update={"usage": Usage()})  # paid for once, not again
        if self.replay:
            why = self.cache.explain_miss(request, model)
            raise ReplayMiss(f"replay has no answer for this request: {why}")
        self.misses += 1
        answer = self.inner.complete(request, model)
        self.cache.put(request, model, answer)
        return answer

    def screen(self, text: str) -> str | None:
        return None if self.replay else self.inner.screen(text)
