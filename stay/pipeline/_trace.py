"""Traces: one JSON-lines file per run under ``<course>/.runs/traces/``.

The trace id is minted before the run starts, so scores computed after it attach to
it; the session id is the slug, so a course's whole history is one thread. Every
node is a span (timing, and per model call: stage, model, tokens, cache reads).
After validation the defect counts are attached as scores, one per owner, zeros
included (a missing score reads "not measured", a zero "measured, and clean"),
plus ``validator_checks_run``, because a rule that stops running also stops
failing. A call that wrote a lesson's file names its lesson and module, and each
lesson asked about is a ``lesson`` record (its title), so the export can give every
lesson its own span. Nothing from the environment is ever written here: no key, no header.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stay._secrets import redact
from stay.artefacts import write_text_atomic
from stay.errors import StayError
from stay.models import ModelAnswer, ModelRequest, Price, answer_cost
from stay.validate import OWNERS, CourseReport

if TYPE_CHECKING:
    from stay.pipeline._reader import RunReader
    from stay.settings import OtlpTarget
    from stay.stages import Stage

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
    """Every lesson-scope stage's file -> its lesson, from the course's layout (the one
    owner of paths); empty when there is no curriculum, or one that does not load (the
    run says why; its trace goes without lessons rather than raise over the run's error)."""
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


def _with_lesson(call: dict[str, Any], ref: LessonRef | None) -> dict[str, Any]:
    return call if ref is None else {**call, "lesson": ref.id, "module": ref.module}


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
        """One model call (list.append is atomic: wave threads may call this at once);
        ``error`` names what a billed reply that could not be used raised."""
        usage = answer.usage
        failed = {} if error is None else {"error": error}
        self._calls.append({**failed,
            "stage": request.stage, "artefact": request.artefact, "model": answer.model,
            # the wall clock when the call began (it ends now), so an exported span has the real time
            "start_unix_nano": time.time_ns() - round(seconds * 1e9), "max_tokens": answer.max_tokens,
            "seconds": round(seconds, 4), "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "thinking_tokens": usage.thinking_tokens, "batch": answer.batch,
            "response_id": answer.response_id, "request_id": answer.request_id,
            "stop_reason": answer.stop_reason,
            "cost_usd": answer_cost(answer, self.prices),
            **({CONTENT: _content(request, answer)} if self.capture else {}),
        })

    @contextmanager
    def span(self, name: str, kind: str, stages: tuple[str, ...] = ()) -> Iterator[None]:
        """A node's span. A wave node only starts its tasks, which make their calls later,
        while gather waits: its span owns every later call of its ``stages`` until the
        barrier ends (assigned when the trace is flushed), and the barrier's span keeps
        only what is left."""
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
        """Spans with their calls: a wave span's by stage, every other span's by time. A
        call that wrote a lesson's file names its lesson and module, and each such lesson
        is a ``lesson`` record (id, module, title), after the spans."""
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
            calls = [_with_lesson(call, lessons.get(call["artefact"]))
                     for call in sorted(calls, key=lambda c: (c["stage"], c["artefact"]))]
            finished.append({
                **{k: v for k, v in record.items() if not k.startswith("_")}, "calls": calls,
                "input_tokens": sum(c["input_tokens"] for c in calls),
                "output_tokens": sum(c["output_tokens"] for c in calls),
                "cache_read_input_tokens": sum(c["cache_read_input_tokens"] for c in calls),
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
        """Write the trace; with ``otlp``, also export it there (stay/pipeline/_otel.py).
        ``error`` names what ended a failed run (an exception's type); ``lessons`` maps
        each lesson file to its lesson (``lesson_files``), so its calls are grouped by lesson."""
        header = {"type": "trace", "trace_id": self.trace_id, "session_id": self.slug,
                  "command": self.command, "backend": self.backend, "stopped_at": stopped_at, "error": error}
        path = course_dir / TRACES / f"{self.trace_id}.jsonl"
        records = self._finished_records(lessons or {})
        lines = [json.dumps(_without_content(record), sort_keys=True) for record in (header, *records)]
        write_text_atomic(path, "\n".join(lines) + "\n")
        if otlp is not None:
            from stay.pipeline._otel import export_trace

            export_trace([header, *records], otlp)
        return path
