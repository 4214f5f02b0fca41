"""Exporting a run's trace to an OpenTelemetry backend (OTLP over HTTP).

The JSON-lines trace under ``<course>/.runs/traces/`` stays the record; this sends the
same run, once it is flushed, to whatever tracing backend ``OTEL_EXPORTER_OTLP_ENDPOINT``
names (Langfuse, Phoenix, a Collector, ...), with the optional extra
``pip install 'stay-course[otel]'`` (``opentelemetry-sdk`` and the OTLP/HTTP exporter). The
SDK is imported only here, only when exporting, so a plain install runs without it.

What the backend receives, for one run:

* one trace whose id **is** the JSONL trace id, so the two can be found from each other;
  span ids are derived from it, so exporting the same trace twice sends the same ids;
* a root span for the run (``stay <command>``) carrying the session id (the slug) as
  ``session.id``, ``langfuse.session.id`` and ``gen_ai.conversation.id``, the command,
  the backend, where it stopped, the validator's counts (``stay.validator.<owner>``,
  ``stay.validator.defects``, ``stay.validator.checks_run``) and every score as
  ``stay.score.<name>`` and as a ``gen_ai.evaluation.result`` event;
* a child span per pipeline node, with its kind and status;
* under a node, a span per lesson it asked about (``lesson m01-l04``: id, module, title,
  its calls' token sums and cost under ``stay.*`` names, so no backend counts a token
  twice), lasting from its first call's start to its last call's end and holding them;
  a call about no one lesson (design, a module's plans, the capstone) is the node's;
* under it, a span per model call with the GenAI semantic conventions
  (``gen_ai.operation.name``, ``gen_ai.provider.name`` and the older ``gen_ai.system``,
  ``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` including cached tokens as the
  convention asks, ``gen_ai.usage.output_tokens``, ``gen_ai.usage.cache_read.input_tokens``,
  ``gen_ai.usage.cache_creation.input_tokens``) and OpenInference's ``llm.*`` names,
  which Phoenix reads.

Spans carry the run's own clock: the JSONL trace records when each node and each call
began (``start_unix_nano``) and how long it took, so calls in the wave overlap as they
ran. (A trace written before starts were recorded is laid end to end, ending when the
export happens.) Only counts and names leave the machine, no key and, unless
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``, no prompt or answer; with it,
each call span has its prompt and answer (``gen_ai.system_instructions``,
``gen_ai.input.messages``, ``gen_ai.output.messages``, and OpenInference's
``input.value``/``output.value``), kept in memory for the export, never in the JSONL file.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from stay._secrets import redact
from stay._version import DISTRIBUTION, __version__
from stay.models import REPLAY
from stay.settings import OtlpTarget

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

INSTALL_HINT = f"pip install '{DISTRIBUTION}[otel]' (from a checkout: pip install -e '.[otel]')"


def _warn(line: str) -> None:
    sys.stderr.write(f"warning: {redact(line)}\n")


def export_trace(records: Sequence[Mapping[str, Any]], target: OtlpTarget, *, end_ns: int | None = None,
                 warn: Callable[[str], None] = _warn) -> bool:
    """Send one flushed trace (the JSONL records: header, spans, scores) to ``target``.

    Never raises for the backend's sake: a missing extra, an unreachable endpoint or a
    refused export is one warning line (the JSONL trace keeps everything); returns
    whether the backend accepted the spans.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import SpanExportResult
    except ImportError:
        warn(f"OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry exporter is not installed; "
             f"{INSTALL_HINT} to export traces (the JSONL trace is written as always)")
        return False
    trace_id = _header(records).get("trace_id", "?")
    why = _unreachable(target.endpoint, min(target.timeout, REACH_SECONDS))
    if why is not None:  # not the exporter's retries until its timeout, and its vague line
        warn(redact(f"could not reach the trace receiver at {target.endpoint} ({why}); trace {trace_id} was not "
                    "exported (the JSONL trace keeps it)", target.secrets))
        return False
    spans = build_spans(records, end_ns=end_ns if end_ns is not None else time.time_ns(),
                        service_name=target.service_name)
    with _exporter_log() as logged:
        # made in here: the exporter reads the OTLP variables itself too, and logs a
        # malformed header whole
        exporter = OTLPSpanExporter(endpoint=target.endpoint, headers=dict(target.headers), timeout=target.timeout)
        try:
            result = exporter.export(spans)
        except Exception as exc:  # the exporter's own errors are not stay's: say so, and go on
            logged.append(f"{type(exc).__name__}: {exc}")
            result = None
        finally:
            exporter.shutdown()  # type: ignore[no-untyped-call]
    if result is not SpanExportResult.SUCCESS:
        why = " ".join(logged[-1].split()) if logged else "the backend did not accept it"
        line = f"could not export trace {trace_id} to {target.endpoint}: {why} (the JSONL trace keeps it)"
        warn(redact(line, target.secrets))  # the endpoint's userinfo, a header the exporter echoed
        return False
    return True


REACH_SECONDS = 2.0
"""How long the receiver may take to accept a connection before the export is given up."""


def _unreachable(endpoint: str, seconds: float) -> str | None:
    """Why nothing listens at ``endpoint`` (refused, no such host, no answer), or None
    when it accepts a connection, or when a proxy stands between (the exporter's
    requests go through it: only the export can tell)."""
    parts = urllib.parse.urlsplit(endpoint)
    try:
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a malformed port: the exporter says what is wrong with it
        return None
    if not host or (urllib.request.getproxies().get(parts.scheme) and not urllib.request.proxy_bypass(host)):
        return None
    try:
        with socket.create_connection((host, port), timeout=seconds):
            return None
    except socket.gaierror:
        return f"no such host {host}"
    except TimeoutError:
        return f"no answer within {seconds:g} s"
    except OSError as exc:
        return (exc.strerror or type(exc).__name__).lower()


@contextmanager
def _exporter_log() -> Iterator[list[str]]:
    """The exporter's log lines while it exports, kept for stay's one-line warning
    instead of printed as they come."""
    logger = logging.getLogger(_EXPORTER_LOGGER)
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler, propagate = Keep(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


_EXPORTER_LOGGER = "opentelemetry"
"""Every OpenTelemetry logger: the exporter's, and the header parser's (``opentelemetry.util.re``)."""


def _header(records: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return next((r for r in records if r.get("type") == "trace"), {})


def build_spans(records: Sequence[Mapping[str, Any]], *, end_ns: int,
                service_name: str = OtlpTarget.service_name) -> list[ReadableSpan]:
    """The OpenTelemetry spans of one trace, ready for any span exporter."""
    from opentelemetry import trace as api
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    header = _header(records)
    trace_hex = str(header.get("trace_id", ""))
    session = str(header.get("session_id", ""))
    command = str(header.get("command", "run"))
    backend = str(header.get("backend", ""))
    spans = [r for r in records if r.get("type") == "span"]
    scores = [r for r in records if r.get("type") == "score"]

    class FromTrace(IdGenerator):
        """The JSONL trace's id; span ids drawn from a generator seeded with it."""

        def __init__(self) -> None:
            self.trace_id = int(trace_hex, 16) if _is_trace_id(trace_hex) else random.getrandbits(128)
            self.spans = random.Random(self.trace_id)

        def generate_trace_id(self) -> int:
            return self.trace_id

        def generate_span_id(self) -> int:
            return self.spans.getrandbits(64) or 1

    collected = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_ON, id_generator=FromTrace(), shutdown_on_exit=False,
                              resource=Resource.create({"service.name": service_name, "service.version": __version__,
                                                        "openinference.project.name": "stay"}))
    provider.add_span_processor(SimpleSpanProcessor(collected))
    tracer = provider.get_tracer("stay.pipeline", __version__)
    session_attrs = {"session.id": session, "langfuse.session.id": session}

    layout = _layout(spans, end_ns)
    root_start, root_end = min((t[0] for t in layout), default=end_ns), max((t[1] for t in layout), default=end_ns)
    root = tracer.start_span(f"stay {command}", start_time=root_start, attributes={
        **session_attrs, **_root_attributes(header, scores), "gen_ai.conversation.id": session,
        "langfuse.trace.name": f"stay {command} {session}", "openinference.span.kind": "CHAIN"})
    for score in scores:
        root.add_event("gen_ai.evaluation.result", timestamp=root_end, attributes={
            "gen_ai.evaluation.name": str(score.get("name")),
            "gen_ai.evaluation.score.value": _number(score.get("value"))})
    lessons = {str(r.get("id")): r for r in records if r.get("type") == "lesson"}
    for record, (start, end, call_times) in zip(spans, layout, strict=True):
        node = tracer.start_span(str(record.get("name")), context=api.set_span_in_context(root), start_time=start,
                                 attributes={**session_attrs, "stay.node.kind": str(record.get("kind")),
                                             "openinference.span.kind": "CHAIN"})
        for lesson_id, timed in _by_lesson(record.get("calls") or [], call_times).items():
            made = [_call_attributes(call, backend) for call, _ in timed]
            parent = node
            if lesson_id is not None:
                mine = _lesson_attributes(lesson_id, lessons.get(lesson_id), made)
                parent = tracer.start_span(f"lesson {lesson_id}", context=api.set_span_in_context(node),
                                           start_time=min(call_start for _, (call_start, _) in timed),
                                           attributes={**session_attrs, **mine})
                if "error.type" in mine:  # the lesson is as failed as its first failed call: where to look
                    parent.set_status(api.Status(api.StatusCode.ERROR, str(mine["error.type"])))
            for (call, (call_start, call_end)), attributes in zip(timed, made, strict=True):
                span = tracer.start_span(f"chat {call.get('model')}", context=api.set_span_in_context(parent),
                                         kind=api.SpanKind.CLIENT, start_time=call_start,
                                         attributes={**session_attrs, **attributes})
                if call.get("error"):
                    span.set_status(api.Status(api.StatusCode.ERROR, str(call["error"])))
                span.end(end_time=call_end)
            if parent is not node:
                parent.end(end_time=max(call_end for _, (_, call_end) in timed))
        if record.get("status") not in (None, "ok"):
            node.set_status(api.Status(api.StatusCode.ERROR, str(record.get("status"))))
        node.end(end_time=end)
    # a failed run: what ended it; a trace written before runs recorded that has the first
    # node that failed (a gate's stop is a node's status too, but not the run's error)
    error = header["error"] if "error" in header else next(
        (str(r["status"]) for r in spans if r.get("status") not in (None, "ok")), None)
    if error:
        root.set_attribute("error.type", str(error))
        root.set_status(api.Status(api.StatusCode.ERROR, str(error)))
    root.end(end_time=root_end)
    provider.shutdown()
    return list(collected.get_finished_spans())


Times = tuple[int, int, list[tuple[int, int]]]
"""A node span's start and end, and each of its calls' (nanoseconds since the epoch)."""


def _layout(spans: Sequence[Mapping[str, Any]], end_ns: int) -> list[Times]:
    """When each span and call ran. A trace that recorded wall-clock starts
    (``start_unix_nano``) is the real timeline: a call keeps its own start and length,
    and a wave node, whose calls run after it has started them, lasts until its last
    call ends. An older trace, with durations only, is laid end to end, ending at
    ``end_ns``, each call starting with its node."""
    if spans and all(_clock(span) for span in spans):
        layout = []
        for span in spans:
            start = _clock(span)
            calls = [((_clock(call) or start), (_clock(call) or start) + _ns(call.get("seconds")))
                     for call in span.get("calls") or []]
            layout.append((start, max([start + _ns(span.get("seconds")), *(end for _, end in calls)]), calls))
        return layout
    cursor, layout = end_ns - sum(_ns(span.get("seconds")) for span in spans), []
    for span in spans:
        start, duration = cursor, _ns(span.get("seconds"))
        layout.append((start, start + duration, [(start, start + min(_ns(call.get("seconds")), duration))
                                                 for call in span.get("calls") or []]))
        cursor = start + duration
    return layout


TimedCall = tuple[Mapping[str, Any], tuple[int, int]]


def _by_lesson(calls: Sequence[Mapping[str, Any]],
               times: Sequence[tuple[int, int]]) -> dict[str | None, list[TimedCall]]:
    """A node's calls with their times, by the lesson whose file each wrote (None: a call
    about no one lesson, e.g. a module's plans, the capstone), in the node's order."""
    grouped: dict[str | None, list[TimedCall]] = {}
    for call, when in zip(calls, times, strict=True):
        lesson = call.get("lesson")
        grouped.setdefault(str(lesson) if lesson else None, []).append((call, when))
    return grouped


LESSON_SUMS = {"gen_ai.usage.input_tokens": "stay.usage.input_tokens",
               "gen_ai.usage.output_tokens": "stay.usage.output_tokens",
               "gen_ai.usage.cache_read.input_tokens": "stay.usage.cache_read.input_tokens",
               "gen_ai.usage.cache_creation.input_tokens": "stay.usage.cache_creation.input_tokens",
               "gen_ai.usage.reasoning.output_tokens": "stay.usage.reasoning.output_tokens"}
"""A call span's usage -> the lesson span's sum of it. Under stay's names, not the GenAI
ones: a backend that totals ``gen_ai.usage.*`` over a trace (Langfuse) would count a
lesson's tokens twice, once on the lesson and once on its calls."""


def _lesson_attributes(lesson_id: str, lesson: Mapping[str, Any] | None,
                       calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A lesson span's: its id, module and title, its calls' (attributes) sums, their cost
    only when every call was priced (a part would pass for the whole), and the first
    failed call's error."""
    attributes: dict[str, Any] = {
        "stay.lesson.id": lesson_id, "stay.module.id": str((lesson or {}).get("module", "")),
        "stay.lesson.calls": len(calls), "openinference.span.kind": "CHAIN",
        **{total: sum(int(call.get(name, 0)) for call in calls) for name, total in LESSON_SUMS.items()}}
    if lesson and lesson.get("title"):
        attributes["stay.lesson.title"] = str(lesson["title"])
    costs = [cost for call in calls if isinstance(cost := call.get("stay.cost_usd"), float)]
    if len(costs) == len(calls):
        attributes["stay.cost_usd"] = sum(costs)
    error = next((call["error.type"] for call in calls if call.get("error.type")), None)
    if error is not None:
        attributes["error.type"] = str(error)
    return attributes


def _clock(record: Mapping[str, Any]) -> int:
    """The record's wall-clock start, 0 when it has none."""
    value = record.get("start_unix_nano")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _is_trace_id(text: str) -> bool:
    return len(text) == 32 and all(c in "0123456789abcdef" for c in text) and text != "0" * 32


def _ns(seconds: Any) -> int:
    return round(float(seconds) * 1e9) if isinstance(seconds, int | float) and seconds > 0 else 0


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _content_attributes(content: Mapping[str, Any], stop_reason: Any) -> dict[str, Any]:
    """A call's prompt and answer as the GenAI conventions' JSON messages, and as
    OpenInference's ``input.value``/``output.value`` (what Phoenix and Langfuse show)."""
    system = [{"type": "text", "content": text} for text in content.get("system") or []]
    user = [{"role": "user", "parts": [{"type": "text", "content": text} for text in content.get("user") or []]}]
    answer = str(content.get("answer", ""))
    output: list[dict[str, Any]] = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
    if stop_reason:  # the offline backend has none, and none is made up
        output[0]["finish_reason"] = str(stop_reason)
    return {"gen_ai.system_instructions": json.dumps(system, ensure_ascii=False),
            "gen_ai.input.messages": json.dumps(user, ensure_ascii=False),
            "gen_ai.output.messages": json.dumps(output, ensure_ascii=False),
            "input.value": "\n\n".join(content.get("user") or []), "output.value": answer}


def _root_attributes(header: Mapping[str, Any], scores: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "stay.trace_id": str(header.get("trace_id", "")), "stay.command": str(header.get("command", "")),
        "stay.backend": str(header.get("backend", "")),
    }
    if header.get("stopped_at"):
        attributes["stay.stopped_at"] = str(header["stopped_at"])
    defects = 0
    for score in scores:
        name, value = str(score.get("name")), score.get("value")
        number = int(value) if isinstance(value, int) and not isinstance(value, bool) else _number(value)
        attributes[f"stay.score.{name}"] = number
        if name == "validator_checks_run":
            attributes["stay.validator.checks_run"] = number
        elif name.startswith("validator_"):
            attributes[f"stay.validator.{name.removeprefix('validator_')}"] = number
            defects += int(number)
    if any(str(s.get("name")).startswith("validator_") for s in scores):
        attributes["stay.validator.defects"] = defects
    return attributes


def _call_attributes(call: Mapping[str, Any], backend: str) -> dict[str, Any]:
    model = str(call.get("model", ""))
    # the backend's own name (``Backend.name``), never guessed from the model's: a Claude model
    # served through an OpenAI-compatible router is the openai backend's call
    provider = backend.removesuffix(REPLAY) or "unknown"
    fresh = int(call.get("input_tokens") or 0)
    read = int(call.get("cache_read_input_tokens") or 0)
    written = int(call.get("cache_creation_input_tokens") or 0)
    output = int(call.get("output_tokens") or 0)
    prompt = fresh + read + written  # the convention's input_tokens includes cached tokens
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.system": provider,
        "gen_ai.request.model": model, "gen_ai.response.model": model,
        "gen_ai.usage.input_tokens": prompt, "gen_ai.usage.output_tokens": output,
        "gen_ai.usage.cache_read.input_tokens": read, "gen_ai.usage.cache_creation.input_tokens": written,
        "openinference.span.kind": "LLM", "llm.model_name": model, "llm.provider": provider,
        "llm.token_count.prompt": prompt, "llm.token_count.completion": output,
        "llm.token_count.total": prompt + output, "llm.token_count.prompt_details.cache_read": read,
        "llm.token_count.prompt_details.cache_write": written,
        "stay.stage": str(call.get("stage", "")), "stay.artefact": str(call.get("artefact", "")),
        "gen_ai.usage.reasoning.output_tokens": int(call.get("thinking_tokens") or 0),
    }
    # what the JSONL call record holds only when it is known: absent rather than a made-up value
    if isinstance(call.get("max_tokens"), int):
        attributes["gen_ai.request.max_tokens"] = call["max_tokens"]
    if call.get("response_id"):
        attributes["gen_ai.response.id"] = str(call["response_id"])
    if call.get("request_id"):  # the HTTP exchange's id, what the provider's support asks for
        attributes["stay.request_id"] = str(call["request_id"])
    if call.get("stop_reason"):
        attributes["gen_ai.response.finish_reasons"] = (str(call["stop_reason"]),)
    if call.get("error"):  # a billed reply that could not be used: the error it raised
        attributes["error.type"] = str(call["error"])
    content = call.get("_content")
    if isinstance(content, Mapping):  # OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
        attributes.update(_content_attributes(content, call.get("stop_reason")))
    cost = call.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        # no GenAI convention prices a call yet: OpenLIT's name, which Langfuse reads too, and ours
        attributes["gen_ai.usage.cost"] = attributes["stay.cost_usd"] = float(cost)
    return attributes
