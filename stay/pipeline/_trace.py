"""What a run says while it works (progress, to a terminal or a notebook, through the reporter nodes say it
through) and what it records (its spans as JSON lines in the course, replayed to an OTLP collector when set)."""

from __future__ import annotations

import html
import json
import logging
import random
import re
import socket
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from stay._display import clock, plural, terminal_text
from stay._secrets import redact
from stay._version import DISTRIBUTION, __version__
from stay.artefacts import write_text_atomic
from stay.errors import StayError
from stay.models import REPLAY, ModelAnswer, ModelRequest, Price, answer_cost
from stay.settings import OtlpTarget
from stay.validate import OWNERS, CourseReport

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from stay.pipeline._layout import RunReader
    from stay.stages import Stage

Progress = Callable[[str], None]
"""Where a run's progress lines go (default: stderr, or a bar in a notebook)."""

Ending = Literal["complete", "stopped", "failed"]
"""How a run ended, as its last update says."""


@dataclass(frozen=True)
class ProgressUpdate:
    """One thing a run says: the time since it started, its cost so far, and ``done`` of ``total``."""

    text: str
    elapsed: float
    """Seconds since the run started."""
    cost: float | None
    """US dollars the run has paid so far; None when a model it used has no price."""
    done: int | None = None
    total: int | None = None
    final: Ending | None = None
    """Set on a run's last update only: a bar closes in that state; a terminal is never sent it."""

    @property
    def counted(self) -> bool:
        return self.done is not None and self.total is not None

    def line(self) -> str:
        """The terminal's line: counted work as ``  [ 7/12] m02-l01: ...  (4.2 s, $0.0123)``."""
        if self.done is None or self.total is None:
            return self.text
        width = len(str(self.total))
        return f"  [{self.done:>{width}}/{self.total}] {self.text}  ({clock(self.elapsed)}, {money(self.cost)})"


@runtime_checkable
class ProgressSink(Protocol):
    """A progress sink that draws updates itself (a notebook's bar); any other gets ``line()``."""

    def __call__(self, line: str) -> None: ...

    def update(self, update: ProgressUpdate) -> None: ...


def money(cost: float | None) -> str:
    return "cost unknown" if cost is None else f"${cost:.4f}"


def print_progress(line: str) -> None:
    """The terminal sink: one line on stderr, flushed, redacted and escaped for a terminal."""
    sys.stderr.write(terminal_text(redact(line)) + "\n")
    sys.stderr.flush()


_KERNEL_SHELLS = frozenset({"ipykernel.zmqshell.ZMQInteractiveShell", "google.colab._shell.Shell"})
"""The shells that draw HTML, as tqdm.auto tells them: ipykernel's, and Colab's subclass of it."""


def in_notebook() -> bool:
    """Whether this process is a notebook's kernel, by its IPython shell's classes' names: IPython is looked
    up, never imported, so a script pays nothing for the check."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and any(f"{cls.__module__}.{cls.__qualname__}" in _KERNEL_SHELLS
                                     for cls in type(shell).__mro__)


def default_progress() -> Progress:
    return NotebookProgress() if in_notebook() else print_progress


def _ipython_show() -> Callable[[str], None]:
    """Show HTML in the cell, then replace it in place on every later call."""
    import importlib

    ipython: Any = importlib.import_module("IPython.display")  # only in a notebook, where it is installed
    handle: Any = None

    def show(markup: str) -> None:
        nonlocal handle
        if handle is None:
            handle = ipython.display(ipython.HTML(markup), display_id=True)
        else:
            handle.update(ipython.HTML(markup))

    return show


@dataclass
class NotebookProgress:
    """A progress bar in the notebook cell that runs the build, redrawn in place: the wave's lessons,
    elapsed time, running cost and latest lines. ``show`` gets the HTML (default: an IPython display handle)."""

    show: Callable[[str], None] | None = None
    keep: int = 4
    """How many of the latest lines to show under the bar."""
    lines: list[str] = field(default_factory=list)
    latest: ProgressUpdate | None = None
    counted: ProgressUpdate | None = None
    """The latest counted update: what the bar shows."""
    ended: Ending | None = None
    """How the run ended, once its final update came: the bar is then drawn for good."""

    def __call__(self, line: str) -> None:
        """A line from outside a run (the backend announcing itself): shown as it is."""
        if self.ended is None:
            self._add(line)
            self._draw()

    def update(self, update: ProgressUpdate) -> None:
        if self.ended is not None:  # one run's bar: nothing redraws it once it has ended
            return
        self.ended = update.final
        self.latest = update
        if update.counted:
            self.counted = update
        self._add(update.text)
        self._draw()

    def html(self) -> str:
        counted = self.counted
        if counted is None or counted.done is None or counted.total is None:
            # no value: the browser draws it indeterminate (a spinner) until the run ends;
            # then it is full for a complete run, empty for one that stopped or failed
            full = int(self.ended == "complete")
            bar = "<progress></progress>" if self.ended is None else f'<progress value="{full}" max="1"></progress>'
            count = ""
        else:
            bar = f'<progress value="{counted.done}" max="{counted.total}"></progress>'
            count = f"{counted.done}/{plural(counted.total, 'task')} · "
        latest = self.latest
        where = f"{clock(latest.elapsed)} · {money(latest.cost)}" if latest is not None else "starting"
        if self.ended is not None:
            where = f"{where} · {self.ended}"
        text = "\n".join(html.escape(line) for line in self.lines)
        state = "" if self.ended is None else f' data-ended="{self.ended}"'
        return (f'<div class="stay-progress"{state}>{bar} <span>{html.escape(count + where)}</span>'
                f'<pre style="margin:0.2em 0">{text}</pre></div>')

    def _add(self, line: str) -> None:
        self.lines = [*self.lines, line][-max(self.keep, 1):]

    def _draw(self) -> None:
        if self.show is None:
            self.show = _ipython_show()
        self.show(self.html())


@dataclass
class Reporter:
    progress: Progress
    cost: Callable[[], float | None] = lambda: None
    """What the run has paid so far (None when a model it used has no price)."""
    started: float = field(default_factory=time.monotonic)
    """When the run began: progress counts elapsed time from here."""

    def say(self, line: str) -> None:
        # any sink, a notebook's too, gets no secret (a warning may quote an exception)
        self._emit(ProgressUpdate(redact(line), self.elapsed(), self.cost()))

    def tick(self, label: str, done: int, total: int) -> None:
        """Counted work finished: ``[done/total] label``, with the elapsed time and cost."""
        self._emit(ProgressUpdate(label, self.elapsed(), self.cost(), done, total))

    def end(self, outcome: str, ending: Ending) -> None:
        """The run's last word, to a sink that draws (a bar closes on it); a plain callable is not sent it."""
        if isinstance(self.progress, ProgressSink):
            self.progress.update(ProgressUpdate(redact(outcome), self.elapsed(), self.cost(), final=ending))

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _emit(self, update: ProgressUpdate) -> None:
        if isinstance(self.progress, ProgressSink):
            self.progress.update(update)
        else:
            self.progress(update.line())


INSTALL_HINT = f"pip install '{DISTRIBUTION}[otel]' (from a checkout: pip install -e '.[otel]')"


def _warn(line: str) -> None:
    sys.stderr.write(f"warning: {redact(line)}\n")


def export_trace(records: Sequence[Mapping[str, Any]], target: OtlpTarget, *, end_ns: int | None = None,
                 warn: Callable[[str], None] = _warn) -> bool:
    """Send one flushed trace to ``target``; never raises (a failure is one warning line); True if accepted."""
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
    """Why nothing listens at ``endpoint``, or None when it accepts a connection or a proxy stands between."""
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
    """The exporter's log lines while it exports, kept for stay's one-line warning."""
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
            hexed = int(trace_hex, 16) if re.fullmatch("[0-9a-f]{32}", trace_hex) else 0
            self.trace_id = hexed or random.getrandbits(128)
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
        by_lesson: dict[str | None, list[tuple[Mapping[str, Any], tuple[int, int]]]] = {}
        for call, when in zip(record.get("calls") or [], call_times, strict=True):  # None: no one lesson
            by_lesson.setdefault(str(call["lesson"]) if call.get("lesson") else None, []).append((call, when))
        for lesson_id, timed in by_lesson.items():
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
    """When each span and call ran: a wall-clock trace is the real timeline (a wave node lasts until its last
    call ends); an older one, with durations only, is laid end to end, ending at ``end_ns``."""
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


LESSON_SUMS = {f"gen_ai.usage.{name}": f"stay.usage.{name}" for name in (
    "input_tokens", "output_tokens", "cache_read.input_tokens", "cache_creation.input_tokens",
    "reasoning.output_tokens")}
"""A call span's usage -> the lesson span's sum, under stay's names: a backend totalling ``gen_ai.usage.*``
would count a lesson's tokens twice."""


def _lesson_attributes(lesson_id: str, lesson: Mapping[str, Any] | None,
                       calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A lesson span's: its id, module, title, its calls' sums (cost only when all were priced), first error."""
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


def _ns(seconds: Any) -> int:
    return round(float(seconds) * 1e9) if isinstance(seconds, int | float) and seconds > 0 else 0


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _content_attributes(content: Mapping[str, Any], stop_reason: Any) -> dict[str, Any]:
    """A call's prompt and answer as GenAI JSON messages and OpenInference's ``input.value``/``output.value``."""
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
        if name.startswith("validator_"):
            attributes[f"stay.validator.{name.removeprefix('validator_')}"] = number
            if name != "validator_checks_run":
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


TRACES = ".runs/traces"
CONTENT = "_content"
"""A call record's prompt and answer, when captured: exported, never written to the file."""


def _content(request: ModelRequest, answer: ModelAnswer) -> dict[str, Any]:
    # the answer's data is already redacted (the gateway); the prompt holds the brief's text
    return {"system": [redact(block.text) for block in request.system],
            "user": [redact(text) for text in (request.shared, request.user) if text],
            "answer": json.dumps(answer.data, sort_keys=True, ensure_ascii=False)}


@dataclass(frozen=True)
class LessonRef:
    """The lesson a file belongs to: what its exported lesson span is named and labelled by."""

    id: str
    module: str
    title: str


def lesson_files(stages: Sequence[Stage], reader: RunReader) -> dict[str, LessonRef]:
    """Every lesson-scope stage's file -> its lesson; empty when the curriculum is missing or broken."""
    try:
        layout = reader.layout
    except StayError:
        return {}
    return {path: LessonRef(place.id, place.module.id, place.lesson.title)
            for stage in stages if stage.scope == "lesson" for path, place in layout.outputs(stage)
            if place is not None}


def _without_content(record: dict[str, Any]) -> dict[str, Any]:
    if not record.get("calls"):
        return record
    return {**record, "calls": [{k: v for k, v in call.items() if k != CONTENT} for call in record["calls"]]}


@dataclass
class Tracer:
    slug: str
    command: str
    backend: str
    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    capture: bool = False
    """Keep each call's prompt and answer for the OpenTelemetry export (never the JSONL file)."""
    prices: Mapping[str, Price] | None = None
    """The backend's price table (``Backend.prices``); None: Claude's."""
    records: list[dict[str, Any]] = field(default_factory=list)
    _calls: list[dict[str, Any]] = field(default_factory=list)

    def call(self, request: ModelRequest, answer: ModelAnswer, seconds: float, error: str | None = None) -> None:
        """One model call (list.append is atomic: wave threads call this at once)."""
        failed = {} if error is None else {"error": error}
        self._calls.append({**failed,
            "stage": request.stage, "artefact": request.artefact, "model": answer.model,
            # the wall clock when the call began (it ends now), so an exported span has the real time
            "start_unix_nano": time.time_ns() - round(seconds * 1e9), "max_tokens": answer.max_tokens,
            "seconds": round(seconds, 4), **answer.usage.model_dump(), "batch": answer.batch,
            "response_id": answer.response_id, "request_id": answer.request_id,
            "stop_reason": answer.stop_reason,
            "cost_usd": answer_cost(answer, self.prices),
            **({CONTENT: _content(request, answer)} if self.capture else {}),
        })

    @contextmanager
    def span(self, name: str, kind: str, stages: tuple[str, ...] = ()) -> Iterator[None]:
        """A node's span; a wave node's owns every later call of its ``stages`` until the barrier ends."""
        first = len(self._calls)
        start, began = time.perf_counter(), time.time_ns()
        status = "ok"
        try:
            yield
        except BaseException as exc:
            status = type(exc).__name__
            raise
        finally:
            self.records.append({
                "type": "span", "trace_id": self.trace_id, "session_id": self.slug, "name": name,
                "kind": kind, "status": status, "seconds": round(time.perf_counter() - start, 4),
                "start_unix_nano": began,
                "_first": first, "_last": len(self._calls), "_owns": list(stages) if kind == "wave" else [],
            })

    def _finished_records(self, lessons: Mapping[str, LessonRef]) -> list[dict[str, Any]]:
        """Spans with their calls (a wave span's by stage, others' by time), then each lesson's record."""
        owned: set[int] = set()
        spans: dict[int, list[dict[str, Any]]] = {}
        for index, record in enumerate(self.records):
            if record.get("type") == "span" and record["_owns"]:
                # up to the barrier that waited for its tasks: a later call of the same stage
                # (repair, revision) is its own node's
                until = next((r["_last"] for r in self.records[index:] if r.get("kind") == "barrier"),
                             len(self._calls))
                mine = [i for i in range(record["_first"], until)
                        if self._calls[i]["stage"] in record["_owns"] and i not in owned]
                owned.update(mine)
                spans[index] = [self._calls[i] for i in mine]
        finished = []
        for index, record in enumerate(self.records):
            if record.get("type") != "span":
                finished.append(record)
                continue
            calls = spans.get(index)
            if calls is None:
                calls = [self._calls[i] for i in range(record["_first"], record["_last"]) if i not in owned]
            placed = []
            for call in sorted(calls, key=lambda c: (c["stage"], c["artefact"])):
                ref = lessons.get(call["artefact"])
                if ref is not None:
                    call = {**call, "lesson": ref.id, "module": ref.module}
                placed.append(call)
            calls = placed
            finished.append({
                **{k: v for k, v in record.items() if not k.startswith("_")}, "calls": calls,
                **{key: sum(c[key] for c in calls) for key in ("input_tokens", "output_tokens",
                                                                "cache_read_input_tokens")},
                "models": sorted({c["model"] for c in calls}),
            })
        asked = {call["artefact"] for call in self._calls}
        for ref in sorted({ref for path, ref in lessons.items() if path in asked}, key=lambda r: r.id):
            finished.append({"type": "lesson", "trace_id": self.trace_id, "session_id": self.slug, "id": ref.id,
                             "module": ref.module, "title": ref.title})
        return finished

    def scores(self, report: CourseReport) -> None:
        counts = {owner: 0 for owner in OWNERS}
        for defect in report.defects:
            counts[defect.owner] += 1
        for owner, value in counts.items():
            self._score(f"validator_{owner}", value)
        self._score("validator_checks_run", report.checks)

    def _score(self, name: str, value: float) -> None:
        self.records.append({"type": "score", "trace_id": self.trace_id, "session_id": self.slug,
                             "name": name, "value": value})

    def flush(self, course_dir: Path, stopped_at: str | None, otlp: OtlpTarget | None = None,
              error: str | None = None, lessons: Mapping[str, LessonRef] | None = None) -> Path:
        """Write the trace, and with ``otlp`` export it there; ``error`` names what ended a failed run."""
        header = {"type": "trace", "trace_id": self.trace_id, "session_id": self.slug,
                  "command": self.command, "backend": self.backend, "stopped_at": stopped_at, "error": error}
        path = course_dir / TRACES / f"{self.trace_id}.jsonl"
        records = self._finished_records(lessons or {})
        lines = [json.dumps(_without_content(record), sort_keys=True) for record in (header, *records)]
        write_text_atomic(path, "\n".join(lines) + "\n")
        if otlp is not None:
            export_trace([header, *records], otlp)
        return path
