"""A Messages API on 127.0.0.1 that hands every request to a person (or an agent) and
waits for the answer file: a model-in-the-loop check without a key.

    python tools/relay.py --dir DIR [--port 8765] [--pass-screen]
    ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=relay \\
        stay build BRIEF.yaml --backend anthropic

For each request the relay writes, in DIR, ``NNN-STAGE.request.md`` (the system prompt,
the user message and the JSON schema the answer must fit, ``output_config.format.schema``)
and ``NNN-STAGE.request.json`` (the body as received), and prints one line naming the
answer file, ``NNN-STAGE.answer.json``. It then waits for that file, and checks it the way
constrained decoding would have held a real model to it: JSON, and valid against the
schema, with no property the schema does not declare. A bad answer gets
``NNN-STAGE.error.txt`` saying exactly what is wrong, and the relay keeps waiting for the
file to change; a good one goes back to stay as a Messages API response (an event stream
when the request asked for one, with pings while it waits, so a streamed request never
times out however long the person takes).

The input screen (known by stay's screen prompt) is handed over the same way, unless
``--pass-screen`` answers it "not flagged". A request the client sends again while its
answer is awaited (stay retrying after a timeout) waits for the same answer file; once a
request has been answered, the same request again is a new one, with a new number, as a
real model would be asked again.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

try:
    import jsonschema  # type: ignore[import-untyped]  # no stubs; only stay/ is type-checked in CI
except ImportError:  # a fresh clone installed without the dev extras
    raise SystemExit("relay: needs jsonschema: pip install -e '.[dev]' (or pip install 'jsonschema>=4.20')") from None

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a fresh clone: tools/ is not installed
    sys.path.insert(0, str(ROOT))

from stay.models import screen_request  # noqa: E402
from tools.wire import cut, message, read_answer, schema_of, sse, system_of, user_of  # noqa: E402

HOST = "127.0.0.1"
"""Loopback only: the relay hands out whatever a person writes, to whoever asks."""
DEFAULT_PORT = 8765
MAX_REQUEST_BYTES = 32 * 1024 * 1024
"""The Messages API's own limit on a request body (32 MB); a larger one is a 413, as there."""
MAX_ANSWER_BYTES = 4 * 1024 * 1024
"""A bound on what is read into memory: about a million tokens of text at four characters
a token, far above the max_tokens of any request stay sends."""
MAX_PROBLEMS = 30
"""Schema problems listed in an error file; the rest are counted."""
POLL_SECONDS = 0.25
PING_SECONDS = 10.0
"""A streamed request hears a ping this often while the person writes, well inside stay's
300-second request timeout (which measures silence on a stream)."""
LABEL_CHARS = 40
SCREEN_LABEL = "input-screen"
SCREEN_SYSTEM = screen_request("").system[0].text
NOT_FLAGGED = {"flagged": False, "reason": "passed unread by the relay (--pass-screen)"}

_STAGE = re.compile(r"^# Stage: (.+)$", re.MULTILINE)
_NUMBERED = re.compile(r"^(\d+)-")


# -- reading a request -------------------------------------------------------------------------


def safe_label(text: str) -> str:
    """``text`` as a file-name part: lower-case letters, digits and single dashes, at most
    ``LABEL_CHARS`` long, never empty, never a path (``../x`` is ``x``)."""
    label = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:LABEL_CHARS].strip("-")
    return label or "request"


def is_screen(body: dict[str, Any]) -> bool:
    """Whether ``body`` is stay's input screen, known by its system prompt (stay's own text)."""
    return SCREEN_SYSTEM in system_of(body)


def label_of(body: dict[str, Any]) -> str:
    """The stage a request is for, from its ``# Stage:`` header; the screen and a judge have none."""
    header = _STAGE.search(system_of(body))
    return safe_label(header.group(1)) if header else SCREEN_LABEL if is_screen(body) else "request"


def rough_tokens(text: str) -> int:
    """About four characters a token: usage for stay's cost report, not a bill."""
    return max(1, len(text) // 4)


# -- one request and its answer file -----------------------------------------------------------


@dataclass
class Pending:
    """A request handed over and its answer file, judged once per version of the file."""

    name: str
    directory: Path
    schema: dict[str, Any]
    say: Callable[[str], None]
    lock: threading.Lock = field(default_factory=threading.Lock)
    last: tuple[int, int] | None = None
    """(mtime, size) at the last look: a file is read only once it has held still for a poll."""
    judged: tuple[int, int] | None = None
    answer: Any = None
    accepted: bool = False

    def path(self, kind: str) -> Path:
        return self.directory / f"{self.name}.{kind}"

    def poll(self) -> tuple[bool, Any]:
        """(True, the answer) once a good answer file is there; (False, None) until then."""
        with self.lock:
            if self.accepted:
                return True, self.answer
            try:
                stat = self.path("answer.json").stat()
            except FileNotFoundError:
                return False, None
            now = (stat.st_mtime_ns, stat.st_size)
            if now != self.last:  # still being written, perhaps: look again next poll
                self.last = now
                return False, None
            if now == self.judged:
                return False, None
            self.judged = now
            try:
                with self.path("answer.json").open("rb") as handle:
                    raw = handle.read(MAX_ANSWER_BYTES + 1)  # bounded even if it grew since the look
            except OSError:  # replaced or removed since the look: judge the next version
                self.judged = None
                return False, None
            size = max(now[1], len(raw))
            data, wrong = ((None, [f"the file is {size:,} bytes; the relay reads at most {MAX_ANSWER_BYTES:,}"])
                           if size > MAX_ANSWER_BYTES else read_answer(raw, self.schema))
            if wrong:
                shown = wrong[:MAX_PROBLEMS] + ([f"... and {len(wrong) - MAX_PROBLEMS} more"]
                                                if len(wrong) > MAX_PROBLEMS else [])
                _write(self.path("error.txt"), (
                    f"{self.name}.answer.json was not accepted; fix it and save it again (the relay is "
                    f"still waiting). The schema is at the end of {self.name}.request.md.\n\n"
                    + "\n".join(shown) + "\n").encode())
                self.say(f"relay: {self.name}: answer rejected, {len(wrong)} problem(s): see "
                         f"{self.path('error.txt')}")
                return False, None
            self.path("error.txt").unlink(missing_ok=True)
            self.answer, self.accepted = data, True
            return True, data


def _write(path: Path, data: bytes) -> None:
    """Whole or not at all: a person (or a script) watching DIR never reads half a file."""
    part = path.with_name(path.name + ".part")
    part.write_bytes(data)
    os.replace(part, path)


def readable(name: str, body: dict[str, Any], schema: dict[str, Any]) -> str:
    """The request as a person reads it: what to write where, the prompts, the schema."""
    effort = (body.get("output_config") or {}).get("effort")
    facts = [f"model {body.get('model')}", f"max_tokens {body.get('max_tokens')}"]
    facts += [f"thinking {body['thinking'].get('type')}"] if isinstance(body.get("thinking"), dict) else []
    facts += [f"effort {effort}"] if effort else []
    return (f"# {name} ({', '.join(facts)})\n\n"
            f"Answer as the model: write one JSON value that fits the schema at the end to "
            f"`{name}.answer.json` in this directory. Only the properties the schema declares are "
            f"allowed. A rejected answer gets `{name}.error.txt`; fix the answer and save it again.\n\n"
            f"## System prompt\n\n{system_of(body)}\n\n"
            f"## User message\n\n{user_of(body)}\n\n"
            f"## Answer schema (output_config.format.schema)\n\n"
            f"~~~~json\n{json.dumps(schema, indent=2, ensure_ascii=False)}\n~~~~\n")


# -- the server --------------------------------------------------------------------------------


class Relay:
    """POST /v1/messages on 127.0.0.1, answered from files a person writes in ``directory``."""

    def __init__(self, directory: Path, *, port: int = DEFAULT_PORT, pass_screen: bool = False,
                 poll: float = POLL_SECONDS, ping: float = PING_SECONDS,
                 say: Callable[[str], None] = print) -> None:
        self.directory = directory
        self.pass_screen, self.poll, self.ping = pass_screen, poll, ping
        self.say = say
        self.lock = threading.Lock()
        self.pending: dict[str, Pending] = {}
        """Requests awaiting an answer, by a digest of their body: a retry joins its original."""
        self.closing = threading.Event()
        directory.mkdir(parents=True, exist_ok=True)
        numbers = [int(m.group(1)) for p in directory.iterdir() if (m := _NUMBERED.match(p.name))]
        self.count = max(numbers, default=0)
        """The last number used: a relay started again over the same DIR never overwrites."""
        self.server = ThreadingHTTPServer((HOST, port), _handler(self))
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def hand_over(self, raw: bytes, body: dict[str, Any], schema: dict[str, Any]) -> Pending:
        key = hashlib.sha256(raw).hexdigest()
        with self.lock:
            known = self.pending.get(key)
            if known is not None:
                self.say(f"relay: {known.name}: the same request again (a retry); still waiting for "
                         f"{known.path('answer.json')}")
                return known
            self.count += 1
            entry = Pending(f"{self.count:03d}-{label_of(body)}", self.directory, schema, self.say)
            self.pending[key] = entry
        _write(entry.path("request.md"), readable(entry.name, body, schema).encode())
        _write(entry.path("request.json"), raw)
        self.say(f"relay: {entry.name}: answer in {entry.path('answer.json')} "
                 f"(the request: {entry.path('request.md')})")
        return entry

    def settle(self, entry: Pending) -> None:
        with self.lock:
            keys = [key for key, known in self.pending.items() if known is entry]
            for key in keys:
                del self.pending[key]
        if keys:  # a retry waiting on the same entry settles it again: say it once
            self.say(f"relay: {entry.name}: answer accepted")

    def serve_forever(self) -> None:
        self.server.serve_forever(poll_interval=0.05)

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Relay:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _error(status: int, kind: str, text: str) -> tuple[int, dict[str, Any]]:
    return status, {"type": "error", "error": {"type": kind, "message": text}}


def _handler(relay: Relay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 60.0
        """Seconds a socket read may stall: a client that sends less than its content-length
        is dropped, not waited on forever. The wait for a person is no socket read."""

        def do_GET(self) -> None:
            self._json(*_error(405, "invalid_request_error", "the relay serves POST /v1/messages only"))

        def do_POST(self) -> None:
            if urlsplit(self.path).path.rstrip("/") != "/v1/messages":
                return self._json(*_error(404, "not_found_error", "the relay serves POST /v1/messages only"))
            try:
                length = int(self.headers.get("content-length", ""))
            except ValueError:
                return self._json(*_error(411, "invalid_request_error", "a request needs a content-length"))
            if not 0 <= length <= MAX_REQUEST_BYTES:
                return self._json(*_error(413, "request_too_large",
                                          f"the request is {length:,} bytes; at most {MAX_REQUEST_BYTES:,}"))
            try:
                raw = self.rfile.read(length)
            except TimeoutError:
                return self._json(*_error(408, "invalid_request_error", "the request body stopped arriving"))
            try:
                body = json.loads(raw)
            except (ValueError, RecursionError):
                body = None
            if not isinstance(body, dict):
                return self._json(*_error(400, "invalid_request_error", "the body is not a JSON object"))
            schema = schema_of(body)
            if schema is None:
                return self._json(*_error(400, "invalid_request_error", "the relay answers structured-output "
                                          "requests only: output_config.format.schema is missing"))
            try:
                jsonschema.validators.validator_for(schema).check_schema(schema)
            except jsonschema.SchemaError as exc:
                return self._json(*_error(400, "invalid_request_error",
                                          cut(f"output_config.format.schema is not a JSON schema: {exc.message}")))
            if relay.pass_screen and is_screen(body):
                return self._answer(body, NOT_FLAGGED)
            self._wait(relay.hand_over(raw, body, schema), body)

        def _wait(self, entry: Pending, body: dict[str, Any]) -> None:
            """Wait for the answer file and send what it holds. A stream's headers go at once
            and a ping while waiting: the client's timeout measures silence on a stream, so
            it never fires however long a person takes. A request the client gave up on
            (stay timed out) stays pending, so its retry is answered by the same file."""
            streaming = bool(body.get("stream"))
            if streaming:
                self._start_stream()
            quiet_since = time.monotonic()
            try:
                while not relay.closing.is_set() and not self._gone():
                    done, data = entry.poll()
                    if done:
                        self._answer(body, data, started=streaming)
                        relay.settle(entry)  # only once sent: a lost answer is kept for the retry
                        return
                    if streaming and time.monotonic() - quiet_since >= relay.ping:
                        self.wfile.write(b'event: ping\ndata: {"type": "ping"}\n\n')
                        self.wfile.flush()
                        quiet_since = time.monotonic()
                    time.sleep(relay.poll)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _start_stream(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()  # no length: the stream ends when the connection closes (HTTP/1.0)

        def _gone(self) -> bool:
            """Whether the client has closed the connection (readable, with nothing to read)."""
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            try:
                return bool(self.connection.recv(1, socket.MSG_PEEK) == b"")
            except OSError:
                return True

        @staticmethod
        def _message(body: dict[str, Any], data: Any) -> dict[str, Any]:
            text = json.dumps(data, ensure_ascii=False)
            usage = {"input_tokens": rough_tokens(system_of(body) + user_of(body)),
                     "output_tokens": rough_tokens(text),
                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
            return message(text, model=str(body.get("model", "relay")), usage=usage)

        def _answer(self, body: dict[str, Any], data: Any, *, started: bool = False) -> None:
            """The answer as a Messages API response, a stream if asked (``started``: its headers are sent)."""
            payload = self._message(body, data)
            if not body.get("stream"):
                return self._json(200, payload)
            if not started:
                self._start_stream()
            self.wfile.write(sse(payload))
            self.wfile.flush()

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *_args: object) -> None:
            pass  # one line per request is the relay's own, through ``say``

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/relay.py", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--dir", required=True, type=Path, help="where request and answer files go")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on {HOST} (default {DEFAULT_PORT})")
    parser.add_argument("--pass-screen", action="store_true",
                        help="answer the input screen 'not flagged' instead of handing it over")
    args = parser.parse_args(argv)
    say = functools.partial(print, flush=True)
    try:
        relay = Relay(args.dir, port=args.port, pass_screen=args.pass_screen, say=say)
    except OSError as exc:
        print(f"relay: cannot serve {HOST}:{args.port} from {args.dir}: {exc.strerror or exc}; "
              "pick another --port or --dir", file=sys.stderr)
        return 2
    say(f"relay: listening; run stay with ANTHROPIC_BASE_URL={relay.url} and any ANTHROPIC_API_KEY "
        f"(Ctrl-C stops the relay)")
    try:
        relay.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        relay.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
