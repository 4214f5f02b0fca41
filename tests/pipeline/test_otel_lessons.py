"""A span per lesson in the exported trace: each lesson of the curriculum is a span of
its own, with its own times, holding its calls (the wave's, and repair's), through the
same in-process OTLP/HTTP receiver as tests/pipeline/test_otel.py."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed: pip install -e '.[dev]'")
pytest.importorskip("opentelemetry.proto", reason="opentelemetry-proto is not installed: pip install -e '.[dev]'")

from stay.artefacts import Curriculum
from stay.errors import RefusalError
from stay.pipeline import BuildResult, build_course
from stay.pipeline._layout import CourseLayout, LessonPlace
from stay.pipeline._trace import LESSON_SUMS, build_spans
from stay.settings import OtlpTarget, Settings
from stay.stages import REGISTRY
from stay.testing import RiggedBackend
from tests.models.fake_api import FakeMessagesAPI, stage_of
from tests.models.helpers import KEY
from tests.pipeline.test_otel import BRIEF, RECORDS, Receiver, attributes
from tests.pipeline.test_otel import receiver as receiver  # the fixture

LESSON_STAGES = [stage for stage in REGISTRY if stage.scope == "lesson" and stage.phase == "wave"]
"""The stages that write a lesson's files: each lesson span holds one call of each."""
THOUGHT = 64
"""Tokens the fake thinks before each answer to a request with thinking on."""


def _places(result: BuildResult) -> list[LessonPlace]:
    curriculum = Curriculum.model_validate(yaml.safe_load((result.course_dir / "curriculum.yaml").read_text()))
    return list(CourseLayout(curriculum).lessons())


def _well_formed(spans: list[Any]) -> dict[bytes, Any]:
    """Span ids unique, one root, every other span's parent present, and each child
    within its parent's times; the spans by id."""
    by_id = {span.span_id: span for span in spans}
    assert len(by_id) == len(spans)
    assert len([span for span in spans if not span.parent_span_id]) == 1
    for span in spans:
        if not span.parent_span_id:
            continue
        parent = by_id[span.parent_span_id]
        assert parent.start_time_unix_nano <= span.start_time_unix_nano <= span.end_time_unix_nano, span.name
        assert span.end_time_unix_nano <= parent.end_time_unix_nano, span.name
    return by_id


def _is_call(span: Any) -> bool:
    return "gen_ai.request.model" in attributes(span.attributes)


def _lessons(spans: list[Any], parent: Any) -> dict[str, Any]:
    found = [span for span in spans if span.name.startswith("lesson ") and span.parent_span_id == parent.span_id]
    by_lesson = {attributes(span.attributes)["stay.lesson.id"]: span for span in found}
    assert len(by_lesson) == len(found)  # one span per lesson under a node
    return by_lesson


def _node_of(spans: list[Any], call: Any) -> Any:
    """The node a call belongs to: its parent, or its lesson span's parent."""
    by_id = {s.span_id: s for s in spans}
    parent = by_id[call.parent_span_id]
    return by_id[parent.parent_span_id] if parent.name.startswith("lesson ") else parent


def _holds_its_calls(lesson: Any, calls: list[Any]) -> None:
    """The lesson span starts with its first call, ends with its last, and sums their usage."""
    assert calls
    assert lesson.start_time_unix_nano == min(c.start_time_unix_nano for c in calls)
    assert lesson.end_time_unix_nano == max(c.end_time_unix_nano for c in calls)
    mine = attributes(lesson.attributes)
    assert mine["stay.lesson.calls"] == len(calls)
    for name, total in LESSON_SUMS.items():
        assert mine[total] == sum(attributes(c.attributes)[name] for c in calls)
    assert mine["stay.cost_usd"] == pytest.approx(sum(attributes(c.attributes)["stay.cost_usd"] for c in calls))
    assert not any(name.startswith(("gen_ai.usage.", "llm.token_count")) for name in mine)  # never counted twice


def test_each_lesson_of_the_curriculum_is_a_span_holding_its_calls(receiver: Receiver, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend="offline", progress=lambda _: None)
    assert result.complete
    spans = receiver.spans()
    _well_formed(spans)
    places = _places(result)
    wave = next(span for span in spans if span.name == "write_lesson")
    lessons = _lessons(spans, wave)
    assert list(lessons) == [place.id for place in places] and places  # in the curriculum's order
    assert len([span for span in spans if span.name.startswith("lesson ")]) == len(places)
    calls = [span for span in spans if _is_call(span)]
    for place in places:
        lesson = lessons[place.id]
        assert lesson.name == f"lesson {place.id}"
        mine = attributes(lesson.attributes)
        assert (mine["stay.module.id"], mine["stay.lesson.title"]) == (place.module.id, place.lesson.title)
        held = [call for call in calls if call.parent_span_id == lesson.span_id]
        assert sorted(attributes(c.attributes)["stay.artefact"] for c in held) == sorted(
            place.path(stage.output) for stage in LESSON_STAGES)
        _holds_its_calls(lesson, held)
    # the lessons' tokens are exactly what the run counted for the lesson stages, and
    # with the calls about no one lesson (design, plans, capstone), the run's usage
    usage = [result.usage_by_stage[stage.name] for stage in LESSON_STAGES]  # type: ignore[index]
    lesson_attrs = [attributes(span.attributes) for span in lessons.values()]
    assert sum(a["stay.usage.output_tokens"] for a in lesson_attrs) == sum(u.output_tokens for u in usage)
    assert sum(a["stay.usage.input_tokens"] for a in lesson_attrs) == sum(u.total_input_tokens for u in usage)
    outside = [attributes(c.attributes) for c in calls if c.parent_span_id not in {s.span_id for s in lessons.values()}]
    assert sum(a["stay.usage.output_tokens"] for a in lesson_attrs) + sum(
        a["gen_ai.usage.output_tokens"] for a in outside) == result.usage.output_tokens
    assert sum(a["stay.usage.input_tokens"] for a in lesson_attrs) + sum(
        a["gen_ai.usage.input_tokens"] for a in outside) == result.usage.total_input_tokens


def test_a_lessons_repairs_are_a_lesson_span_under_repair(receiver: Receiver, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    backend = RiggedBackend(defects={"banned-phrase": None})  # every lesson's content is asked again
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=backend, progress=lambda _: None)
    assert result.repair is not None
    regenerated = [path for round_ in result.repair.rounds for path in round_.regenerated]
    assert regenerated
    spans = receiver.spans()
    _well_formed(spans)
    by_path = {place.path(stage.output): place for place in _places(result) for stage in LESSON_STAGES}
    calls = [span for span in spans if _is_call(span)]
    wave = next(span for span in spans if span.name == "write_lesson")
    repair = next(span for span in spans if span.name == "repair")
    assert len(_lessons(spans, wave)) == len(by_path) // len(LESSON_STAGES)  # the wave's: every lesson, as before
    lessons = _lessons(spans, repair)
    assert sorted(lessons) == sorted({by_path[path].id for path in regenerated})
    for lesson_id, lesson in lessons.items():
        held = [call for call in calls if call.parent_span_id == lesson.span_id]
        assert sorted(attributes(c.attributes)["stay.artefact"] for c in held) == sorted(
            path for path in regenerated if by_path[path].id == lesson_id)
        _holds_its_calls(lesson, held)
    wave_calls = [c for c in calls if _node_of(spans, c) is wave]
    assert len(wave_calls) == len(by_path)  # a repair is not the wave's call, nor does it stretch the wave


def test_a_lesson_span_has_what_its_calls_were_asked_and_answered_thought_and_cost(
        receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith(("STAY_", "ANTHROPIC_", "OTEL_"))]:
        monkeypatch.delenv(name)
    otlp = OtlpTarget(receiver.url + "/v1/traces", capture_content=True)
    with FakeMessagesAPI(thinking=THOUGHT) as api:  # over HTTP: it thinks, bills and caches as the API does
        result = build_course(BRIEF, courses_dir=tmp_path, yes=True, progress=lambda _: None,
                              settings=Settings(api_key=KEY, base_url=api.url, otlp=otlp))
    assert result.complete and result.cost is not None
    spans = receiver.spans()
    _well_formed(spans)
    lessons = _lessons(spans, next(span for span in spans if span.name == "write_lesson"))
    calls = [span for span in spans if _is_call(span)]
    for place in _places(result):
        held = [c for c in calls if c.parent_span_id == lessons[place.id].span_id]
        quiz = next(attributes(c.attributes) for c in held if attributes(c.attributes)["stay.stage"] == "quiz")
        assert place.lesson.title in quiz["input.value"]  # what it was asked: this lesson
        (answer,) = json.loads(quiz["gen_ai.output.messages"])
        written = yaml.safe_load((result.course_dir / place.path("{lesson}.quiz.yaml")).read_text())
        assert json.loads(answer["parts"][0]["content"]) == written == json.loads(quiz["output.value"])
        _holds_its_calls(lessons[place.id], held)
    inside = {s.span_id for s in lessons.values()}
    lesson_attrs = [attributes(s.attributes) for s in lessons.values()]
    outside = [attributes(c.attributes) for c in calls if c.parent_span_id not in inside]
    assert sum(a["stay.cost_usd"] for a in lesson_attrs + outside) == pytest.approx(result.cost)
    assert min(a["stay.cost_usd"] for a in lesson_attrs) > 0
    # (this fake counts thinking in output_tokens without output_tokens_details: the unit test below sums it)
    assert sum(a["stay.usage.reasoning.output_tokens"] for a in lesson_attrs) + sum(
        a["gen_ai.usage.reasoning.output_tokens"] for a in outside) == result.usage.thinking_tokens
    assert sum(a["stay.usage.cache_read.input_tokens"] for a in lesson_attrs) + sum(
        a["gen_ai.usage.cache_read.input_tokens"] for a in outside) == result.usage.cache_read_input_tokens > 0


def test_a_refused_lesson_is_the_error_span_holding_the_refused_call(receiver: Receiver, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith(("STAY_", "ANTHROPIC_", "OTEL_"))]:
        monkeypatch.delenv(name)
    refused: list[dict[str, Any]] = []
    lock = threading.Lock()

    def refuse_one_quiz(body: dict[str, Any]) -> str | None:
        with lock:  # the first quiz asked, whichever lesson's it is
            if stage_of(body) != "quiz" or refused:
                return None
            refused.append(body)
            return "refusal"

    otlp = OtlpTarget(receiver.url + "/v1/traces")
    with FakeMessagesAPI(stop=refuse_one_quiz) as api, pytest.raises(RefusalError):
        build_course(BRIEF, courses_dir=tmp_path, yes=True, progress=lambda _: None,
                     settings=Settings(api_key=KEY, base_url=api.url, otlp=otlp))
    assert len(refused) == 1
    spans = receiver.spans()
    _well_formed(spans)
    errors = [span for span in spans if span.name.startswith("lesson ")
              and span.status.code == span.status.STATUS_CODE_ERROR]
    (lesson,) = errors  # the refused quiz's lesson, and only it
    assert attributes(lesson.attributes)["error.type"] == RefusalError.__name__
    held = [attributes(c.attributes) for c in spans if c.parent_span_id == lesson.span_id]
    quiz = next(a for a in held if a["stay.stage"] == "quiz")
    assert quiz["error.type"] == RefusalError.__name__
    assert quiz["stay.artefact"].endswith(f"/{attributes(lesson.attributes)['stay.lesson.id']}.quiz.yaml")


def test_a_lesson_with_a_failed_call_is_an_error_and_an_old_trace_has_no_lessons() -> None:
    content, quiz = RECORDS[1]["calls"]
    failed = [RECORDS[0], {**RECORDS[1], "calls": [
        {**content, "lesson": "m01-l01", "module": "m01", "error": "TruncationError", "cost_usd": 0.5,
         "thinking_tokens": 700},
        {**quiz, "lesson": "m01-l01", "module": "m01", "thinking_tokens": 300}]},
        {"type": "lesson", "id": "m01-l01", "module": "m01", "title": "Window functions"}]
    spans = build_spans(failed, end_ns=10**18)
    (lesson,) = [span for span in spans if span.name.startswith("lesson ")]
    calls = failed[1]["calls"]
    assert lesson.attributes["stay.usage.reasoning.output_tokens"] == sum(c["thinking_tokens"] for c in calls)
    assert lesson.attributes["stay.usage.output_tokens"] == sum(c["output_tokens"] for c in calls)
    assert lesson.attributes["error.type"] == "TruncationError" and lesson.status.status_code.name == "ERROR"
    assert lesson.attributes["stay.lesson.title"] == "Window functions"
    assert "stay.cost_usd" not in lesson.attributes  # one call unpriced: no part passed off as the whole
    assert not any(span.name.startswith("lesson ") for span in build_spans(RECORDS, end_ns=10**18))
