"""A fake OpenAI-compatible server for tests: ``POST /v1/chat/completions`` and ``GET
/v1/models`` over real HTTP on 127.0.0.1, answering as OpenAI documents the API.

What it emulates, and enforces:

- **strict structured output**: a ``response_format`` of type ``json_schema`` with
  ``strict: true`` must carry a schema strict mode accepts (``schema_problems``: the root an
  object; every object ``additionalProperties: false`` with every property in ``required``;
  only the keywords OpenAI's "Supported schemas" lists; ``$ref`` only to ``#/$defs/``, with
  no keyword beside it),
  else it is OpenAI's 400 (``invalid_request_error``, ``param: response_format``). The
  answer is the offline backend's (``stay.stages.offline_answer``, read from the request as
  ``fake_api.answer_for`` reads a Messages request) fitted to that schema as constrained
  decoding would hold a model to it: an undeclared property dropped, a declared one the
  answer lacks written as ``null``; what remains must validate (``jsonschema``), else it is
  recorded in ``fake_api.VIOLATIONS`` (the conftest fails the test) and answered 400;
- **JSON mode** (``{"type": "json_object"}``): the offline answer as it is, no schema;
  with ``json_schema=False`` the server plays one that does only JSON mode: a
  ``json_schema`` request is a 400 naming ``response_format``;
- **prompt caching** as OpenAI documents it: automatic, for a prompt of at least
  ``CACHE_MIN_TOKENS`` (1024) tokens, the longest prefix (in ``CACHE_STEP`` = 128-token
  steps) that an earlier request to the same model sent is read from the cache and reported
  as ``usage.prompt_tokens_details.cached_tokens`` (part of ``prompt_tokens``);
- **room**: an answer longer than ``max_completion_tokens`` is cut there, ``finish_reason``
  ``length``; ``reasoning`` tokens (default 0) are spent first, counted in
  ``completion_tokens`` and ``completion_tokens_details.reasoning_tokens``;
- **models and keys**: ``GET /v1/models`` lists ``models``; a completion naming another id
  is a 404 ``model_not_found``; a request without ``Authorization: Bearer`` (or, when
  ``keys`` is given, with another key) is a 401;
- **request ids**: every response carries an ``x-request-id`` header (``req_<n>``, in
  the order answered; the ids sent are ``request_ids``), which the openai SDK reads into a
  parsed response's ``_request_id``;
- **faults**, one per completion request, in order, before it answers normally:
  ``RateLimited`` (429, ``retry-after`` verbatim), ``Status`` (any status, OpenAI's error
  body), ``"refusal"`` (``message.refusal``, no content), ``"filter"`` (``finish_reason``
  ``content_filter``), ``"length"`` (cut at once), ``"malformed"`` (content that is not
  JSON: no strict server sends it), ``"misfit"`` (in JSON mode only, a JSON object of the
  wrong shape), ``Stall`` (the response never starts).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from stay.stages import offline_answer
from tests.models.fake_api import VIOLATIONS, LocalServer, inputs_of, stage_of, tokens
from tests.wire_schema import check, fit

CACHE_MIN_TOKENS = 1024
CACHE_STEP = 128
_KEYWORDS = {
    None: {"type", "description", "enum", "const", "anyOf", "$ref", "$defs"},
    "string": {"pattern", "format"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "array": {"items", "minItems", "maxItems"},
    "object": {"properties", "required", "additionalProperties"},
}
"""The keywords strict mode accepts, by type (OpenAI's Structured Outputs guide), stated
here on their own: the fake checks stay's transform, it does not share it."""


@dataclass(frozen=True)
class RateLimited:
    retry_after: str | None = None
    header: str = "retry-after"


@dataclass(frozen=True)
class Status:
    status: int
    message: str = "injected"
    code: str | None = None


@dataclass(frozen=True)
class Stall:
    """The request is read and never answered, for ``seconds`` or until the fake stops."""

    seconds: float = 30.0


Fault = RateLimited | Status | Stall | str


def schema_problems(schema: Any, path: str = "(root)", root: bool = True) -> list[str]:
    """Every reason strict mode would refuse ``schema``."""
    if not isinstance(schema, dict):
        return [f"{path}: not a schema"]
    problems: list[str] = []
    if root and schema.get("type") != "object":
        problems.append(f"{path}: the root must be an object")
    kind = schema.get("type")
    kinds = [k for k in (kind if isinstance(kind, list) else [kind]) if k not in (None, "null")]
    allowed = set(_KEYWORDS[None]).union(*(_KEYWORDS.get(k, set()) for k in kinds))
    problems += [f"{path}: '{key}' is not permitted" for key in schema if key not in allowed]
    if "$ref" in schema and not str(schema["$ref"]).startswith("#/$defs/"):
        problems.append(f"{path}: $ref {schema['$ref']!r} is not to #/$defs/")
    if "$ref" in schema and set(schema) - {"$ref"}:  # the openai SDK unravels these for the same reason
        problems.append(f"{path}: $ref cannot have keywords {sorted(set(schema) - {'$ref'})}")
    if "object" in kinds or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: 'additionalProperties' is required to be supplied and to be false")
        if sorted(schema.get("required", [])) != sorted(schema.get("properties", {})):
            problems.append(f"{path}: 'required' is required to include every key in properties")
    for name, part in schema.get("properties", {}).items():
        problems += schema_problems(part, f"{path}/{name}", False)
    for name, part in schema.get("$defs", {}).items():
        problems += schema_problems(part, f"$defs/{name}", False)
    for index, part in enumerate(schema.get("anyOf", [])):
        problems += schema_problems(part, f"{path}/anyOf/{index}", False)
    if "items" in schema:
        problems += schema_problems(schema["items"], f"{path}/items", False)
    return problems


def filled(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """``value`` with every declared property it lacks written as null, at every depth:
    strict mode makes the model write every property."""
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].removeprefix("#/$defs/")]
    if isinstance(value, dict):
        for variant in (schema, *schema.get("anyOf", [])):
            while "$ref" in variant:
                variant = root["$defs"][variant["$ref"].removeprefix("#/$defs/")]
            properties = variant.get("properties")
            if properties is not None and set(value) <= set(properties):
                return {name: filled(value.get(name), part, root) for name, part in properties.items()}
        return value
    if isinstance(value, list):
        for variant in (schema, *schema.get("anyOf", [])):
            while "$ref" in variant:
                variant = root["$defs"][variant["$ref"].removeprefix("#/$defs/")]
            if "items" in variant:
                return [filled(item, variant["items"], root) for item in value]
    return value


def _as_messages_body(body: dict[str, Any]) -> dict[str, Any]:
    """The chat request as ``fake_api``'s readers take a Messages request."""
    messages = body.get("messages", [])
    system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
    user = [m for m in messages if m.get("role") == "user"][:1]
    return {"system": system, "messages": user}


class FakeOpenAI(LocalServer):
    def __init__(self, *, models: tuple[str, ...] = ("fake-model",), keys: tuple[str, ...] = (),
                 json_schema: bool = True, reasoning: int = 0, faults: list[Fault | None] | None = None) -> None:
        self.models, self.keys, self.json_schema, self.reasoning = models, keys, json_schema, reasoning
        self.faults: list[Fault | None] = list(faults or [])  # None: that request is answered as usual
        self.bodies: list[dict[str, Any]] = []
        self.usages: list[dict[str, Any]] = []
        self.seen_keys: list[str] = []
        self.request_ids: list[str] = []
        self._prompts: dict[str, list[str]] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    return self._send(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in fake.models]})
                self._send(404, _error("Not found", "invalid_request_error"))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                if not self._authorised():
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, _error("Not found", "invalid_request_error"))
                body = json.loads(raw)
                with fake.lock:
                    fake.bodies.append(body)
                    fault = fake.faults.pop(0) if fake.faults else None
                if isinstance(fault, Stall):
                    fake.stopping.wait(fault.seconds)
                    return
                if isinstance(fault, RateLimited):
                    headers = {fault.header: fault.retry_after} if fault.retry_after is not None else {}
                    return self._send(429, _error("Rate limit reached", "requests", "rate_limit_exceeded"), headers)
                if isinstance(fault, Status):
                    return self._send(fault.status, _error(fault.message, "server_error", fault.code))
                status, payload = fake.complete(body, fault)
                self._send(status, payload)

            def _authorised(self) -> bool:
                auth = self.headers.get("authorization", "")
                key = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
                with fake.lock:
                    fake.seen_keys.append(key)
                if not key or (fake.keys and key not in fake.keys):
                    self._send(401, _error("Incorrect API key provided.", "invalid_request_error",
                                           "invalid_api_key"))
                    return False
                return True

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                with fake.lock:
                    fake.request_ids.append(f"req_{len(fake.request_ids) + 1}")
                    request_id = fake.request_ids[-1]
                try:
                    self.send_response(status)
                    self.send_header("x-request-id", request_id)
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up

            def log_message(self, *_args: object) -> None:
                pass

        self.serve(Handler)

    def complete(self, body: dict[str, Any], fault: Fault | None) -> tuple[int, dict[str, Any]]:
        model = body.get("model")
        if model not in self.models:
            return 404, _error(f"The model `{model}` does not exist or you do not have access to it.",
                               "invalid_request_error", "model_not_found")
        fmt = body.get("response_format") or {}
        messages_body = _as_messages_body(body)
        offline = offline_answer(stage_of(messages_body), inputs_of(messages_body)) if "# Stage:" in \
            messages_body["system"] else {"flagged": False, "reason": "not flagged (fake)"}
        if fmt.get("type") == "json_schema":
            if not self.json_schema:
                return 400, _error("Invalid parameter: 'response_format' of type 'json_schema' is not supported "
                                   "with this model.", "invalid_request_error", None, "response_format")
            spec = fmt.get("json_schema") or {}
            schema = spec.get("schema")
            problems = schema_problems(schema) if spec.get("strict") is True else ["strict is not true"]
            if problems:
                return 400, _error(f"Invalid schema for response_format '{spec.get('name')}': "
                                   + "; ".join(problems[:5]), "invalid_request_error", None, "response_format")
            answer = filled(fit(offline, schema), schema, schema)
            wrong = check(answer, schema)
            if wrong:
                text = f"fake OpenAI: the answer for {spec.get('name')} cannot satisfy its strict schema: " + \
                    "; ".join(wrong)
                VIOLATIONS.append(text)
                return 400, _error(text, "invalid_request_error")
        elif fmt.get("type") == "json_object":
            answer = offline
        else:
            return 400, _error("this fake answers structured output only", "invalid_request_error")
        text = json.dumps(answer, ensure_ascii=False)
        prompt = json.dumps(body.get("messages"), ensure_ascii=False)
        usage = self._usage(str(model), prompt, text)
        room = int(body.get("max_completion_tokens") or 1 << 30)
        finish, content, refusal = "stop", text, None
        if fault == "refusal":
            content, refusal = None, "I can't help with that."
        elif fault == "filter":
            finish, content = "content_filter", ""
        elif fault == "malformed":
            content = text[: len(text) // 2]
        elif fault == "misfit" and fmt.get("type") == "json_object":
            content = json.dumps({"misfit": True})  # JSON mode holds an answer to no schema
        elif fault == "length" or usage["completion_tokens"] > room:
            finish, content = "length", text[: len(text) // 2]
            usage["completion_tokens"] = min(usage["completion_tokens"], room)
        with self.lock:
            self.usages.append(usage)
        return 200, {
            "id": f"chatcmpl-{len(self.bodies)}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "usage": usage,
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": refusal}}]}

    def _usage(self, model: str, prompt: str, text: str) -> dict[str, Any]:
        """Usage as OpenAI reports it, with the prefix cache's reads among the prompt tokens."""
        total = tokens(prompt)
        with self.lock:
            seen = self._prompts.setdefault(model, [])
            shared = max((_common(prompt, old) for old in seen), default=0)
            seen.append(prompt)
        cached = (tokens(prompt[:shared]) // CACHE_STEP) * CACHE_STEP if shared else 0
        cached = cached if total >= CACHE_MIN_TOKENS and cached >= CACHE_MIN_TOKENS else 0
        output = tokens(text) + self.reasoning
        return {"prompt_tokens": total, "completion_tokens": output, "total_tokens": total + output,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens_details": {"reasoning_tokens": self.reasoning}}

    @property
    def url(self) -> str:
        return f"{self.origin}/v1"


def _common(one: str, other: str) -> int:
    """How many characters two prompts share from their start."""
    for index, (a, b) in enumerate(zip(one, other, strict=False)):
        if a != b:
            return index
    return min(len(one), len(other))


def _error(message: str, kind: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}

