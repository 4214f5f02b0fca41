"""Traces to a real backend: a run's spans and scores over OTLP/HTTP, received by an
in-process OTLP receiver on 127.0.0.1 that decodes the protobuf it is sent."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("opentelemetry.proto", reason="opentelemetry-proto is not installed: pip install -e '.[dev]'")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from stay.artefacts import Brief
from stay.errors import RefusalError
from stay.pipeline import build_course
from stay.pipeline._trace import INSTALL_HINT, REACH_SECONDS, build_spans, export_trace
from stay.settings import OtlpTarget, otlp_from, parse_headers
from tests.conftest import ROOT
from tests.models.fake_api import answer_for, is_stage, reply
from tests.models.helpers import Handler, recording
from tests.models.helpers import backend as claude
from tools.wire import message

BRIEF = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    request: ExportTraceServiceRequest


@dataclass
class Receiver:
    """An OTLP/HTTP receiver: decodes each export, answers ``status``."""

    url: str
    received: list[Received] = field(default_factory=list)
    status: int = 200

    def spans(self) -> list[Any]:
        return [span for r in self.received for rs in r.request.resource_spans for ss in rs.scope_spans
                for span in ss.spans]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            state.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, request))
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield state
    server.shutdown()
    server.server_close()


def attributes(kvs: Any) -> dict[str, Any]:
    found = {}
    for kv in kvs:
        kind = kv.value.WhichOneof("value")
        found[kv.key] = getattr(kv.value, kind)
    return found


def _read_trace(course: Path, trace_id: str) -> list[dict[str, Any]]:
    path = course / ".runs" / "traces" / f"{trace_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_run_exports_its_spans_usage_and_scores(receiver: Receiver, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Basic%20cGs6c2s=,x-langfuse-ingestion-version=4")
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend="offline", progress=lambda _: None)
    assert result.complete
    records = _read_trace(result.course_dir, result.trace_id)

    assert [r.path for r in receiver.received] == ["/v1/traces"]
    assert receiver.received[0].headers["authorization"] == "Basic cGs6c2s="
    assert receiver.received[0].headers["x-langfuse-ingestion-version"] == "4"
    spans = receiver.spans()
    assert {span.trace_id.hex() for span in spans} == {result.trace_id}  # the JSONL trace's id

    roots = [s for s in spans if not s.parent_span_id]
    assert len(roots) == 1
    root = roots[0]
    assert root.name == "stay build"
    root_attrs = attributes(root.attributes)
    assert root_attrs["session.id"] == root_attrs["langfuse.session.id"] == result.slug
    assert root_attrs["stay.trace_id"] == result.trace_id
    scores = {r["name"]: r["value"] for r in records if r["type"] == "score"}
    assert scores["validator_checks_run"] == result.validation.checks > 0  # type: ignore[union-attr]
    assert root_attrs["stay.validator.checks_run"] == scores["validator_checks_run"]
    for name, value in scores.items():
        assert root_attrs[f"stay.score.{name}"] == value
    assert root_attrs["stay.validator.defects"] == len(result.validation.defects)  # type: ignore[union-attr]
    events = {attributes(e.attributes)["gen_ai.evaluation.name"]: attributes(e.attributes)
              for e in root.events if e.name == "gen_ai.evaluation.result"}
    assert {name: e["gen_ai.evaluation.score.value"] for name, e in events.items()} == scores

    nodes = [s for s in spans if s.parent_span_id == root.span_id]
    jsonl_spans = [r for r in records if r["type"] == "span"]
    assert [s.name for s in sorted(nodes, key=lambda s: s.start_time_unix_nano)] == [r["name"] for r in jsonl_spans]
    assert all(attributes(s.attributes)["session.id"] == result.slug for s in spans)

    calls = [s for s in spans if "gen_ai.request.model" in attributes(s.attributes)]
    jsonl_calls = [c for r in jsonl_spans for c in r["calls"]]
    assert len(calls) == len(jsonl_calls) == result.calls > 0
    call_attrs = [attributes(s.attributes) for s in calls]
    assert sum(a["gen_ai.usage.output_tokens"] for a in call_attrs) == result.usage.output_tokens
    assert sum(a["gen_ai.usage.input_tokens"] for a in call_attrs) == (
        result.usage.input_tokens + result.usage.cache_read_input_tokens + result.usage.cache_creation_input_tokens)
    assert {a["gen_ai.provider.name"] for a in call_attrs} == {"offline"}
    for a in call_attrs:
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "offline"
        assert {"gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens"} <= set(a)
    node_ids = {s.span_id for s in nodes}
    lesson_ids = {s.span_id for s in spans if s.name.startswith("lesson ") and s.parent_span_id in node_ids}
    assert all(s.parent_span_id in node_ids | lesson_ids for s in calls)  # a lesson's calls under its lesson span


RECORDS: list[dict[str, Any]] = [
    {"type": "trace", "trace_id": "0af7651916cd43dd8448eb211c80319c", "session_id": "sql-window-functions",
     "command": "write", "backend": "anthropic", "stopped_at": None},
    {"type": "span", "name": "wave", "kind": "wave", "status": "ok", "seconds": 12.5, "calls": [
        {"stage": "content", "artefact": "modules/m01-basics/m01-l01.md", "model": "claude-sonnet-5-5",
         "seconds": 9.0, "input_tokens": 1200, "output_tokens": 3000, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 8000},
        {"stage": "quiz", "artefact": "modules/m01-basics/m01-l01.quiz.yaml", "model": "claude-sonnet-5-5",
         "seconds": 4.0, "input_tokens": 900, "output_tokens": 700, "cache_creation_input_tokens": 8000,
         "cache_read_input_tokens": 0}]},
    {"type": "span", "name": "validate", "kind": "mechanical", "status": "ValueError", "seconds": 0.5, "calls": []},
    {"type": "score", "name": "validator_quiz", "value": 2},
    {"type": "score", "name": "validator_checks_run", "value": 800},
]


def test_usage_counts_cached_tokens_as_the_genai_convention_asks() -> None:
    spans = build_spans(RECORDS, end_ns=2_000_000_000_000)
    by_name = {span.name: span for span in spans}
    content = next(s for s in spans if s.attributes["stay.stage"] == "content")
    assert content.name == "chat claude-sonnet-5-5"
    assert content.attributes["gen_ai.provider.name"] == "anthropic"
    assert content.attributes["gen_ai.usage.input_tokens"] == 1200 + 8000
    assert content.attributes["gen_ai.usage.cache_read.input_tokens"] == 8000
    assert content.attributes["llm.token_count.total"] == 1200 + 8000 + 3000
    assert content.end_time - content.start_time == 9_000_000_000
    wave, validate, root = by_name["wave"], by_name["validate"], by_name["stay write"]
    assert root.start_time == wave.start_time == 2_000_000_000_000 - 13_000_000_000
    assert validate.start_time == wave.end_time and validate.end_time == root.end_time
    assert validate.status.status_code.name == "ERROR" and validate.status.description == "ValueError"
    assert root.attributes["stay.validator.quiz"] == 2 and root.attributes["stay.validator.defects"] == 2


def test_the_same_trace_exports_with_the_same_span_ids() -> None:
    first = build_spans(RECORDS, end_ns=10**18)
    second = build_spans(RECORDS, end_ns=10**18)
    assert [s.context.span_id for s in first] == [s.context.span_id for s in second]
    assert len({s.context.span_id for s in first}) == len(first)
    assert {s.context.trace_id for s in first} == {int(RECORDS[0]["trace_id"], 16)}


def test_a_refused_export_is_one_warning_and_not_an_error(receiver: Receiver) -> None:
    receiver.status = 401
    warnings: list[str] = []
    accepted = export_trace(RECORDS, OtlpTarget(receiver.url + "/v1/traces", timeout=2), warn=warnings.append)
    assert accepted is False and len(receiver.received) == 1
    assert len(warnings) == 1
    assert warnings[0].startswith(f"could not export trace {RECORDS[0]['trace_id']} to {receiver.url}/v1/traces: ")
    assert "401" in warnings[0] and warnings[0].endswith("(the JSONL trace keeps it)")


def test_an_unreachable_endpoint_is_one_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    warnings: list[str] = []
    target = OtlpTarget(f"http://127.0.0.1:{port}/v1/traces")  # the default timeout: no retries until it ends
    started = time.monotonic()
    assert export_trace(RECORDS, target, warn=warnings.append) is False
    # refused at once, not after the exporter's retries until its timeout: those took 8.3 s
    # here (of its 10 s), the refused call 0.2 s (its first import of the exporter included),
    # which a loaded machine makes 2 s, REACH_SECONDS: half the timeout tells the two apart
    assert time.monotonic() - started < target.timeout / 2
    assert target.timeout / 2 > REACH_SECONDS  # the probe's own limit is inside the bound
    assert warnings == [f"could not reach the trace receiver at {target.endpoint} (connection refused); trace "
                        f"{RECORDS[0]['trace_id']} was not exported (the JSONL trace keeps it)"]
    assert capsys.readouterr().err == ""  # the exporter's own log lines went into the warning


def test_without_the_extra_a_run_warns_once_naming_the_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend="offline", progress=lambda _: None)
    assert result.complete
    warned = [line for line in capsys.readouterr().err.splitlines() if "OTEL_EXPORTER_OTLP_ENDPOINT" in line]
    assert len(warned) == 1 and INSTALL_HINT in warned[0]
    assert (result.course_dir / ".runs" / "traces" / f"{result.trace_id}.jsonl").is_file()


def test_a_plain_import_of_the_pipeline_does_not_import_opentelemetry() -> None:
    code = "import stay.pipeline, sys; print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://cloud.langfuse.com/api/public/otel"},
     OtlpTarget("https://cloud.langfuse.com/api/public/otel/v1/traces")),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:6006/", "OTEL_EXPORTER_OTLP_HEADERS": "x-project-name=stay"},
     OtlpTarget("http://localhost:6006/v1/traces", {"x-project-name": "stay"})),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b/custom"},
     OtlpTarget("http://b/custom")),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_SDK_DISABLED": " TRUE "}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_SDK_DISABLED": "false", "OTEL_SERVICE_NAME": "courses"},
     OtlpTarget("http://a/v1/traces", service_name="courses")),
])
def test_the_settings_follow_the_otlp_environment_variables(environ: dict[str, str],
                                                            expected: OtlpTarget | None) -> None:
    assert otlp_from(environ) == expected


def test_headers_are_comma_separated_and_percent_decoded() -> None:
    assert parse_headers("Authorization=Basic%20abc%3D%3D, x-a = 1 ,junk,=novalue") == {
        "Authorization": "Basic abc==", "x-a": "1"}


def test_spans_carry_the_runs_own_clock(receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    before = time.time_ns()
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend="offline", progress=lambda _: None)
    after = time.time_ns()
    records = _read_trace(result.course_dir, result.trace_id)
    jsonl_calls = {(c["stage"], c["artefact"]): c for r in records if r["type"] == "span" for c in r["calls"]}
    spans = receiver.spans()
    calls = [s for s in spans if "gen_ai.request.model" in attributes(s.attributes)]
    assert len(calls) == len(jsonl_calls) > 0
    for span in calls:
        a = attributes(span.attributes)
        call = jsonl_calls[(a["stay.stage"], a["stay.artefact"])]
        assert before <= span.start_time_unix_nano == call["start_unix_nano"] <= after
        assert span.end_time_unix_nano - span.start_time_unix_nano == round(call["seconds"] * 1e9)
    by_id = {s.span_id: s for s in spans}
    for span in spans:  # every span lies within its parent, and the run within the build
        parent = by_id.get(span.parent_span_id)
        if parent is not None:
            assert parent.start_time_unix_nano <= span.start_time_unix_nano <= span.end_time_unix_nano
            assert span.end_time_unix_nano <= parent.end_time_unix_nano
        assert before <= span.start_time_unix_nano and span.end_time_unix_nano <= after


CLOCKED: list[dict[str, Any]] = [RECORDS[0], {
    **RECORDS[1], "start_unix_nano": 10**18,
    "calls": [{**RECORDS[1]["calls"][0], "start_unix_nano": 10**18 + 1_000},
              {**RECORDS[1]["calls"][1], "start_unix_nano": 10**18 + 2_000, "seconds": 20.0}]},
    {**RECORDS[2], "start_unix_nano": 10**18 + 30 * 10**9}, *RECORDS[3:]]


def test_calls_keep_their_own_starts_and_a_wave_lasts_until_its_last_call() -> None:
    spans = {s.name if s.name != "chat claude-sonnet-5-5" else s.attributes["stay.stage"]: s
             for s in build_spans(CLOCKED, end_ns=5)}
    wave_calls = CLOCKED[1]["calls"]
    for call in wave_calls:
        span = spans[call["stage"]]
        assert span.start_time == call["start_unix_nano"]
        assert span.end_time == call["start_unix_nano"] + round(call["seconds"] * 1e9)
    assert spans["wave"].start_time == CLOCKED[1]["start_unix_nano"] == spans["stay write"].start_time
    assert spans["wave"].end_time == spans["quiz"].end_time  # its longest call, past its own seconds
    assert spans["validate"].start_time == CLOCKED[2]["start_unix_nano"]
    assert spans["stay write"].end_time == spans["validate"].end_time  # the run's end, not the export's


THOUGHT = message({})["usage"]["output_tokens"] // 2
"""Of each stage answer's output tokens, those the thinking fake reports spent thinking."""


def thinking() -> tuple[Handler, list[dict[str, Any]]]:
    """``recording()``'s answers, each stage answer's usage reporting THOUGHT of its output
    tokens as thinking (``output_tokens_details``, as the API does with thinking on)."""
    screen, _ = recording()
    seen: list[dict[str, Any]] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if not is_stage(body):
            return screen(request)
        seen.append(body)
        usage = {**message({})["usage"], "output_tokens_details": {"thinking_tokens": THOUGHT}}
        return reply(body, message(answer_for(body), model=body["model"], usage=usage))

    return handle, seen


def test_a_claude_call_span_names_its_response_room_reasoning_and_cost(
        receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    handler, seen = thinking()
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=claude(handler), progress=lambda _: None)
    assert result.complete and result.cost is not None
    calls = [attributes(s.attributes) for s in receiver.spans() if "gen_ai.request.model" in attributes(s.attributes)]
    stage_calls = [a for a in calls if a["stay.stage"] != "moderation"]
    assert len(stage_calls) == len(seen) > 0
    sent = message({})  # what the fake answers every call with
    assert {a["gen_ai.response.id"] for a in calls} == {sent["id"]}
    assert {tuple(a["gen_ai.response.finish_reasons"].values[i].string_value
                  for i in range(len(a["gen_ai.response.finish_reasons"].values))) for a in calls} == {
        (sent["stop_reason"],)}
    assert sorted(a["gen_ai.request.max_tokens"] for a in stage_calls) == sorted(body["max_tokens"] for body in seen)
    assert sum(a["gen_ai.usage.cost"] for a in calls) == pytest.approx(result.cost)
    assert all(a["stay.cost_usd"] == a["gen_ai.usage.cost"] for a in calls)
    assert sum(a["gen_ai.usage.reasoning.output_tokens"] for a in calls) == result.usage.thinking_tokens == (
        THOUGHT * len(seen)) > 0
    assert not any("error.type" in a for a in calls)


def test_a_failed_calls_span_names_its_error_and_reasoning_tokens() -> None:
    refused = {**RECORDS[1]["calls"][0], "error": "RefusalError", "thinking_tokens": 700, "stop_reason": "refusal",
               "max_tokens": 24000, "response_id": "msg_01", "cost_usd": 0.25}
    records = [RECORDS[0], {**RECORDS[1], "calls": [refused]}]
    span = next(s for s in build_spans(records, end_ns=10**18) if s.name.startswith("chat "))
    assert span.attributes["error.type"] == "RefusalError"
    assert span.status.status_code.name == "ERROR" and span.status.description == "RefusalError"
    assert span.attributes["gen_ai.usage.reasoning.output_tokens"] == refused["thinking_tokens"]
    assert span.attributes["gen_ai.response.finish_reasons"] == (refused["stop_reason"],)
    assert span.attributes["gen_ai.request.max_tokens"] == refused["max_tokens"]
    assert span.attributes["gen_ai.response.id"] == refused["response_id"]
    assert span.attributes["gen_ai.usage.cost"] == refused["cost_usd"]


def test_a_failed_runs_root_span_is_an_error_and_names_it(receiver: Receiver, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    refusal = message("", stop_reason="refusal", stop_details={"type": "refusal", "category": "cyber",
                                                                 "explanation": "no"})
    handler, _ = recording([refusal])  # the first stage call is refused
    with pytest.raises(RefusalError):
        build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=claude(handler), progress=lambda _: None)
    spans = receiver.spans()
    root = next(s for s in spans if not s.parent_span_id)
    assert root.status.code == root.status.STATUS_CODE_ERROR and root.status.message == RefusalError.__name__
    assert attributes(root.attributes)["error.type"] == RefusalError.__name__
    refused = [attributes(s.attributes) for s in spans if attributes(s.attributes).get("error.type")
               and "gen_ai.request.model" in attributes(s.attributes)]
    assert [a["gen_ai.response.finish_reasons"].values[0].string_value for a in refused] == [refusal["stop_reason"]]


def test_a_run_stopped_at_a_gate_is_not_an_error(receiver: Receiver, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    result = build_course(BRIEF, courses_dir=tmp_path, backend="offline", progress=lambda _: None)
    assert result.stopped_at is not None
    root = next(s for s in receiver.spans() if not s.parent_span_id)
    assert root.status.code != root.status.STATUS_CODE_ERROR and "error.type" not in attributes(root.attributes)


def test_the_command_line_prints_the_trace_id_only_when_exporting(
        receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from stay.cli import main

    def traced(courses: Path) -> list[str]:
        assert main(["new", str(BRIEF), "--courses-dir", str(courses)]) == 0
        return [line for line in capsys.readouterr().out.splitlines() if line.startswith("trace")]

    assert traced(tmp_path / "quiet") == []  # nothing exported: the id is in the result and .runs/traces/
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    exported = traced(tmp_path / "exported")
    ids = {span.trace_id.hex() for span in receiver.spans()}
    assert len(ids) == 1 and exported == [f"trace: {ids.pop()}"]


@pytest.mark.parametrize("disabled", [False, True])
def test_the_service_name_and_the_sdk_switch_are_honoured(receiver: Receiver, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, disabled: bool) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "course-factory")
    if disabled:
        monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    result = build_course(BRIEF, courses_dir=tmp_path, backend="offline", progress=lambda _: None)
    assert (result.course_dir / ".runs" / "traces" / f"{result.trace_id}.jsonl").is_file()  # kept either way
    if disabled:
        assert receiver.received == []
        return
    names = {attributes(rs.resource.attributes)["service.name"] for r in receiver.received
             for rs in r.request.resource_spans}
    assert names == {"course-factory"}


@pytest.mark.parametrize("capture", [False, True])
def test_prompts_and_answers_are_exported_only_when_asked(receiver: Receiver, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, capture: bool) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    if capture:
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    result = build_course(BRIEF, courses_dir=tmp_path, backend="offline", progress=lambda _: None)
    title = Brief.from_yaml(BRIEF).title
    trace = (result.course_dir / ".runs" / "traces" / f"{result.trace_id}.jsonl").read_text()
    assert title not in trace and "_content" not in trace  # the file never holds a prompt
    calls = [attributes(s.attributes) for s in receiver.spans() if "gen_ai.request.model" in attributes(s.attributes)]
    assert calls
    keys = {"gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages", "input.value",
            "output.value"}
    if not capture:
        assert not any(keys & set(a) for a in calls)
        return
    assert all(keys <= set(a) for a in calls)
    audience = next(a for a in calls if a["stay.stage"] == "audience")
    assert title in audience["input.value"]
    (user,) = json.loads(audience["gen_ai.input.messages"])
    assert user["role"] == "user" and title in "".join(part["content"] for part in user["parts"])
    assert json.loads(audience["gen_ai.system_instructions"])[0]["type"] == "text"
    (answer,) = json.loads(audience["gen_ai.output.messages"])
    written = yaml.safe_load((result.course_dir / "audience.yaml").read_text())
    assert answer["role"] == "assistant" and json.loads(answer["parts"][0]["content"]) == written
