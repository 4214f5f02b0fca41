"""The Claude backend against canned Messages API responses, through the SDK's own
transport hook: request shape per role, streaming, truncation, refusal, thinking."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import anthropic
import httpx2
import pytest

import stay
from stay.models import (
    MAX_TOKENS,
    THINKING,
    AnthropicBackend,
    Usage,
    request_params,
)
from stay.models._anthropic import SDK_NONSTREAMING_TOKENS, streams
from stay.pipeline import build_course
from stay.stages import COMMON_REFERENCES, REGISTRY, STAGES, Prompts
from tests.expected import curriculum_of, total_calls
from tests.models.fake_api import answer_for, message, reply, sse, stage_of
from tests.models.helpers import HTTP, audience_request, backend, client, quiet, recording

LIVE_KEY = os.environ.get("ANTHROPIC_API_KEY")  # read before the fixture below hides it
AUDIENCE = {"learners": "x", "prior_knowledge": [], "goals": ["g"], "time_budget_minutes": 60}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STAY_MODEL", "STAY_MODEL_PLANNING", "STAY_MODEL_WRITING", "STAY_MODEL_ANALYSIS",
                 "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")


def test_every_request_has_its_roles_model_thinking_schema_and_cache_layout(tmp_path: Path) -> None:
    handle, seen = recording()
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend(handle), progress=quiet)
    assert result.complete and result.validation is not None and not result.validation.defects
    stage_calls = total_calls(curriculum_of(result.course_dir), REGISTRY)  # a model build: a review per lesson
    assert len(seen) == stage_calls and result.calls == stage_calls + 1  # and the input screen
    single = {stage.name for stage in STAGES.values() if stage.scope == "course"}
    for body in seen:
        stage = stage_of(body)
        role = STAGES[stage].role
        assert body["model"] == {"planning": "claude-opus-5-5"}.get(role, "claude-sonnet-5-5")
        assert body["max_tokens"] == MAX_TOKENS + THINKING[role].room  # thinking shares max_tokens
        assert body["thinking"] == {"type": "adaptive"}
        assert body["output_config"]["effort"] == THINKING[role].effort
        assert body["stream"] is True  # longer than the 300 s timeout could wait for in one piece
        assert not {"temperature", "top_p", "top_k", "tool_choice", "tools"} & set(body)
        schema = body["output_config"]["format"]
        assert schema["type"] == "json_schema" and schema["schema"]["additionalProperties"] is False
        marks = [bool(block.get("cache_control")) for block in body["system"]]
        # the common preamble and shared references: one prefix across stages; the stage's own
        # references are cached only when later calls of the stage will read them
        common = [name for name in COMMON_REFERENCES if name in Prompts.load().reference_set(STAGES[stage])]
        own = set(Prompts.load().reference_set(STAGES[stage])) - set(COMMON_REFERENCES)
        if common:  # a stage with no references of its own (the review) caches at its shared inputs
            assert marks == [False, True, False, stage not in single][:4 if own else 3], stage
            assert body["system"][1]["text"].startswith(f'<reference name="{common[0]}">')
        else:  # no reference shared with every stage: the stage's own prefix only
            assert marks == [False, False, True], stage


def test_the_roles_are_planning_opus_and_the_rest_sonnet_and_can_be_overridden(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from stay.settings import Settings

    defaults = Settings.from_env({})
    assert defaults.model("planning") == "claude-opus-5-5" and defaults.model("writing") == "claude-sonnet-5-5"
    every = Settings.from_env({"STAY_MODEL": "claude-sonnet-5"})
    assert every.model("planning") == every.model("writing") == "claude-sonnet-5"
    one = Settings.from_env({"STAY_MODEL": "claude-sonnet-5", "STAY_MODEL_WRITING": "claude-haiku-4-5"})
    assert (one.model("writing"), one.model("analysis")) == ("claude-haiku-4-5", "claude-sonnet-5")


def test_a_model_without_adaptive_thinking_gets_neither_thinking_nor_effort() -> None:
    params = request_params(audience_request(), "claude-haiku-4-5", THINKING["analysis"])
    assert "thinking" not in params and "effort" not in params["output_config"]
    assert params["max_tokens"] == MAX_TOKENS  # no room reserved for thinking it will not do


def test_the_wave_shares_one_cached_prefix_per_stage(tmp_path: Path) -> None:
    handle, seen = recording()
    build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend(handle), progress=quiet)
    content = [b for b in seen if stage_of(b) == "content"]
    assert len(content) == 6
    assert len({json.dumps([b["system"], b["messages"][0]["content"][0]]) for b in content}) == 1
    first = content[0]["messages"][0]["content"]
    assert first[0]["cache_control"] == {"type": "ephemeral"} and "## audience" in first[0]["text"]
    assert "cache_control" not in first[1] and "## plan" in first[1]["text"]
    opus = [b for b in seen if b["model"] == "claude-opus-5-5"]
    assert len({json.dumps(b["system"][:2]) for b in opus}) == 1  # every planning call: one first prefix


def test_an_answer_is_parsed_with_its_usage_and_thinking_tokens() -> None:
    usage = {"input_tokens": 100, "output_tokens": 50, "cache_creation_input_tokens": 2000,
             "cache_read_input_tokens": 0, "output_tokens_details": {"thinking_tokens": 30}}
    handle, _seen = recording([message(AUDIENCE, usage=usage, thinking="Reading the brief.")])
    answer = backend(handle).complete(audience_request(), "claude-sonnet-5-5")
    assert answer.data["goals"] == ["g"] and answer.model == "claude-sonnet-5-5"
    assert answer.usage == Usage(input_tokens=100, output_tokens=50, cache_creation_input_tokens=2000,
                                 thinking_tokens=30)


def test_a_streamed_request_with_max_tokens_32000_parses() -> None:
    """Planning asks 16,000 for the answer and 16,000 for thinking: past the SDK's
    non-streaming limit, so it streams (``messages.stream``, then the final message)."""
    plan = STAGES["curriculum"]
    handle, seen = recording([message({"modules": []}, model="claude-opus-5-5", thinking="Outline first.",
                                      usage={"input_tokens": 9, "output_tokens": 900,
                                             "output_tokens_details": {"thinking_tokens": 700}})])
    request = audience_request().model_copy(update={"role": plan.role, "stage": "curriculum"})
    answer = backend(handle).complete(request, "claude-opus-5-5")
    assert seen[0]["max_tokens"] == 32_000 > SDK_NONSTREAMING_TOKENS and seen[0]["stream"] is True
    assert answer.data == {"modules": []} and answer.usage.thinking_tokens == 700


def test_max_tokens_may_be_raised_past_the_sdk_limit_and_such_requests_stream() -> None:
    body = message(AUDIENCE)
    handle, seen = recording([body])
    answer = backend(handle, answer_tokens=64_000).complete(audience_request(), "claude-sonnet-5-5")
    assert seen[0]["max_tokens"] == 64_000 + THINKING["analysis"].room and seen[0]["stream"] is True
    assert answer.data == AUDIENCE


def test_a_short_request_does_not_stream_and_the_rule_follows_the_timeout() -> None:
    handle, seen = recording([message(AUDIENCE)])
    backend(handle).complete(audience_request().model_copy(update={"max_tokens": 1_000}), "claude-sonnet-5-5")
    assert "stream" not in seen[0] and seen[0]["max_tokens"] == 9_000
    assert streams(21_334, timeout=3_600) and not streams(21_333, timeout=3_600)  # the SDK's own limit
    assert streams(11_000, timeout=300) and not streams(10_000, timeout=300)  # what 300 s can wait for


def test_truncation_names_the_stage_the_file_and_the_budget_never_a_schema_error() -> None:
    cut = message('{"learners": "cut off', stop_reason="max_tokens",
                  usage={"input_tokens": 5, "output_tokens": 24_000, "output_tokens_details": {"thinking_tokens": 9_000}})
    handle, seen = recording([cut, cut])  # cut off again when asked once more, with twice the room
    with pytest.raises(stay.errors.TruncationError) as caught:
        backend(handle).complete(audience_request(), "claude-sonnet-5-5")
    text = str(caught.value)
    assert [body["max_tokens"] for body in seen] == [24_000, 40_000]
    assert "stage audience (audience.yaml)" in text and "max_tokens=40000 (32000 for the answer, 8000 for " \
        "thinking; 9000 went to thinking)" in text and "STAY_ANSWER_TOKENS=64000" in text
    assert "schema" not in text


def test_a_full_context_window_is_reported_as_such_not_as_max_tokens() -> None:
    handle, _seen = recording([message('{"learners": "cut', stop_reason="model_context_window_exceeded")])
    with pytest.raises(stay.errors.TruncationError) as caught:
        backend(handle).complete(audience_request(), "claude-sonnet-5-5")
    text = str(caught.value)
    assert "filled claude-sonnet-5-5's context window" in text and "max_tokens" not in text


def test_a_refusal_is_its_own_error_with_the_stop_details() -> None:
    handle, _seen = recording([message("", stop_reason="refusal", stop_details={
        "type": "refusal", "category": "general_harms", "explanation": "not this topic"})])
    with pytest.raises(stay.errors.RefusalError, match=r"refused to answer \(general_harms: not this topic\)"):
        backend(handle).complete(audience_request(), "claude-sonnet-5-5")


def test_an_answer_that_misfits_its_schema_is_asked_again_once_with_the_errors(tmp_path: Path) -> None:
    handle, seen = recording([message({"learners": "x", "prior_knowledge": [], "goals": [],
                                       "time_budget_minutes": 60})])
    build_course(HTTP, courses_dir=tmp_path, backend=backend(handle), progress=quiet)
    assert "schema_errors" not in json.dumps(seen[0]["messages"])
    retry = seen[1]["messages"][0]["content"]
    assert "## schema_errors" in retry and "field 'goals'" in retry


def test_a_second_misfit_is_reported_with_stage_and_field(tmp_path: Path) -> None:
    bad = {"learners": "x", "prior_knowledge": [], "goals": [], "time_budget_minutes": 60}
    handle, _seen = recording([message(bad), message(bad)])
    with pytest.raises(stay.AnswerError, match=r"audience\.yaml \(stage audience\): field 'goals'"):
        build_course(HTTP, courses_dir=tmp_path, backend=backend(handle), progress=quiet)
    assert not (tmp_path / "how-http-requests-travel" / "audience.yaml").exists()


def test_the_async_client_speaks_the_same_protocol() -> None:
    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        return reply(body, message(answer_for(body), model=body["model"]))

    async_client = anthropic.AsyncAnthropic(api_key="test", base_url="http://testserver", max_retries=0,
                                            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handle)))
    answer = asyncio.run(AnthropicBackend(client(handle), async_client).acomplete(audience_request(),
                                                                                   "claude-sonnet-5-5"))
    assert answer.data["time_budget_minutes"] == 180


def test_the_sse_fixture_is_what_the_sdk_reads() -> None:
    body = message(AUDIENCE, thinking="t")
    raw = sse(body, chunk=5)
    assert raw.count(b"event: content_block_delta") > 10  # the answer arrives in pieces
    handle, _seen = recording([body])
    assert backend(handle).complete(audience_request(), "m").data == AUDIENCE


@pytest.mark.api
@pytest.mark.skipif(not LIVE_KEY, reason="needs ANTHROPIC_API_KEY")
def test_live_smoke_the_audience_stage_answers() -> None:
    answer = AnthropicBackend(api_key=LIVE_KEY).complete(audience_request(), "claude-sonnet-5-5")
    assert STAGES["audience"].artefact(answer).time_budget_minutes > 0
