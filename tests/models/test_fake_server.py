"""stay, end to end over real HTTP, against a fake Messages API on 127.0.0.1 whose prompt
cache bills like the real one: a prefix is readable only once its writer's response has
begun, keys are scoped by model, schema and effort, every breakpoint is checked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anthropic
import pytest

from stay.artefacts import (
    LessonContent,
    LessonPlan,
    LessonReview,
    dump,
)
from stay.models import AnthropicBackend, min_cacheable_tokens
from stay.pipeline import build_course
from stay.settings import DEFAULT_MODELS, Settings
from stay.stages import REGISTRY, STAGES
from tests.conftest import run_stay
from tests.expected import curriculum_of, total_calls
from tests.models.fake_api import WAVE, CacheAccounting, FakeMessagesAPI, TooManyBreakpoints, inputs_of, stage_of
from tests.models.helpers import HTTP, SQL

LATENCY = 0.06
"""Seconds the fake takes to answer, so that calls in flight together really overlap."""

Served = tuple[FakeMessagesAPI, Path, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Served:
    """``stay build`` of the 12-lesson brief over HTTP, at the default caps."""
    courses = tmp_path_factory.mktemp("courses")
    with FakeMessagesAPI(latency=LATENCY) as api, pytest.MonkeyPatch.context() as patch:
        for name in [k for k in os.environ if k.startswith(("STAY_MODEL", "STAY_WAVE", "STAY_REPAIR"))]:
            patch.delenv(name)
        done = run_stay("build", str(SQL), "--yes", "--backend", "anthropic", "--courses-dir", str(courses),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test-key-not-real"})
    return api, courses / "sql-window-functions", done


def test_the_build_completes_over_http(served: Served) -> None:
    api, _course, done = served
    assert done.returncode == 0, done.stderr
    assert "backend: anthropic (analysis claude-sonnet-5-5, planning claude-opus-5-5" in done.stderr
    assert "validation: 0 FAIL, 0 WARN" in done.stdout
    assert len(api.requests) == total_calls(curriculum_of(_course), REGISTRY) and len(api.screens) == 1


def test_every_request_streams_with_its_schema_and_at_most_four_breakpoints(served: Served) -> None:
    api, _course, _done = served
    for body in api.requests:
        assert body["output_config"]["format"]["type"] == "json_schema"
        assert body["stream"] is True and body["thinking"] == {"type": "adaptive"}
        marks = sum(bool(b.get("cache_control")) for b in body["system"]) + sum(
            bool(b.get("cache_control")) for b in body["messages"][0]["content"] if isinstance(b, dict))
        assert 1 <= marks <= 4


def test_the_files_written_are_the_servers_answers(served: Served) -> None:
    api, course, _done = served
    single = {stage.name: (stage.output, stage.kind) for stage in REGISTRY if stage.scope == "course"}
    checked = 0
    for body, answer in zip(api.requests, api.answers, strict=True):
        stage = stage_of(body)
        if stage in single:
            path, model = single[stage]
            made = model.model_validate(answer)
            assert (course / path).read_text() == dump(made), path
            for derived, text in made.derived().items():  # example.yaml's data files, byte for byte
                assert (course / derived).read_text() == dump(text), derived
        elif stage == "plan":
            for plan in answer["plans"]:
                (found,) = course.glob(f"modules/*/{plan['lesson']}.plan.yaml")
                # each plan file carries the course's running example, as the request gave it
                whole = {**plan, "running_example": inputs_of(body)["example"]}
                assert found.read_text() == dump(LessonPlan.model_validate(whole))
        elif stage == "content":
            plan = inputs_of(body)["plan"]
            (found,) = course.glob(f"modules/*/{plan['lesson']}.md")
            assert found.read_text() == dump(LessonContent(lesson=plan["lesson"], title=plan["title"],
                                                           body=answer["body"]))
        elif stage == "review":  # what it found (none: the fake answers as offline), with the lesson's id
            lesson = inputs_of(body)["plan"]["lesson"]
            (found,) = course.glob(f"modules/*/{STAGES[stage].output.format(lesson=lesson)}")
            assert found.read_text() == dump(LessonReview(lesson=lesson, **answer))
        else:  # a lesson's file whose answer is the artefact (exercises, quiz)
            declared = STAGES[stage]
            (found,) = course.glob(f"modules/*/{declared.output.format(lesson=answer['lesson'])}")
            assert found.read_text() == dump(declared.kind.model_validate(answer))
        checked += 1
    assert checked == total_calls(curriculum_of(course), REGISTRY)


def test_at_least_70_percent_of_generation_input_is_read_from_the_cache(served: Served) -> None:
    api, _course, done = served
    accounting = api.accounting
    print(f"cache reads: {accounting.cache_read_input_tokens} of "
          f"{accounting.input_tokens + accounting.cache_creation_input_tokens + accounting.cache_read_input_tokens}"
          f" generation input tokens ({accounting.read_share:.1%}); cache writes "
          f"{accounting.cache_creation_input_tokens}")
    assert accounting.read_share >= 0.70
    assert f"{accounting.cache_read_input_tokens} cache-read" in done.stdout  # stay counts what was billed


def _build(tmp_path: Path, *, warm: bool, min_tokens: int | None = None, latency: float = LATENCY,
           brief: Path = SQL, gather: int = 0, hold_for: int = 0, held: frozenset[str] = WAVE,
           ) -> FakeMessagesAPI:
    """The same build in process, with or without the prefix gate (the fake held as asked)."""
    with FakeMessagesAPI(CacheAccounting(min_tokens=min_tokens), latency=latency, gather=gather,
                         hold_for=hold_for, held=held) as api:
        client = anthropic.Anthropic(api_key="test-key", base_url=api.url)
        result = build_course(brief, courses_dir=tmp_path, yes=True,
                              backend=AnthropicBackend(client, warm_prefixes=warm), progress=lambda _line: None)
        assert result.complete
        return api


def _most_in_flight() -> int:
    """The most wave calls the default caps allow at once (every lesson stage of each
    lesson in flight, and the course's wave stages beside them), from the registry."""
    defaults = Settings()
    lesson = sum(stage.phase == "wave" and stage.scope == "lesson" for stage in REGISTRY)
    course = sum(stage.phase == "wave" and stage.scope == "course" for stage in REGISTRY)
    return min(defaults.model_concurrency, lesson * defaults.wave_concurrency + course)


def test_the_prefix_gate_is_what_keeps_the_wave_from_paying_one_write_per_call(
        served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STAY_MODEL", "STAY_WAVE_CONCURRENCY", "STAY_MODEL_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)
    gated = served[0].accounting
    # Without the gate, calls that overlap each pay a write: the fake holds the wave's first
    # calls until the most the caps allow are in flight, so they overlap however loaded the
    # machine is (and its latency keeps the later ones overlapping too)
    ungated = _build(tmp_path / "ungated", warm=False, latency=0.4, gather=_most_in_flight()).accounting
    print(f"read share: {gated.read_share:.1%} gated, {ungated.read_share:.1%} without the gate")
    assert gated.read_share >= 0.70
    assert ungated.cache_creation_input_tokens > gated.cache_creation_input_tokens * 1.4
    wave = {"content", "exercises", "quiz"}
    for stage in wave:  # with the gate, each wave stage writes its own prefix once
        writes = [b.usage["cache_creation_input_tokens"] for b in gated.billed
                  if b.stage == stage and b.usage["cache_creation_input_tokens"]]
        assert len(writes) == 1, (stage, writes)


def test_the_share_holds_with_a_2048_token_cache_minimum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STAY_MODEL", "STAY_WAVE_CONCURRENCY", "STAY_MODEL_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)
    stricter = _build(tmp_path / "stricter", warm=True, min_tokens=2_048).accounting
    print(f"read share {stricter.read_share:.1%} with a 2,048-token cache minimum")
    assert stricter.read_share >= 0.70


def test_the_gate_lets_a_wave_stages_calls_go_once_the_first_response_begins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STAY_MODEL", "STAY_WAVE_CONCURRENCY", "STAY_MODEL_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)
    # each stage's first response holds after its first event until a second call of its
    # stage arrives (as a model still answering): not a race with a loaded machine's clock.
    # A gate that let waiters go only at the end would have them arrive after it (the hold
    # gives up): then no second call arrives while the first is answering.
    per_lesson = frozenset(stage.name for stage in REGISTRY if stage.phase == "wave" and stage.scope == "lesson")
    api = _build(tmp_path, warm=True, brief=HTTP, hold_for=1, held=per_lesson)  # one capstone: no second
    for stage in per_lesson:
        answering = [mid for name, mid in api.arrivals if name == stage]
        # the second call was sent while the first one was still answering, and read its prefix
        assert len(answering) > 1 and answering[:2] == [0, 1], (stage, answering)
        reads = [b.usage["cache_read_input_tokens"] for b in api.accounting.billed if b.stage == stage]
        assert reads[0] == 0 and all(reads[1:]), (stage, reads)


# -- the fake's own rule, checked directly -----------------------------------------------


def _body(model: str, *blocks: tuple[str, bool]) -> dict[str, Any]:
    system = [{"type": "text", "text": text, **({"cache_control": {"type": "ephemeral"}} if mark else {})}
              for text, mark in blocks]
    return {"model": model, "system": system, "messages": [{"role": "user", "content": "question"}]}


BIG, OTHER = "a" * 8_000, "b" * 8_000  # 2,000 tokens each at four characters a token


def test_the_fake_charges_every_request_in_flight_for_the_write() -> None:
    cache = CacheAccounting()
    body = _body("m", (BIG, True))
    first, writes = cache.bill(body, "x")
    second, _ = cache.bill(body, "x")  # arrives before the first one's response
    assert first["cache_creation_input_tokens"] == second["cache_creation_input_tokens"] == 2_000
    cache.answered(writes)
    third, _ = cache.bill(body, "x")
    assert third["cache_read_input_tokens"] == 2_000 and third["cache_creation_input_tokens"] == 0


def test_the_fake_scopes_keys_by_model_and_reads_the_longest_cached_breakpoint() -> None:
    cache = CacheAccounting()
    _usage, writes = cache.bill(_body("m", (BIG, True), (OTHER, True)), "x")
    cache.answered(writes)
    assert cache.bill(_body("n", (BIG, True), (OTHER, True)), "x")[0]["cache_read_input_tokens"] == 0
    longer, _ = cache.bill(_body("m", (BIG, True), (OTHER, True)), "x")
    assert longer["cache_read_input_tokens"] == 4_000
    shorter, _ = cache.bill(_body("m", (BIG, True), ("c" * 8_000, True)), "x")  # the first breakpoint only
    assert shorter["cache_read_input_tokens"] == 2_000 and shorter["cache_creation_input_tokens"] == 2_000


def test_the_fake_caches_nothing_below_the_minimum_and_forgets_after_five_minutes() -> None:
    now = [0.0]
    cache = CacheAccounting(clock=lambda: now[0])
    small, writes = cache.bill(_body("m", ("s" * 2_000, True)), "x")
    assert small["cache_creation_input_tokens"] == 0 and writes == []
    _usage, writes = cache.bill(_body("m", (BIG, True)), "x")
    cache.answered(writes)
    now[0] = 299.0
    assert cache.bill(_body("m", (BIG, True)), "x")[0]["cache_read_input_tokens"] == 2_000  # and refreshed
    now[0] = 598.0
    assert cache.bill(_body("m", (BIG, True)), "x")[0]["cache_read_input_tokens"] == 2_000
    now[0] = 900.0
    assert cache.bill(_body("m", (BIG, True)), "x")[0]["cache_read_input_tokens"] == 0


def test_the_fake_refuses_more_than_four_breakpoints() -> None:
    with pytest.raises(TooManyBreakpoints):
        CacheAccounting().bill(_body("m", *[(BIG, True)] * 5), "x")


def test_the_fake_keys_its_cache_on_the_schema_and_the_effort_as_the_api_does() -> None:
    cache = CacheAccounting()
    body = {**_body("m", (BIG, True)), "thinking": {"type": "adaptive"},
            "output_config": {"effort": "medium", "format": {"type": "json_schema", "schema": {"title": "A"}}}}
    _usage, writes = cache.bill(body, "x")
    cache.answered(writes)
    assert cache.bill(body, "x")[0]["cache_read_input_tokens"] == 2_000
    for changed in ({"effort": "low", "format": body["output_config"]["format"]},
                    {"effort": "medium", "format": {"type": "json_schema", "schema": {"title": "B"}}}):
        usage, _ = cache.bill({**body, "output_config": changed}, "x")
        assert usage["cache_read_input_tokens"] == 0 and usage["cache_creation_input_tokens"] == 2_000, changed


def test_the_fake_caches_from_each_models_published_minimum() -> None:
    for model in DEFAULT_MODELS.values():
        floor = min_cacheable_tokens(model)
        cache = CacheAccounting()
        assert cache.bill(_body(model, ("x" * floor * 4, True)), "x")[1]
        assert not cache.bill(_body(model, ("x" * (floor - 1) * 4, True)), "x")[1]
