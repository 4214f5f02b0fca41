"""Messages API response bodies, as the SDK reads them: one plain JSON message
(``message``), the same message as a Server-Sent Events stream (``sse``), and an
``httpx2.Response`` in whichever form the request asked for (``reply``).

One module for every server that plays the API: the tests' fake (tests/models/fake_api.py)
and the relay that hands requests to a person (tools/relay.py). Plain code, no test
imports, so the relay runs from a fresh clone.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2


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
