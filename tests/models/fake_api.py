"""A fake Claude Messages API for tests: canned answers computed from the request, and
prompt-cache accounting that follows the real API's rules.

``answer_for`` reads a real request body the way a model would see it (the stage from
its instructions, the inputs from the YAML blocks of the user message) and answers with
``stay.stages.offline_answer``. ``message`` and ``sse`` build a response body, plain
JSON or a Server-Sent Events stream (``reply`` picks the one the request asked for).

Structured output is enforced as the real API's constrained decoding enforces it: the
answer is fitted to the request's ``output_config.format.schema`` (every property that
schema does not declare is dropped, at every depth: the model could never have written
it; see ``tests/wire_schema.py``), and what remains must validate against that schema
(``jsonschema``). So a field the wire schema cannot carry arrives empty or missing, as it
would from the real model, and the course's validator sees it. An answer that still
fails the schema is one the real API could never return: the fake records it in
``VIOLATIONS`` and raises ``WireViolation`` (its HTTP servers answer 400 with the
reasons); ``tests/models/conftest.py`` fails the test that caused it, whatever stay did
with the error. Canned bodies a test writes itself are sent as they are.

``CacheAccounting`` bills prompt caching the way the API does, as far as it is
documented, and independently of stay's own prefix code:

- the cache key is the model plus every block, in cache order (system, then the
  message's content), up to a block marked ``cache_control``; every breakpoint is
  checked, longest first, and the longest one cached is read;
- a prefix becomes readable only once the request that wrote it has had its response
  returned: requests in flight together each pay the write;
- a prefix shorter than ``min_tokens`` (default 1,024) is neither written nor read;
- entries live 5 minutes from their last use; more than 4 breakpoints is a 400.

``FakeMessagesAPI`` also serves the Models API and authenticates as the real API does:

- ``GET /v1/models/{id}`` answers a ``ModelInfo`` for a model the SDK lists
  (``KNOWN_MODELS``) and a 404 ``not_found_error`` for any other id; ``POST
  /v1/messages`` naming an unknown model is the same 404, as the API answers it;
- every request must carry a credential, ``x-api-key`` or ``Authorization: Bearer``
  (a gateway's token); one without, or one not in ``credentials`` when that is given,
  is a 401 ``authentication_error``. ``seen_auth`` records which header each request
  carried and its value, in arrival order. With ``models_api=False`` it plays a gateway
  that serves only the Messages API: every ``GET`` is a 404 that names no model.

And it answers within ``max_tokens`` as the API does: every model takes ``max_tokens``
up to ``output_limit`` (served as ``ModelInfo.max_tokens``; a request above it is a
400); a request with adaptive thinking spends ``thinking`` tokens (default 0) thinking
first, counted in ``output_tokens`` and against ``max_tokens``; an answer that does not
fit what is left is cut there, with ``stop_reason`` ``max_tokens``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2

from stay.stages import REGISTRY, Prompts, offline_answer
from tests.remembered_yaml import load_yaml
from tests.wire_schema import check, fit
from tools.wire import message, sse, system_of, user_of
from tools.wire import reply as reply  # the tests import it from here, beside answer_for

_HEADER = re.compile(r"^# Stage: (.+)$", re.MULTILINE)
"""The first line of every stage's prompt template, which a model reads as its stage."""


def stage_headers(prompts: Prompts | None = None) -> dict[str, str]:
    """Each stage's header, as its prompt template names it, to the stage's name."""
    chosen = prompts or Prompts.load()
    found = {}
    for stage in REGISTRY:
        header = _HEADER.search(chosen.template(stage.prompt))
        assert header is not None, f"prompts/{stage.prompt}.md has no '# Stage:' header"
        found[header.group(1).strip()] = stage.name
    return found


STAGE_HEADERS = stage_headers()
_BLOCK = re.compile(r"^## (?P<name>\w+)\n\n(?P<fence>`{3,})(?P<kind>yaml|markdown)\n(?P<body>.*?)(?P=fence)\n",
                    re.DOTALL | re.MULTILINE)
"""An input as a request shows it: YAML data, or (the file as it stands, for a lesson) a
Markdown body, in a fence longer than any backtick run inside it."""
_DEFECT = re.compile(r"^- (?P<code>\S+) (?P<path>\S+) (?P<subject>.+?): (?P<message>.*)$", re.MULTILINE)
"""One line of ``defects_to_fix`` as a repair request shows it (stay.pipeline._fix.defects_note)."""
def _sdk_models() -> frozenset[str]:
    from anthropic.types import model_param

    return frozenset(model_param.ModelParam.__args__[0].__args__)  # type: ignore[attr-defined]


KNOWN_MODELS = _sdk_models()
"""The model ids the fake serves: those the installed SDK lists as current."""
OUTPUT_LIMIT = 64_000
"""The fake's ``max_tokens`` limit for every model unless a test gives another (the
documented limit of the 4.5 models)."""
MIN_CACHEABLE_TOKENS = 1_024
"""The smallest prefix the fake caches. Anthropic documents 512 tokens for Opus 5 and
Fable 5, 1,024 for Opus 4.8 and Sonnet 5, and up to 4,096 for older models; no figure is
published for the 5.5 generation, so the fake takes 1,024, the floor of the two
generations before it (the test at 2,048 shows the result does not hinge on it)."""


def tokens(text: str) -> int:
    """A stand-in tokenizer: about four characters a token."""
    return max(1, len(text) // 4)


def is_stage(body: dict[str, Any]) -> bool:
    return "# Stage:" in system_of(body)


def stage_of(body: dict[str, Any]) -> str:
    header = _HEADER.search(system_of(body))
    assert header is not None, "no '# Stage:' header in the system prompt"
    return STAGE_HEADERS[header.group(1).strip()]


def inputs_of(body: dict[str, Any]) -> dict[str, Any]:
    text = user_of(body)
    found: dict[str, Any] = {m.group("name"): load_yaml(m.group("body")) if m.group("kind") == "yaml"
                             else m.group("body") for m in _BLOCK.finditer(text)}
    # a repair's defects are a list of lines, not a block: read back as the fields the offline repair uses
    defects = re.search(r"^## defects_to_fix\n\n(?P<lines>(?:- .*\n)+)", text, re.MULTILINE)
    if defects is not None:
        found["defects_to_fix"] = [m.groupdict() for m in _DEFECT.finditer(defects.group("lines"))]
    return found


class WireViolation(AssertionError):
    """An answer the request's wire schema does not admit: the real API could not give it."""


VIOLATIONS: list[str] = []
"""Every wire-schema violation a fake met in this process, in order (the fakes run in
threads of the test process; the conftest fixture empties it around each test)."""


def wire_schema_of(body: dict[str, Any]) -> dict[str, Any]:
    schema = (body.get("output_config") or {}).get("format", {}).get("schema")
    if not isinstance(schema, dict):
        raise _violation(body, ["the request carries no output_config.format.schema"])
    return schema


def enforce(body: dict[str, Any], data: Any) -> Any:
    """``data`` as constrained decoding under the request's schema lets it through: fitted,
    then validated; a misfit is recorded and raised (``WireViolation``)."""
    schema = wire_schema_of(body)
    fitted = fit(data, schema)
    problems = check(fitted, schema)
    if problems:
        raise _violation(body, problems)
    return fitted


def _violation(body: dict[str, Any], problems: list[str]) -> WireViolation:
    where = stage_of(body) if is_stage(body) else "a non-stage request"
    text = f"fake API: the answer for {where} cannot satisfy its wire schema: " + "; ".join(problems)
    VIOLATIONS.append(text)
    return WireViolation(text)


def violation_response(exc: WireViolation) -> httpx2.Response:
    """The 400 the MockTransport handlers send for a violation (recorded already)."""
    return httpx2.Response(400, json=error_body(str(exc)))


def error_body(text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": text}}


def answer_for(body: dict[str, Any]) -> dict[str, Any]:
    """The offline backend's answer to a stage request, as the wire schema lets it through."""
    fitted: dict[str, Any] = enforce(body, offline_answer(stage_of(body), inputs_of(body)))
    return fitted


# -- prompt-cache accounting -------------------------------------------------------------


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    system = body.get("system") or []
    blocks = [{"text": system}] if isinstance(system, str) else list(system)
    content = body["messages"][0]["content"]
    return blocks + ([{"text": content}] if isinstance(content, str) else list(content))


class TooManyBreakpoints(ValueError):
    pass


@dataclass
class Billed:
    """One stage request as the fake billed it."""

    stage: str
    model: str
    usage: dict[str, int]


@dataclass
class CacheAccounting:
    """The API's prompt-cache billing, as documented (see the module docstring)."""

    min_tokens: int = MIN_CACHEABLE_TOKENS
    ttl: float = 300.0
    clock: Callable[[], float] = time.monotonic
    readable: dict[str, float] = field(default_factory=dict)
    """key -> when it expires; written by a request whose response has been returned."""
    billed: list[Billed] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def breakpoints(self, body: dict[str, Any]) -> list[tuple[str, int]]:
        """(key, prefix tokens) of every cacheable breakpoint, shortest first."""
        blocks = _blocks(body)
        marked = [i for i, block in enumerate(blocks) if block.get("cache_control")]
        if len(marked) > 4:
            raise TooManyBreakpoints(f"{len(marked)} cache_control blocks; at most 4 are allowed")
        found = []
        for index in marked:
            prefix = blocks[:index + 1]
            size = sum(tokens(block["text"]) for block in prefix)
            if size >= self.min_tokens:
                key = hashlib.sha256(json.dumps([body["model"], [b["text"] for b in prefix]]).encode()).hexdigest()
                found.append((key, size))
        return found

    def bill(self, body: dict[str, Any], answer: str) -> tuple[dict[str, int], list[str]]:
        """Usage for a request arriving now, and the keys it writes (readable only after
        ``answered``)."""
        total = sum(tokens(block["text"]) for block in _blocks(body))
        points = self.breakpoints(body)
        with self.lock:
            now = self.clock()
            read = 0
            for key, size in reversed(points):
                if self.readable.get(key, float("-inf")) > now:
                    read = size
                    break
            for key, size in points:
                if size <= read:
                    self.readable[key] = now + self.ttl  # a read refreshes the entry
            written = [key for key, size in points if size > read]
            wrote = max((size for _key, size in points), default=read) - read
        usage = {"input_tokens": total - read - wrote, "output_tokens": tokens(answer),
                 "cache_creation_input_tokens": wrote, "cache_read_input_tokens": read}
        return usage, written

    def answered(self, keys: list[str]) -> None:
        """The writer's response has been returned: its prefixes are readable from now."""
        with self.lock:
            until = self.clock() + self.ttl
            for key in keys:
                self.readable[key] = until

    def record(self, stage: str, model: str, usage: dict[str, int]) -> None:
        with self.lock:
            self.billed.append(Billed(stage, model, usage))

    def total(self, name: str) -> int:
        return sum(entry.usage[name] for entry in self.billed)

    @property
    def input_tokens(self) -> int:
        return self.total("input_tokens")

    @property
    def cache_creation_input_tokens(self) -> int:
        return self.total("cache_creation_input_tokens")

    @property
    def cache_read_input_tokens(self) -> int:
        return self.total("cache_read_input_tokens")

    @property
    def read_share(self) -> float:
        """Cache reads as a share of all input tokens of the stage requests."""
        whole = self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
        return self.cache_read_input_tokens / whole if whole else 0.0


class FakeMessagesAPI:
    """POST /v1/messages on 127.0.0.1, answering every stage and the input screen, as JSON
    or as a stream; records what it saw and said, and bills the prompt cache. Every answer
    is held to the request's wire schema (the module docstring); one it cannot satisfy is a
    400 naming the reasons, kept in ``violations``."""

    def __init__(self, accounting: CacheAccounting | None = None, latency: float = 0.0,
                 credentials: frozenset[str] | None = None, thinking: int = 0,
                 output_limit: int = OUTPUT_LIMIT, models_api: bool = True) -> None:
        self.requests: list[dict[str, Any]] = []
        self.credentials = credentials
        """The keys and tokens accepted; None accepts any non-empty one."""
        self.seen_auth: list[tuple[str, str]] = []
        self.thinking, self.output_limit, self.models_api = thinking, output_limit, models_api
        self.model_checks: list[str] = []
        self.answers: list[dict[str, Any]] = []
        self.screens: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self.accounting = accounting or CacheAccounting()
        self.latency = latency
        api = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def _authenticated(self) -> bool:
                bearer = self.headers.get("authorization", "")
                found = (("x-api-key", self.headers["x-api-key"]) if self.headers.get("x-api-key") else
                         ("bearer", bearer.removeprefix("Bearer ")) if bearer.startswith("Bearer ") else ("", ""))
                with lock:
                    api.seen_auth.append(found)
                if found[1] and (api.credentials is None or found[1] in api.credentials):
                    return True
                self._send(401, {"type": "error", "error": {"type": "authentication_error",
                                                            "message": "invalid x-api-key"}}, {})
                return False

            def do_GET(self) -> None:
                if not self._authenticated():
                    return None
                model = self.path.removeprefix("/v1/models/").split("?")[0]
                with lock:
                    api.model_checks.append(model)
                if not api.models_api:
                    return self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                                       "message": "Not Found"}}, {})
                if not self.path.startswith("/v1/models/") or model not in KNOWN_MODELS:
                    return self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                                       "message": f"model: {model}"}}, {})
                return self._send(200, {"type": "model", "id": model, "display_name": model,
                                        "created_at": "2026-01-01T00:00:00Z", "lifecycle": "active",
                                        "max_tokens": api.output_limit}, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                if not self._authenticated():
                    return None
                if self.path.rstrip("/") != "/v1/messages":
                    return self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                                       "message": self.path}}, body)
                if body.get("model") not in KNOWN_MODELS:
                    return self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                                       "message": f"model: {body.get('model')}"}},
                                      body)
                try:
                    data = answer_for(body) if is_stage(body) else enforce(
                        body, {"flagged": False, "reason": "a course brief"})
                except WireViolation as exc:
                    with lock:
                        api.violations.append(str(exc))
                    return self._send(400, error_body(str(exc)), body)
                if body.get("max_tokens", 0) > api.output_limit:
                    return self._send(400, error_body(f"max_tokens: {body['max_tokens']} > {api.output_limit}, "
                                                      f"which is the maximum allowed for {body['model']}"), body)
                thought = api.thinking if body.get("thinking") else 0
                text, stop = json.dumps(data), "end_turn"
                room = max(body.get("max_tokens", 0) - thought, 0)
                if tokens(text) > room:  # cut where max_tokens ends, as the model is
                    text, stop = text[:room * 4], "max_tokens"
                try:
                    usage, writes = api.accounting.bill(body, text)
                    usage["output_tokens"] = thought + (room if stop == "max_tokens" else usage["output_tokens"])
                except TooManyBreakpoints as exc:
                    return self._send(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                       "message": str(exc)}}, body)
                if api.latency:
                    time.sleep(api.latency)
                with lock:
                    if is_stage(body):
                        api.requests.append(body)
                        api.answers.append(data)
                        api.accounting.record(stage_of(body), body["model"], usage)
                    else:
                        api.screens.append(body)
                # readable from the moment the response goes out: no client can know of it sooner
                api.accounting.answered(writes)
                self._send(200, message(text, model=body["model"], usage=usage, stop_reason=stop), body)

            def _send(self, status: int, payload: dict[str, Any], body: dict[str, Any]) -> None:
                streamed = status == 200 and body.get("stream")
                raw = sse(payload) if streamed else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "text/event-stream" if streamed else "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                self.wfile.flush()

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)  # shutdown() waits a poll: 0.5 s by default

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeMessagesAPI:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
