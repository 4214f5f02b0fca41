"""A fake Claude Messages API for tests: canned answers computed from the request.

``answer_for`` reads a real request body the way a model would see it (the stage from
its instructions, the inputs from the YAML blocks of the user message) and answers
with the offline course generator's fixture artefacts. ``FakeMessagesAPI`` serves that
over real HTTP on 127.0.0.1 (stdlib only), keeping prompt-cache accounting: the
prefix up to the last block marked ``cache_control`` is written on first sight and
read on every identical one after, as the API bills it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml

from stay.models._offline_course import ANSWERS

STAGE_HEADERS = {"audience": "audience", "curriculum": "curriculum", "outcomes": "outcomes",
                 "assessment": "assessment", "lesson planning": "plan", "lesson content": "content",
                 "exercises": "exercises", "quiz": "quiz", "capstone": "capstone"}
_BLOCK = re.compile(r"^## (?P<name>\w+)\n\n```yaml\n(?P<body>.*?)```\n", re.DOTALL | re.MULTILINE)


def tokens(text: str) -> int:
    """A stand-in tokenizer: about four characters a token."""
    return max(1, len(text) // 4)


def stage_of(body: dict[str, Any]) -> str:
    system = body["system"] if isinstance(body["system"], str) else body["system"][0]["text"]
    header = re.search(r"^# Stage: (.+)$", system, re.MULTILINE)
    assert header is not None, "no '# Stage:' header in the system prompt"
    return STAGE_HEADERS[header.group(1).strip()]


def user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


def inputs_of(body: dict[str, Any]) -> dict[str, Any]:
    text = user_text(body)
    return {m.group("name"): yaml.safe_load(m.group("body")) for m in _BLOCK.finditer(text)}


def answer_for(body: dict[str, Any]) -> dict[str, Any]:
    return ANSWERS[stage_of(body)](inputs_of(body))


def message(data: dict[str, Any] | str, *, model: str = "claude-sonnet-5-5", stop_reason: str = "end_turn",
            usage: dict[str, int] | None = None, stop_details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Messages API response body."""
    text = data if isinstance(data, str) else json.dumps(data)
    return {
        "id": "msg_test", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": stop_reason, "stop_sequence": None,
        "stop_details": stop_details,
        "usage": usage or {"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 0,
                           "cache_read_input_tokens": 0},
    }


@dataclass
class CacheAccounting:
    """Prompt-cache accounting for identical prefixes, as the API bills it."""

    seen: set[str] = field(default_factory=set)
    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def usage(self, body: dict[str, Any], answer: str) -> dict[str, int]:
        """Blocks in cache order (system, then message content) up to the last one marked
        cache_control are the prefix; the rest is plain input."""
        system = body["system"] if isinstance(body["system"], list) else [{"text": body["system"]}]
        content = body["messages"][0]["content"]
        blocks = system + (content if isinstance(content, list) else [{"text": content}])
        last = max((i for i, b in enumerate(blocks) if b.get("cache_control")), default=-1)
        prefix = "".join(b["text"] for b in blocks[:last + 1])
        rest = "".join(b["text"] for b in blocks[last + 1:])
        key = hashlib.sha256((body["model"] + prefix).encode()).hexdigest()
        with self.lock:
            read = bool(prefix) and key in self.seen
            if prefix:
                self.seen.add(key)
            usage = {"input_tokens": tokens(rest), "output_tokens": tokens(answer),
                     "cache_creation_input_tokens": 0 if read or not prefix else tokens(prefix),
                     "cache_read_input_tokens": tokens(prefix) if read else 0}
            self.input_tokens += usage["input_tokens"]
            self.cache_creation_input_tokens += usage["cache_creation_input_tokens"]
            self.cache_read_input_tokens += usage["cache_read_input_tokens"]
        return usage

    @property
    def read_share(self) -> float:
        total = self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
        return self.cache_read_input_tokens / total if total else 0.0


class FakeMessagesAPI:
    """POST /v1/messages on 127.0.0.1, answering every stage; records what it saw and said."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self.accounting = CacheAccounting()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                if self.path.rstrip("/") != "/v1/messages":
                    return self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                                       "message": self.path}})
                if "Stage:" not in json.dumps(body.get("system", "")):
                    reply = message({"flagged": False, "reason": "a course brief"}, model=body["model"])
                else:
                    data = answer_for(body)
                    reply = message(data, model=body["model"],
                                    usage=api.accounting.usage(body, json.dumps(data)))
                    with lock:
                        api.requests.append(body)
                        api.answers.append(data)
                self._send(200, reply)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *_args: object) -> None:
                pass

        lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

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
