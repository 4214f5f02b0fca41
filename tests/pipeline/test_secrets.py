"""No configured secret is ever printed or written (issue 20, item 6): an API key read with
its trailing newline and of no particular shape, the userinfo of ANTHROPIC_BASE_URL and of
the OTLP endpoint, and the OTLP headers' values, a malformed one too, echoed back by a
hostile API in error bodies and inside answers, appear nowhere: not on stderr or stdout,
not in the course's files, .state, .runs or traces. Real processes, a real local server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from stay import _secrets
from stay.errors import UsageError
from stay.settings import Settings
from tests.conftest import ROOT
from tests.models.fake_api import answer_for, is_stage, message, stage_of
from tests.models.helpers import HTTP
from tools.wire import sse

KEY = "canary-KEY-7f3e9b1d2c4a5e6f"
"""Not shaped sk-ant-...: a shape-based redaction would miss it."""
BASE_USER, BASE_PASSWORD = "base-user-canary", "base-pass-canary-31f9"
OTLP_USER, OTLP_PASSWORD = "otlp-user-canary", "otlp-pass-canary-8d2e"
OTLP_TOKEN = "Bearer otlp-token-canary-0a9c"
OTLP_MALFORMED = "malformed-otlp-canary-5b7d"
SECRETS = (KEY, BASE_USER, BASE_PASSWORD, OTLP_USER, OTLP_PASSWORD, OTLP_TOKEN, OTLP_MALFORMED,
           OTLP_TOKEN.split()[1])


class EchoingAPI:
    """The Messages API and an OTLP collector on 127.0.0.1 that echo every credential: the first stage call is a 500 whose body quotes the request's headers, every
    answer carries them in its first free-text field, and the collector refuses with them.
    ``refuse_all``: every call is a 400 quoting them (the command ends in an error line)."""

    def __init__(self) -> None:
        self.refuse_all = False
        self.stage_calls = 0
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                # what it was sent, and every secret by name: whether the SDK sends the key
                # or basic auth from the URL's userinfo, a proxy in between may know them all
                echoed = " ".join([*(f"{k}: {v}" for k, v in self.headers.items()), *SECRETS])
                if self.path.endswith("/v1/traces"):  # protobuf spans: refused, whatever they say
                    return self._send(401, {"error": f"who are you? {echoed}"})
                body = json.loads(raw)
                if api.refuse_all:
                    return self._send(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                       "message": f"bad request from {echoed}"}})
                if not is_stage(body):
                    return self._send(200, message({"flagged": False, "reason": "fine"}, model=body["model"]),
                                      body)
                api.stage_calls += 1
                if api.stage_calls == 1:
                    return self._send(500, {"type": "error", "error": {"type": "api_error",
                                                                       "message": f"hiccup for {echoed}"}})
                data = answer_for(body)
                _plant(data, stage_of(body), echoed)
                self._send(200, message(data, model=body["model"]), body)

            def _send(self, status: int, payload: dict[str, Any], body: dict[str, Any] | None = None) -> None:
                streamed = status == 200 and body is not None and body.get("stream")
                raw = sse(payload) if streamed else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "text/event-stream" if streamed else "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host}:{port}"


FREE_TEXT = {"audience": ("learners",), "curriculum": ("modules", 0, "summary"), "outcomes": None,
             "assessment": None}


def _plant(data: dict[str, Any], stage: str, echoed: str) -> None:
    """The echoed headers into the answer's first free-text field the stage has (schema-safe)."""
    where = FREE_TEXT.get(stage)
    if not where:
        return
    target: Any = data
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = f"{target[where[-1]]} {echoed}"


@pytest.fixture
def echoing() -> Iterator[EchoingAPI]:
    api = EchoingAPI()
    api.thread.start()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()
        api.thread.join(timeout=5)


def _stay(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stay.cli", *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=ROOT, check=False)


def _env(api: EchoingAPI) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OTEL_", "STAY_"))}
    env.update({
        "PYTHONPATH": str(ROOT), "SOURCE_DATE_EPOCH": "1780000000", "STAY_BATCH_POLL_SECONDS": "0",
        "ANTHROPIC_API_KEY": KEY + "\n",  # pasted with its newline
        "ANTHROPIC_BASE_URL": f"http://{BASE_USER}:{BASE_PASSWORD}@{api.address}",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{OTLP_USER}:{OTLP_PASSWORD}@{api.address}",
        "OTEL_EXPORTER_OTLP_HEADERS": f"authorization={OTLP_TOKEN.replace(' ', '%20')},{OTLP_MALFORMED}",
    })
    return env


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_no_configured_secret_is_printed_or_written_whatever_the_api_echoes(echoing: EchoingAPI,
                                                                           tmp_path: Path) -> None:
    env = _env(echoing)
    made = _stay(env, "new", str(HTTP), "--courses-dir", str(tmp_path))
    assert made.returncode == 0, made.stderr
    assert echoing.stage_calls > 1  # the 500 was met and the call retried
    echoing.refuse_all = True
    refused = _stay(env, "build", HTTP.stem, "--yes", "--courses-dir", str(tmp_path))
    assert refused.returncode not in (0, 3)
    assert len(refused.stderr.strip().splitlines()[-1]) > 0 and "[redacted]" in refused.stderr
    for run in (made, refused):
        assert _leaks(run.stdout) == [] and _leaks(run.stderr) == [], run.stderr
    # the echo reached the terminal's lines and the course's files, cut out
    assert "[redacted]" in made.stderr and "could not export trace" in made.stderr
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(part in (".state", ".runs") for path in files for part in path.parts)
    assert any(b"[redacted]" in path.read_bytes() for path in files if path.name == "audience.yaml")
    leaking = {str(path.relative_to(tmp_path)): _leaks(path.read_bytes().decode("utf-8", "replace"))
               for path in files}
    assert {path: found for path, found in leaking.items() if found} == {}


def test_a_key_read_with_its_newline_is_used_without_it() -> None:
    assert Settings.from_env({"ANTHROPIC_API_KEY": f" {KEY}\r\n\t"}).api_key == KEY


@pytest.mark.parametrize("inside", ["\n", "\r", "\t", " ", "\x1b", "é"])
def test_a_key_with_a_character_no_header_can_carry_is_refused_without_being_shown(inside: str) -> None:
    odd = f"{KEY[:10]}{inside}{KEY[10:]}"
    with pytest.raises(UsageError) as refused:
        Settings.from_env({"ANTHROPIC_API_KEY": odd})
    assert "ANTHROPIC_API_KEY" in str(refused.value) and KEY[:10] not in str(refused.value)


def test_every_configured_secret_is_known_by_value() -> None:
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": f"https://{BASE_USER}:{BASE_PASSWORD}@proxy.example",
           "OTEL_EXPORTER_OTLP_ENDPOINT": f"https://{OTLP_USER}:{OTLP_PASSWORD}@collector.example",
           "OTEL_EXPORTER_OTLP_HEADERS": f"authorization={OTLP_TOKEN.replace(' ', '%20')},{OTLP_MALFORMED}"}
    settings = Settings.from_env(env)
    text = " ".join(SECRETS)
    assert _leaks(_secrets.redact(text, settings.secrets)) == []
    assert _leaks(_secrets.redact(text, Settings.from_env(env).secrets)) == []
    assert _leaks(_secrets.redact(text)) == []  # kept process-wide once the settings were made


class EchoingBackend:
    """A caller's own backend (the offline one underneath) whose every answer carries the
    key it was configured with: the pipeline cuts it out whatever served the answer."""

    name = "echoing"

    def __init__(self) -> None:
        from stay.models import OfflineBackend

        self.inner = OfflineBackend()

    def complete(self, request: Any, model: str) -> Any:
        answer = self.inner.complete(request, model)
        data = dict(answer.data)
        for name, value in data.items():
            if isinstance(value, str) and name not in ("id", "slug"):
                data[name] = f"{value} {KEY}"
                break
        return answer.model_copy(update={"data": data, "model": f"echo-{KEY}"})

    def screen(self, text: str) -> str | None:
        return None


def test_an_answer_from_any_backend_is_cut_of_configured_secrets(tmp_path: Path) -> None:
    from stay.pipeline import build_course

    settings = Settings(api_key=KEY, backend="offline", cache=False)
    build_course(HTTP, courses_dir=tmp_path, settings=settings, backend=EchoingBackend(), progress=lambda _l: None)
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(b"[redacted]" in path.read_bytes() for path in files)
    assert [path for path in files if KEY.encode() in path.read_bytes()] == []


def test_a_malformed_otlp_header_and_the_endpoints_userinfo_are_never_shown(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """Only malformed pairs: stay sends no headers, so the exporter reads the variable
    itself and logs the bad pair whole; that log, and the warning, are cut."""
    import dataclasses
    import socket

    from stay.pipeline._trace import export_trace
    from stay.settings import otlp_from
    from tests.pipeline.test_otel import RECORDS

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{OTLP_USER}:{OTLP_PASSWORD}@127.0.0.1:{port}",
           "OTEL_EXPORTER_OTLP_HEADERS": OTLP_MALFORMED}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    target = otlp_from(env)
    assert target is not None and target.headers == {}
    warnings: list[str] = []
    assert export_trace(RECORDS, dataclasses.replace(target, timeout=0.3), warn=warnings.append) is False
    printed = capfd.readouterr()
    assert len(warnings) == 1 and "[redacted]" in warnings[0]
    assert _leaks(" ".join([*warnings, printed.out, printed.err])) == []


def test_every_file_a_build_and_the_evals_write_is_cut_of_every_kind_of_secret(tmp_path: Path) -> None:
    """Issue 37, item 2: a proxy behind ``OPENAI_BASE_URL`` with userinfo, an API key and
    OTLP headers (no endpoint: the settings never read them) are echoed in an error that
    ends a build once files were written; the stderr line cut them, the run log did not.
    A build that fails, one that resumes to the end, a rescore and its pages: no file under
    the courses directory or the evals output holds any of them. In this process (what it
    prints is the test above's, in real processes; this one is about the files)."""
    from tests.models.fake_openai import FakeOpenAI, Status
    from tests.models.helpers import in_process as _stay

    secrets = (KEY, BASE_USER, BASE_PASSWORD, OTLP_TOKEN.split()[1], OTLP_MALFORMED)
    echo = "you sent " + " ".join(secrets)
    courses, evals = tmp_path / "courses", tmp_path / "evals"
    with FakeOpenAI(faults=[None, None, None, Status(400, echo)]) as fake:
        # a proxy that takes the URL's userinfo as basic auth (the fake asks for a bearer key)
        fake.server.RequestHandlerClass._authorised = lambda _handler: True  # type: ignore[attr-defined]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "OTEL_", "STAY_"))}
        env.update({"PYTHONPATH": str(ROOT), "SOURCE_DATE_EPOCH": "1780000000", "STAY_MAX_RETRIES": "0",
                    "OPENAI_API_KEY": KEY,
                    "OPENAI_BASE_URL": fake.url.replace("://", f"://{BASE_USER}:{BASE_PASSWORD}@", 1),
                    "OTEL_EXPORTER_OTLP_HEADERS": f"authorization={OTLP_TOKEN.replace(' ', '%20')},{OTLP_MALFORMED}"})
        build = ("build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(courses))
        failed = _stay(env, *build)
        assert failed.returncode not in (0, 3) and "[redacted]" in failed.stderr, failed.stderr
        log = next(courses.glob("*/.state/run-log.md")).read_text()
        assert "- failed: " in log and "[redacted]" in log  # the echo reached the run log, cut
        done = _stay(env, *build)
        assert done.returncode == 0, done.stderr
        fake.faults = [Status(400, echo)]  # the rescore's judge meets the echo too
        course = next(p for p in courses.iterdir() if p.is_dir())
        scored = _stay(env, "evals", "score", str(course), "--output", str(evals / "report.json"),
                       "--backend", "openai")
    shown = _stay(env, "evals", "show", str(evals / "report.json"), "--html", str(evals / "report.html"),
                  "--markdown", str(evals / "report.md"))
    assert shown.returncode == 0, (scored.stderr, shown.stderr)
    files = [path for top in (courses, evals) for path in top.rglob("*") if path.is_file()]
    assert {".state", ".runs"} <= {part for path in files for part in path.parts}
    assert {p.name for p in files} >= {"run-log.md", "report.json", "report.html", "report.md"}
    leaking = {str(path): [s for s in secrets if s in path.read_bytes().decode("utf-8", "replace")] for path in files}
    assert {path: found for path, found in leaking.items() if found} == {}
    for run in (failed, done, scored, shown):
        assert [s for s in secrets if s in run.stdout + run.stderr] == []


def test_the_writers_cut_a_known_secret_whatever_composed_the_text(tmp_path: Path) -> None:
    """Every file stay writes goes through the atomic writers (and the journal's append):
    a secret the process knows is cut there, from text no redacting code saw first."""
    from stay.artefacts import create_text_atomic, write_bytes_atomic, write_text_atomic
    from stay.pipeline._state import append_journal, log_run

    _secrets.keep([OTLP_MALFORMED])
    log_run(tmp_path, "build", "offline", ["course.yaml"], None, failed=f"OSError: refused by {OTLP_MALFORMED}")
    write_text_atomic(tmp_path / "a.json", f'{{"why": "{OTLP_MALFORMED}"}}')
    create_text_atomic(tmp_path / "b.md", OTLP_MALFORMED)
    write_bytes_atomic(tmp_path / "c.bin", b"\xff " + OTLP_MALFORMED.encode())
    append_journal(tmp_path / "journal.jsonl", {"note": OTLP_MALFORMED})
    written = {path.name: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    assert len(written) == 5 and all(b"[redacted]" in data for data in written.values())
    assert [name for name, data in written.items() if OTLP_MALFORMED.encode() in data] == []
