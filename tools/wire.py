"""The Messages API on the wire, as a server playing it needs it. A request's texts and
schema (``system_of``, ``user_of``, ``schema_of``). Response bodies, as the SDK reads
them: one plain JSON message (``message``), the same message as a Server-Sent Events
stream (``sse``), and an ``httpx2.Response`` in whichever form the request asked for
(``reply``). And what an answer may be: ``problems`` lists every way a value breaks a
request's ``output_config.format.schema``, as constrained decoding would have held a
model to it (no property the schema does not declare); ``read_answer`` reads one from text.

One module for every server that plays the API: the tests' fake (tests/models/fake_api.py)
and the relay that hands requests to a person (tools/relay.py). Plain code, no test
imports, so the relay runs from a fresh clone.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import jsonschema  # type: ignore[import-untyped]  # no stubs; only stay/ is type-checked in CI

MAX_PROBLEM_CHARS = 300
"""A problem's line is cut here: jsonschema quotes the offending value, which can be a whole lesson."""


# -- a request's body -------------------------------------------------------------------------


def _texts(value: Any) -> str:
    """A system prompt or message content as text: a string, or its text blocks joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n\n".join(block["text"] for block in value
                           if isinstance(block, dict) and isinstance(block.get("text"), str))
    return ""


def system_of(body: dict[str, Any]) -> str:
    return _texts(body.get("system", ""))


def user_of(body: dict[str, Any]) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    return "\n\n".join(_texts(m.get("content")) for m in messages if isinstance(m, dict))


def schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    output = body.get("output_config")
    fmt = output.get("format") if isinstance(output, dict) else None
    schema = fmt.get("schema") if isinstance(fmt, dict) else None
    return schema if isinstance(schema, dict) else None


# -- a response's body ------------------------------------------------------------------------


def message(data: dict[str, Any] | str, *, model: str = "claude-sonnet-5-5", stop_reason: str = "end_turn",
            usage: dict[str, Any] | None = None, stop_details: dict[str, Any] | None = None,
            thinking: str | None = None) -> dict[str, Any]:
    """A Messages API response body (with a thinking block first when ``thinking``)."""
    text = data if isinstance(data, str) else json.dumps(data)
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if thinking is not None:
        content.insert(0, {"type": "thinking", "thinking": thinking, "signature": "sig"})
    return {
        "id": "msg_test", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason, "stop_sequence": None,
        "stop_details": stop_details,
        "usage": usage or {"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 0,
                           "cache_read_input_tokens": 0},
    }


def sse(body: dict[str, Any], chunk: int = 4_000) -> bytes:
    """A response body as the event stream ``messages.stream`` reads."""
    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**body["usage"], "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(body["content"]):
        if block["type"] == "thinking":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "thinking", "thinking": "",
                                                                     "signature": ""}}))
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block["signature"]}]
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            text = block["text"]
            deltas = [{"type": "text_delta", "text": text[i:i + chunk]} for i in range(0, len(text), chunk)]
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                   for delta in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "usage": body["usage"],
                                     "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None,
                                               "stop_details": body.get("stop_details")}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def reply(request_body: dict[str, Any], body: dict[str, Any], status: int = 200) -> httpx2.Response:
    """``body`` as the request asked for it: a stream when it said ``stream: true``."""
    if request_body.get("stream"):
        return httpx2.Response(status, content=sse(body), headers={"content-type": "text/event-stream"})
    return httpx2.Response(status, json=body)


# -- what the wire schema admits ------------------------------------------------------------


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_ONES = ("items", "additionalProperties", "not", "contains")


def closed(schema: Any) -> Any:
    """``schema`` with every object closed (``additionalProperties: false`` where it says
    nothing): constrained decoding never lets a model write a property the schema does not
    declare. The SDK's ``transform_schema`` closes them all already; a hand-made schema may
    not. Only subschemas are walked, so a property named ``properties`` stays a property."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed(part) for name, part in out[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [closed(part) for part in out[key]]
    for key in _SCHEMA_ONES:
        if isinstance(out.get(key), dict):
            out[key] = closed(out[key])
    if (out.get("type") == "object" or "properties" in out) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def cut(text: str) -> str:
    return text if len(text) <= MAX_PROBLEM_CHARS else text[:MAX_PROBLEM_CHARS - 3] + "..."


def problems(schema: dict[str, Any], data: Any) -> list[str]:
    """Every way ``data`` fails ``schema`` (closed), one line each, naming where."""
    validator = jsonschema.validators.validator_for(schema)(closed(schema))
    return [cut(f"at {error.json_path}: {error.message}") for error in validator.iter_errors(data)]


def read_answer(raw: bytes, schema: dict[str, Any]) -> tuple[Any, list[str]]:
    """An answer's text as data, and every way it is not one the schema admits (none: it is)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return None, [f"the file is not UTF-8 (byte {exc.start}); save it as UTF-8"]
    except json.JSONDecodeError as exc:
        return None, [f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]
    except RecursionError:
        return None, ["not JSON a parser can read: nested too deeply"]
    return data, problems(schema, data)
