"""A fake Claude Messages API for tests: canned answers computed from the request, and
prompt-cache accounting that follows the real API's rules.

``answer_for`` reads a real request body the way a model would see it (the stage from
its instructions, the inputs from the YAML blocks of the user message) and answers with
``stay.stages.offline_answer`` (or, where a test set ``FakeMessagesAPI.scripted[stage]``,
as that script answers, playing a model that answers otherwise: a reviewer that finds a
wrong key). ``message`` and ``sse`` build a response body, plain
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

- the cache key is the model, the tools, the structured-output schema
  (``output_config.format``) and the thinking settings (``thinking`` and
  ``output_config.effort``: the documented invalidations), plus every block, in cache
  order (system, then the message's content), up to a block marked ``cache_control``;
  every breakpoint is checked, longest first, and the longest one cached is read; so a
  request differing from a written one in its schema or effort alone reads nothing;
- a prefix becomes readable only once the request that wrote it has begun its
  response (a stream's first event, sent half its ``latency`` in; a whole answer, when it
  does not stream): requests sent before that each pay the write;
- a prefix shorter than ``min_tokens`` (by default the model's published minimum,
  ``stay.models.min_cacheable_tokens``) is neither written nor read;
- entries live 5 minutes from their last use, or an hour when the breakpoint says
  ``"ttl": "1h"``; more than 4 breakpoints is a 400.

``FakeMessagesAPI`` also serves the Message Batches endpoints as the API documents them:
``POST /v1/messages/batches`` takes ``{"requests": [{"custom_id", "params"}]}`` and
answers an ``in_progress`` batch (``created_at`` now, ``expires_at`` 24 hours later, as
the API sets them); ``GET /v1/messages/batches/{id}`` polls it (it ends at
the ``batch_polls``-th poll); ``GET .../results`` streams one JSON line per entry. An
ended batch has run its entries one after another, in order, through the same answers
and cache accounting as live requests (``between_entries`` runs between two, to let a
test move the accounting's clock as a long batch would). ``batch_outcomes`` makes an
entry (by index) end ``errored``, ``canceled``, ``expired`` (none of them billed: no
message, no usage), ``refusal`` (a billed message whose stop reason is ``refusal``) or
``garbled`` (a billed message whose text is not JSON: canned, as no model under
constrained decoding writes it).
``batch_faults`` is a queue of failures for the next batch calls, one each (None: that
call is answered as usual): an HTTP
status (answered with the API's error body, and ``retry-after: batch_retry_after`` when
that is set) or ``"reset"`` (the connection is closed with no response).

``FakeMessagesAPI`` can also misbehave as the service does under load, each way stated
where it is declared: ``faults`` are sent, one per request and in order, before it
answers normally (``RateLimited``: a 429 whose ``retry-after`` is the raw header value,
seconds or an HTTP-date, or a spend-limit 429 as the API marks it; ``Stall``: a stream
that starts and then sends nothing; ``PingsOnly``: a stream that sends only ``ping``
events), and a ``Limiter`` answers 429 to every request past its rate.

Timing a test can rely on, however loaded the machine (never a sleep that a slow thread
outruns). Of the ``held`` stages (by default the wave's, which a client sends side by
side; the ones before go one at a time, and holding them would only wait): ``gather``
holds every request, before its response begins, until that many are in flight at once
(it happens once; later ones are not held), so calls a client sends together are seen to
overlap; ``hold_for`` holds each stage's first streamed response, after its first event,
until that many more requests of its stage have arrived, as a model still answering. Either gives up after ``hold_timeout``, so a client
that never sends them is measured, not hung. ``arrivals`` records, for every stage
request, how many responses of its stage had begun and not ended when it arrived.

Every response carries a ``request-id`` header (``req_fake`` and a counter), as the API's
do; ``request_ids`` lists them in the order sent.

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

With ``realistic=Realism(seed=...)`` (``tests/models/fake_realism.py``, which states its
rules) the answers are the length a real model writes, by seeded draws of its own:
lessons inside house style's words-per-minute band, longer prose fields, and thinking
tokens by effort for every request that thinks, live or in a batch; still held to the
wire schema.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import httpx2

from stay.models import min_cacheable_tokens
from stay.stages import REGISTRY, Prompts, offline_answer
from tests.models.fake_realism import Realism
from tests.remembered_yaml import load_yaml
from tests.wire_schema import check, fit
from tools.wire import message, sse, system_of, user_of
from tools.wire import reply as reply  # the tests import it from here, beside answer_for

_HEADER = re.compile(r"^# Stage: (.+)$", re.MULTILINE)
"""The first line of every stage's prompt template, which a model reads as its stage."""
WAVE = frozenset(stage.name for stage in REGISTRY if stage.phase == "wave")
"""The stages a build sends side by side (the ones before them go one at a time)."""


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
JUDGING = frozenset(stage.name for stage in REGISTRY if stage.role == "judging")
"""The stages that judge what the others generated (the review)."""
_BLOCK = re.compile(r"^## (?P<name>\w+)\n\n(?P<fence>`{3,})(?P<kind>yaml|markdown)\n(?P<body>.*?)(?P=fence)\n",
                    re.DOTALL | re.MULTILINE)
"""An input as a request shows it: YAML data, or (the file as it stands, for a lesson) a
Markdown body, in a fence longer than any backtick run inside it."""
_DEFECT = re.compile(r"^- (?P<code>\S+) (?P<path>\S+) (?P<subject>.+?): (?P<message>.*)\n(?P<quote>(?:  > .*\n)*)",
                     re.MULTILINE)
"""One defect of ``defects_to_fix`` as a repair request shows it (stay.pipeline._run.defects_note):
its line, and under it the lines of its quote, if it has one."""
def _sdk_models() -> frozenset[str]:
    from anthropic.types import model_param

    return frozenset(model_param.ModelParam.__args__[0].__args__)  # type: ignore[attr-defined]


KNOWN_MODELS = _sdk_models()
"""The model ids the fake serves: those the installed SDK lists as current."""
OUTPUT_LIMIT = 64_000
"""The fake's ``max_tokens`` limit for every model unless a test gives another (the
documented limit of the 4.5 models)."""
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
    defects = re.search(r"^## defects_to_fix\n\n(?P<lines>(?:(?:- |  > ).*\n)+)", text, re.MULTILINE)
    if defects is not None:
        found["defects_to_fix"] = [
            {**m.groupdict(), "quote": "\n".join(line[4:] for line in m["quote"].splitlines())} if m["quote"]
            else {k: v for k, v in m.groupdict().items() if k != "quote"}
            for m in _DEFECT.finditer(defects.group("lines"))]
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


# -- misbehaviour ------------------------------------------------------------------------


@dataclass(frozen=True)
class RateLimited:
    """A 429 ``rate_limit_error``. ``retry_after`` is sent as the ``retry-after`` header,
    verbatim (``"20"`` or an HTTP-date such as ``"Wed, 21 Oct 2026 07:28:20 GMT"``).
    ``spend_limit``: the organisation's spend limit is reached, as the API says it:
    ``error.details.error_code`` ``enforced_spend_limit_reached`` and no ``retry-after``."""

    retry_after: str | None = None
    spend_limit: bool = False

    def body(self) -> dict[str, Any]:
        if not self.spend_limit:
            return {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}
        return {"type": "error", "error": {
            "type": "rate_limit_error", "details": {"error_code": "enforced_spend_limit_reached"},
            "message": "Your organization has reached its monthly spend limit."}}


@dataclass(frozen=True)
class Stall:
    """A stream that starts (200, ``message_start``) and then sends nothing for
    ``seconds`` (or until the fake stops), then closes: a hung upstream."""

    seconds: float = 5.0


@dataclass(frozen=True)
class PingsOnly:
    """A stream that starts and then sends only ``ping`` events, one every ``every``
    seconds, for ``seconds`` (or until the fake stops): alive, but never answering."""

    seconds: float = 5.0
    every: float = 0.02


Fault = RateLimited | Stall | PingsOnly


@dataclass
class Limiter:
    """A rate limiter in front of the API: at most ``limit`` requests are admitted in any
    ``window`` seconds; every other request is a 429 with ``retry-after`` ``retry_after``.
    Records when each request arrived and whether it was admitted."""

    limit: int
    window: float
    retry_after: str = "1"
    clock: Callable[[], float] = time.monotonic
    arrivals: list[tuple[float, bool]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def admit(self) -> bool:
        with self.lock:
            now = self.clock()
            recent = sum(1 for when, admitted in self.arrivals if admitted and when > now - self.window)
            admitted = recent < self.limit
            self.arrivals.append((now, admitted))
            return admitted


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

    min_tokens: int | None = None
    """The minimum cacheable prefix for every model; None: each model's published one."""
    ttl: float = 300.0
    clock: Callable[[], float] = time.monotonic
    readable: dict[str, float] = field(default_factory=dict)
    """key -> when it expires; written by a request whose response has been returned."""
    lifetimes: dict[str, float] = field(default_factory=dict)
    """key -> how long its entry lives after each use (its breakpoint's ttl: 5 minutes or 1 hour)."""
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
            if size >= (min_cacheable_tokens(body["model"]) if self.min_tokens is None else self.min_tokens):
                config = body.get("output_config") or {}
                scope = [body["model"], body.get("tools"), body.get("tool_choice"), body.get("thinking"),
                         config.get("format"), config.get("effort")]
                key = hashlib.sha256(json.dumps([scope, [b["text"] for b in prefix]], sort_keys=True).encode()).hexdigest()
                self.lifetimes[key] = 3600.0 if blocks[index]["cache_control"].get("ttl") == "1h" else self.ttl
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
                    self.readable[key] = now + self.lifetimes.get(key, self.ttl)  # a read refreshes the entry
            written = [key for key, size in points if size > read]
            wrote = max((size for _key, size in points), default=read) - read
        usage = {"input_tokens": total - read - wrote, "output_tokens": tokens(answer),
                 "cache_creation_input_tokens": wrote, "cache_read_input_tokens": read}
        return usage, written

    def answered(self, keys: list[str]) -> None:
        """The writer's response has begun: its prefixes are readable from now."""
        with self.lock:
            now = self.clock()
            for key in keys:
                self.readable[key] = now + self.lifetimes.get(key, self.ttl)

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
        """Cache reads as a share of all input tokens of the generation stages' requests: the
        judging role's review reads a whole lesson, its exercises and quiz no other call holds,
        so its input is the lesson's own, and the share measures the prefix layout without it."""
        kept = [entry.usage for entry in self.billed if entry.stage not in JUDGING]
        whole = sum(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] for u in kept)
        return sum(u["cache_read_input_tokens"] for u in kept) / whole if whole else 0.0


def _stamp(when: float) -> str:
    """``when`` (epoch seconds) as the API writes a time: RFC 3339, UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def _stopped(body: dict[str, Any], reason: str | None) -> dict[str, Any]:
    """The response as the model stopped it: cut off at max_tokens, or refused."""
    if reason == "max_tokens":
        text = body["content"][-1]["text"]
        return {**body, "stop_reason": reason, "content": [{"type": "text", "text": text[:len(text) // 2]}]}
    if reason == "refusal":
        return {**body, "stop_reason": reason, "content": [],
                "stop_details": {"type": "refusal", "category": "cyber", "explanation": "a test refusal"}}
    return body


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-answer (a deadline, a cancelled stream) is normal, not
        a server error: only anything else prints its traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LocalServer:
    """A fake's HTTP server on 127.0.0.1, run on a daemon thread while the fake is entered
    (``with``): the one lifecycle every fake here shares."""

    server: ThreadingHTTPServer
    thread: threading.Thread
    stopping: threading.Event

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = _Server(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)  # shutdown() waits a poll: 0.5 s by default

    @property
    def origin(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class FakeMessagesAPI(LocalServer):
    """POST /v1/messages on 127.0.0.1, answering every stage and the input screen, as JSON
    or as a stream; records what it saw and said, and bills the prompt cache. Every answer
    is held to the request's wire schema (the module docstring); one it cannot satisfy is a
    400 naming the reasons, kept in ``violations``."""

    def __init__(self, accounting: CacheAccounting | None = None, latency: float = 0.0,
                 stop: Callable[[dict[str, Any]], str | None] | None = None,
                 served: dict[str, str] | None = None, *,
                 faults: list[Fault] | None = None, limiter: Limiter | None = None, batch_polls: int = 1,
                 batch_outcomes: dict[int, str] | None = None, batch_faults: list[int | str | None] | None = None,
                 batch_retry_after: str | None = None, between_entries: Callable[[], None] | None = None,
                 credentials: frozenset[str] | None = None, thinking: int = 0,
                 output_limit: int = OUTPUT_LIMIT, models_api: bool = True,
                 realistic: Realism | None = None, gather: int = 0, held: frozenset[str] = WAVE,
                 hold_for: int = 0, hold_timeout: float = 20.0,
                 counted: Callable[[int], dict[str, Any]] | None = None) -> None:
        self.faults = list(faults or [])
        self.counted = counted
        """The body a token count is answered with, given the count (None: ``{"input_tokens": n}``)."""
        self.gather, self.held, self.hold_for, self.hold_timeout = gather, held, hold_for, hold_timeout
        self.arrivals: list[tuple[str, int]] = []
        """(stage, that stage's responses begun and not ended) per stage request, on arrival."""
        self._traffic = threading.Condition()
        self._in_flight = 0
        self._gathered = False
        self._arrived: dict[str, int] = {}
        self._answering: dict[str, int] = {}
        self.limiter = limiter
        self.stopping = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.request_ids: list[str] = []
        """The ``request-id`` of every response sent, in order."""
        self.served = served or {}
        """Added to every response's usage, as the real API reports how it served a request:
        ``service_tier`` (standard, priority, batch), ``inference_geo`` (global, us)."""
        self.stop = stop
        """Called with each stage request before it is answered (it may block, as a model
        still thinking does): the stop reason the model stops for, or None for end_turn.
        ``max_tokens``: the answer's text is cut in half; ``refusal``: no text, with
        ``stop_details``. Either is billed as any answer is, as the real API bills them."""
        self.batches: dict[str, list[dict[str, Any]]] = {}
        """Batch id -> its entries as submitted."""
        self.batch_calls: list[str] = []
        """Every batch call, in order (``POST batches``, ``GET <id>``, ``GET <id>/results``), faults included."""
        self.batch_results: dict[str, list[dict[str, Any]]] = {}
        self.batch_polls, self.batch_outcomes = batch_polls, batch_outcomes or {}
        self.batch_faults, self.batch_retry_after = list(batch_faults or []), batch_retry_after
        self.between_entries = between_entries
        self._polled: dict[str, int] = {}
        self._created: dict[str, float] = {}
        self.credentials = credentials
        """The keys and tokens accepted; None accepts any non-empty one."""
        self.seen_auth: list[tuple[str, str]] = []
        self.thinking, self.output_limit, self.models_api = thinking, output_limit, models_api
        self.realistic = realistic
        """Answers and thinking the size a real model's are (``tests/models/fake_realism.py``);
        None: the offline answers, and ``thinking`` tokens for every request that thinks."""
        self.model_checks: list[str] = []
        self.token_counts: list[dict[str, Any]] = []
        """The bodies POSTed to /v1/messages/count_tokens, in arrival order."""
        self.answers: list[dict[str, Any]] = []
        self.screens: list[dict[str, Any]] = []
        self.screen_usage: list[dict[str, int]] = []
        """The usage billed for each screen (a request with no stage), as ``screens`` has them."""
        self.violations: list[str] = []
        self.scripted: dict[str, Callable[[dict[str, Any], dict[str, Any]], Any]] = {}
        """Stage -> a test's script for its answers, given the inputs the request shows and
        the offline answer; what it returns is held to the wire schema like any answer, so a
        script plays a model that answers differently (a reviewer that finds a wrong key, a
        quiz with one planted), never one the real API could not return."""
        self.accounting = accounting or CacheAccounting()
        self.latency = latency
        api = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def send_response(self, code: int, message: str | None = None) -> None:
                """Every response carries a ``request-id`` header, as the API's do."""
                super().send_response(code, message)
                with lock:
                    api.request_ids.append(f"req_fake{len(api.request_ids):06d}")
                    said = api.request_ids[-1]
                self.send_header("request-id", said)

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

            def _count_tokens(self, body: dict[str, Any]) -> None:
                """``POST /v1/messages/count_tokens``: the input tokens the same body would be
                billed for as ``/v1/messages`` (every text block, ``tokens`` each; nothing is
                cached or answered, and nothing billed); an unknown model is the same 404."""
                if body.get("model") not in KNOWN_MODELS:
                    return self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                                       "message": f"model: {body.get('model')}"}},
                                      body)
                with lock:
                    api.token_counts.append(body)
                count = sum(tokens(block["text"]) for block in _blocks(body))
                return self._send(200, {"input_tokens": count} if api.counted is None else api.counted(count), {})

            def do_GET(self) -> None:
                if not self._authenticated():
                    return None
                if self.path.startswith("/v1/messages/batches"):
                    return self._batches("GET", {})
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
                if self.path.rstrip("/") == "/v1/messages/batches":
                    return self._batches("POST", body)
                if self.path.rstrip("/") == "/v1/messages/count_tokens":
                    return self._count_tokens(body)
                if self.path.rstrip("/") != "/v1/messages":
                    return self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                                       "message": self.path}}, body)
                if body.get("model") not in KNOWN_MODELS:
                    return self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                                       "message": f"model: {body.get('model')}"}},
                                      body)
                with lock:
                    fault = api.faults.pop(0) if api.faults else None
                if fault is None and api.limiter is not None and not api.limiter.admit():
                    fault = RateLimited(api.limiter.retry_after)
                if fault is not None:
                    return self._misbehave(fault, body)
                stage = stage_of(body) if is_stage(body) else None
                first = api._arrive(stage)
                self.begun = False
                try:
                    return self._respond(body, stage, first)
                finally:
                    api._leave(stage, self.begun)

            def _respond(self, body: dict[str, Any], stage: str | None, first: bool) -> None:
                """A /v1/messages request answered: billed, recorded and sent, held as asked."""
                try:
                    data = api.answer(body, {"flagged": False, "reason": "a course brief"})
                except WireViolation as exc:
                    with lock:
                        api.violations.append(str(exc))
                    return self._send(400, error_body(str(exc)), body)
                if body.get("max_tokens", 0) > api.output_limit:
                    return self._send(400, error_body(f"max_tokens: {body['max_tokens']} > {api.output_limit}, "
                                                      f"which is the maximum allowed for {body['model']}"), body)
                thought = api.thought(body)
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
                reason = api.stop(body) if api.stop is not None and is_stage(body) else None
                with lock:
                    if is_stage(body):
                        api.requests.append(body)
                        api.answers.append(data)
                        api.accounting.record(stage_of(body), body["model"], usage)
                    else:
                        api.screens.append(body)
                        api.screen_usage.append(usage)
                payload = _stopped(message(text, model=body["model"], usage={**usage, **api.served},
                                           stop_reason=stop), reason)
                api._gathering(stage)
                if not body.get("stream"):
                    time.sleep(api.latency)
                    # readable from the moment the response goes out: no client can know of it sooner
                    api.accounting.answered(writes)
                    return self._send(200, payload, body)
                # a stream: half the latency to its first event (the prefill), half to its end;
                # the prefix is readable once the response has begun, as the docs have it
                raw = sse(payload)
                cut = raw.index(b"\n\n") + 2
                time.sleep(api.latency / 2)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                # readable and answering just before the first event goes out, not after: a
                # request that event lets go is billed on another thread, which a loaded machine
                # may run first
                api.accounting.answered(writes)
                self.begun = api._begun(stage)
                self.wfile.write(raw[:cut])
                self.wfile.flush()
                api._hold(stage, first)
                time.sleep(api.latency / 2)
                self.wfile.write(raw[cut:])
                self.wfile.flush()

            def _misbehave(self, fault: Fault, body: dict[str, Any]) -> None:
                if isinstance(fault, RateLimited):
                    raw = json.dumps(fault.body()).encode()
                    self.send_response(429)
                    if fault.retry_after is not None and not fault.spend_limit:
                        self.send_header("retry-after", fault.retry_after)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                # a stream with no length: it ends when the connection closes
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                started = message("", model=body["model"])
                self.wfile.write(sse(started).split(b"\n\n")[0] + b"\n\n")  # message_start only
                self.wfile.flush()
                ends = time.monotonic() + fault.seconds
                every = fault.every if isinstance(fault, PingsOnly) else 0.02
                try:
                    while time.monotonic() < ends and not api.stopping.wait(every):
                        if isinstance(fault, PingsOnly):
                            self.wfile.write(b'event: ping\ndata: {"type": "ping"}\n\n')
                            self.wfile.flush()
                except OSError:
                    pass  # the client gave up: what a deadline is for

            def _batches(self, method: str, body: dict[str, Any]) -> None:
                path = self.path.split("?")[0].rstrip("/")
                with lock:
                    api.batch_calls.append(f"{method} {path}")
                    fault = api.batch_faults.pop(0) if api.batch_faults else None
                if fault == "reset":
                    self.close_connection = True
                    self.connection.shutdown(2)  # no status line at all: the client sees the connection drop
                    return
                if isinstance(fault, int):
                    kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                            429: "rate_limit_error", 529: "overloaded_error"}.get(fault, "api_error")  # the API's
                    headers = {"retry-after": api.batch_retry_after} if api.batch_retry_after else {}
                    return self._send(fault, {"type": "error", "error": {"type": kind, "message": "injected"}}, {},
                                      headers)
                status, payload = api.batch_call(method, path, body, self.headers.get("host", ""))
                if isinstance(payload, bytes):
                    self.send_response(status)
                    self.send_header("content-type", "application/binary")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self._send(status, payload, {})

            def _send(self, status: int, payload: dict[str, Any], body: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                streamed = status == 200 and body.get("stream")
                raw = sse(payload) if streamed else json.dumps(payload).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("content-type", "text/event-stream" if streamed else "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                self.wfile.flush()

            def log_message(self, *_args: object) -> None:
                pass

        self.serve(Handler)

    def _arrive(self, stage: str | None) -> bool:
        """A stage request has arrived: counted in flight; True if it is its stage's first."""
        if stage is None:
            return False
        with self._traffic:
            self.arrivals.append((stage, self._answering.get(stage, 0)))
            self._arrived[stage] = self._arrived.get(stage, 0) + 1
            self._in_flight += stage in self.held
            if self.gather and self._in_flight >= self.gather:
                self._gathered = True
            self._traffic.notify_all()
            return self._arrived[stage] == 1

    def regather(self, count: int) -> None:
        """Gather the next ``count`` requests of the held stages (0: hold none), as a fake
        made with ``gather=count`` would: for a fake that serves more than one run."""
        with self._traffic:
            self.gather, self._gathered = count, False

    def _gathering(self, stage: str | None) -> None:
        """Before a stage response begins: wait, once, until ``gather`` are in flight."""
        if stage in self.held and self.gather:
            with self._traffic:
                self._traffic.wait_for(lambda: self._gathered, self.hold_timeout)
                self._gathered = True  # at most one wait: a client that never sends them all goes on

    def _begun(self, stage: str | None) -> bool:
        """A stage response's first event is going out: it is answering from now."""
        if stage is None:
            return False
        with self._traffic:
            self._answering[stage] = self._answering.get(stage, 0) + 1
        return True

    def _hold(self, stage: str | None, first: bool) -> None:
        """After its first event, a stage's first response waits, as a model still
        answering, for ``hold_for`` more requests of its stage."""
        if stage not in self.held or not first or not self.hold_for:
            return
        with self._traffic:
            self._traffic.wait_for(lambda: self._arrived[stage] > self.hold_for, self.hold_timeout)

    def _leave(self, stage: str | None, begun: bool) -> None:
        if stage is None:
            return
        with self._traffic:
            self._in_flight -= stage in self.held
            if begun:
                self._answering[stage] -= 1

    def answer(self, body: dict[str, Any], verdict: dict[str, Any]) -> dict[str, Any]:
        """The answer to a stage request (``answer_for``) or the screen (``verdict``), as long
        as a real model writes it when ``realistic`` is set; held to the wire schema."""
        script = self.scripted.get(stage_of(body)) if is_stage(body) else None
        data = enforce(body, script(inputs_of(body), answer_for(body))) if script else \
            answer_for(body) if is_stage(body) else enforce(body, verdict)
        if self.realistic is None:
            return data
        grown: dict[str, Any] = enforce(body, self.realistic.answer(body, data, inputs_of(body)))
        return grown

    def thought(self, body: dict[str, Any]) -> int:
        """The thinking tokens a request spends (0 unless it thinks)."""
        if self.realistic is not None:
            return self.realistic.thought(body)
        return self.thinking if body.get("thinking") else 0

    # -- Message Batches ------------------------------------------------------------------

    def batch_call(self, method: str, path: str, body: dict[str, Any], host: str,
                   ) -> tuple[int, dict[str, Any] | bytes]:
        """One Message Batches call (faults already applied): the status and JSON or JSONL body."""
        parts = path.split("/")[4:]  # after /v1/messages/batches
        if method == "POST" and not parts:
            batch_id = f"msgbatch_{len(self.batches) + 1:04d}fake"
            self.batches[batch_id], self._polled[batch_id] = list(body["requests"]), 0
            self._created[batch_id] = time.time()
            return 200, self._batch(batch_id, host)
        batch_id = parts[0] if parts else ""
        if method != "GET" or batch_id not in self.batches:
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": f"no batch {batch_id}"}}
        if parts[1:] == ["results"]:
            if batch_id not in self.batch_results:
                return 400, error_body(f"batch {batch_id} has not ended")
            return 200, "\n".join(json.dumps(line) for line in self.batch_results[batch_id]).encode()
        self._polled[batch_id] += 1
        if self._polled[batch_id] >= self.batch_polls and batch_id not in self.batch_results:
            self.batch_results[batch_id] = [self._run_entry(index, entry) for index, entry
                                            in enumerate(self.batches[batch_id])]
        return 200, self._batch(batch_id, host)

    def _run_entry(self, index: int, entry: dict[str, Any]) -> dict[str, Any]:
        if index and self.between_entries is not None:
            self.between_entries()
        outcome, params = self.batch_outcomes.get(index, "succeeded"), entry["params"]
        if outcome in ("errored", "canceled", "expired"):
            result: dict[str, Any] = {"type": outcome}
            if outcome == "errored":
                result["error"] = {"type": "error", "error": {"type": "api_error", "message": "injected"}}
            return {"custom_id": entry["custom_id"], "result": result}
        data = self.answer(params, {"flagged": False, "reason": "fine"})
        usage, writes = self.accounting.bill(params, json.dumps(data))
        if self.realistic is not None:  # a plain batch entry does not think: only a realistic one does
            usage["output_tokens"] += self.realistic.thought(params)
        self.accounting.answered(writes)
        if is_stage(params):
            self.requests.append(params)
            self.answers.append(data)
            self.accounting.record(stage_of(params), params["model"], usage)
        if outcome == "garbled":
            body = message("<html>not JSON", model=params["model"], usage=usage)
        elif outcome == "refusal":
            body = message("", model=params["model"], usage=usage, stop_reason="refusal",
                           stop_details={"type": "refusal", "category": "cyber", "explanation": "injected"})
        else:
            body = message(data, model=params["model"], usage=usage)
        return {"custom_id": entry["custom_id"], "result": {"type": "succeeded", "message": body}}

    def _batch(self, batch_id: str, host: str) -> dict[str, Any]:
        entries, ended = self.batches[batch_id], batch_id in self.batch_results
        created = self._created[batch_id]  # the API's clock: a batch expires 24 hours after it was created
        counts = {"processing": 0 if ended else len(entries), "succeeded": 0, "errored": 0, "canceled": 0,
                  "expired": 0}
        for line in self.batch_results.get(batch_id, []):
            counts[line["result"]["type"]] += 1
        return {"id": batch_id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": _stamp(created), "expires_at": _stamp(created + 24 * 3600),
                "ended_at": _stamp(created) if ended else None,
                "archived_at": None, "cancel_initiated_at": None,
                "results_url": f"http://{host}/v1/messages/batches/{batch_id}/results" if ended else None}

    @property
    def url(self) -> str:
        return self.origin
