"""The Claude backend against canned Messages API responses, through the SDK's own
transport hook (the SDK is built on httpx2: respx would not see its traffic)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

import stay
from stay.artefacts import Brief
from stay.models import (
    MAX_TOKENS,
    AnthropicBackend,
    CachedBackend,
    ModelRequest,
    RequestCache,
    Usage,
    cost,
    model_for,
)
from stay.pipeline import build_course
from stay.stages import STAGES, Prompts
from tests.conftest import ROOT
from tests.models.fake_api import answer_for, message

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
Handler = Callable[[httpx2.Request], httpx2.Response]


def client(handler: Handler, max_retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url="http://testserver", max_retries=max_retries,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def recording(responses: list[httpx2.Response] | None = None) -> tuple[Handler, list[dict[str, Any]]]:
    """A handler that records every body and answers from the fixtures (or the given list)."""
    seen: list[dict[str, Any]] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if "Stage:" not in json.dumps(body["system"]):  # the input screen, not a stage
            return httpx2.Response(200, json=message({"flagged": False, "reason": "fine"}))
        seen.append(body)
        if responses:
            return responses.pop(0)
        return httpx2.Response(200, json=message(answer_for(body), model=body["model"]))

    return handle, seen


def audience_request() -> ModelRequest:
    return STAGES["audience"].request(Brief.from_yaml(HTTP), Prompts.load())


def quiet(_line: str) -> None:
    pass


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STAY_MODEL", "STAY_MODEL_PLANNING", "STAY_MODEL_WRITING", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")


def test_every_request_has_the_role_model_schema_cache_prefix_and_no_sampling(tmp_path: Path) -> None:
    handle, seen = recording()
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=AnthropicBackend(client(handle)),
                          progress=quiet)
    assert result.complete and result.validation is not None and not result.validation.defects
    assert len(seen) == result.calls == 25
    stages = {"analysis": ["audience"], "planning": ["curriculum", "outcomes", "assessment", "plan",
                                                      "capstone"], "writing": ["content", "exercises", "quiz"]}
    for body in seen:
        assert body["max_tokens"] == MAX_TOKENS == 16_000
        assert not {"temperature", "top_p", "top_k", "tool_choice", "tools"} & set(body)
        schema = body["output_config"]["format"]
        assert schema["type"] == "json_schema" and schema["schema"]["type"] == "object"
        assert schema["schema"]["additionalProperties"] is False  # strict, by the SDK's transform
        system = body["system"]
        assert [bool(block.get("cache_control")) for block in system] == [False, True]
        assert system[-1]["cache_control"] == {"type": "ephemeral"}
        assert system[-1]["text"].startswith("<reference name=")
    by_model: dict[str, set[str]] = {}
    from tests.models.fake_api import stage_of

    for body in seen:
        by_model.setdefault(body["model"], set()).add(stage_of(body))
    assert by_model == {"claude-sonnet-5-5": {"audience", *stages["writing"]},
                        "claude-opus-5-5": set(stages["planning"])}


def test_the_wave_shares_one_cached_prefix_per_stage(tmp_path: Path) -> None:
    handle, seen = recording()
    build_course(HTTP, courses_dir=tmp_path, yes=True, backend=AnthropicBackend(client(handle)),
                 progress=quiet)
    from tests.models.fake_api import stage_of

    content = [b for b in seen if stage_of(b) == "content"]
    assert len(content) == 6
    prefixes = {json.dumps([b["system"], b["messages"][0]["content"][0]]) for b in content}
    assert len(prefixes) == 1  # system prompt and the shared audience block: one prefix for all
    first = content[0]["messages"][0]["content"]
    assert first[0]["cache_control"] == {"type": "ephemeral"} and "## audience" in first[0]["text"]
    assert "cache_control" not in first[1] and "## plan" in first[1]["text"]


def test_model_overrides_per_role_and_for_all(monkeypatch: pytest.MonkeyPatch) -> None:
    assert model_for("planning") == "claude-opus-5-5"
    monkeypatch.setenv("STAY_MODEL", "claude-sonnet-5")
    assert model_for("planning") == model_for("writing") == "claude-sonnet-5"
    monkeypatch.setenv("STAY_MODEL_WRITING", "claude-haiku-4-5")
    assert (model_for("writing"), model_for("analysis")) == ("claude-haiku-4-5", "claude-sonnet-5")


def test_an_answer_is_parsed_with_its_usage() -> None:
    handle, _seen = recording([httpx2.Response(200, json=message(
        {"learners": "x", "prior_knowledge": [], "goals": ["g"], "time_budget_minutes": 60},
        usage={"input_tokens": 100, "output_tokens": 50, "cache_creation_input_tokens": 2000,
               "cache_read_input_tokens": 0}))])
    answer = AnthropicBackend(client(handle)).complete(audience_request(), "claude-sonnet-5-5")
    assert answer.data["goals"] == ["g"] and answer.model == "claude-sonnet-5-5"
    assert answer.usage == Usage(input_tokens=100, output_tokens=50, cache_creation_input_tokens=2000)


def test_truncation_names_the_stage_the_file_and_the_limit_never_a_schema_error() -> None:
    handle, _seen = recording([httpx2.Response(200, json=message('{"learners": "cut off', stop_reason="max_tokens"))])
    with pytest.raises(stay.errors.TruncationError) as caught:
        AnthropicBackend(client(handle)).complete(audience_request(), "claude-sonnet-5-5")
    text = str(caught.value)
    assert "stage audience (audience.yaml)" in text and "max_tokens=16000" in text
    assert "schema" not in text


def test_a_refusal_is_its_own_error_with_the_stop_details() -> None:
    handle, _seen = recording([httpx2.Response(200, json=message(
        "", stop_reason="refusal",
        stop_details={"type": "refusal", "category": "general_harms", "explanation": "not this topic"}))])
    with pytest.raises(stay.errors.RefusalError, match=r"refused to answer \(general_harms: not this topic\)"):
        AnthropicBackend(client(handle)).complete(audience_request(), "claude-sonnet-5-5")


def test_529_is_retried_then_succeeds() -> None:
    overloaded = httpx2.Response(529, json={"type": "error", "error": {"type": "overloaded_error",
                                                                        "message": "Overloaded"}},
                                 headers={"retry-after-ms": "1"})
    good = httpx2.Response(200, json=message(
        {"learners": "x", "prior_knowledge": [], "goals": ["g"], "time_budget_minutes": 60}))
    handle, seen = recording([overloaded, good])
    answer = AnthropicBackend(client(handle, max_retries=2)).complete(audience_request(), "m")
    assert len(seen) == 2 and answer.data["learners"] == "x"


@pytest.mark.parametrize("status, fragment", [(429, "rate limited (429) after 2 retries"),
                                              (529, "overloaded (529) after 2 retries"),
                                              (401, "ANTHROPIC_API_KEY was rejected (401)")])
def test_exhausted_retries_end_in_one_line(status: int, fragment: str) -> None:
    kind = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}[status]
    responses = [httpx2.Response(status, json={"type": "error", "error": {"type": kind, "message": "no"}},
                                 headers={"retry-after-ms": "1"}) for _ in range(3)]
    handle, seen = recording(responses)
    with pytest.raises(stay.errors.ModelError) as caught:
        AnthropicBackend(client(handle, max_retries=2)).complete(audience_request(), "m")
    assert fragment in str(caught.value) and "\n" not in str(caught.value)
    assert len(seen) == (1 if status == 401 else 3)


def test_an_answer_that_misfits_its_schema_is_asked_again_once_with_the_errors(tmp_path: Path) -> None:
    bad = httpx2.Response(200, json=message({"learners": "x", "prior_knowledge": [], "goals": [],
                                             "time_budget_minutes": 60}))
    handle, seen = recording([bad])
    build_course(HTTP, courses_dir=tmp_path, backend=AnthropicBackend(client(handle)), progress=quiet)
    assert "schema_errors" not in seen[0]["messages"][0]["content"]
    retry = seen[1]["messages"][0]["content"]
    assert "## schema_errors" in retry and "field 'goals'" in retry


def test_a_second_misfit_is_reported_with_stage_and_field(tmp_path: Path) -> None:
    bad = {"learners": "x", "prior_knowledge": [], "goals": [], "time_budget_minutes": 60}
    handle, _seen = recording([httpx2.Response(200, json=message(bad)) for _ in range(2)])
    with pytest.raises(stay.AnswerError, match=r"audience\.yaml \(stage audience\): field 'goals'"):
        build_course(HTTP, courses_dir=tmp_path, backend=AnthropicBackend(client(handle)), progress=quiet)
    assert not (tmp_path / "how-http-requests-travel" / "audience.yaml").exists()


def test_cost_arithmetic_from_the_one_price_table() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_creation_input_tokens=1_000_000,
                  cache_read_input_tokens=1_000_000)
    assert cost("claude-sonnet-5-5", usage) == pytest.approx(2 + 10 + 2.5 + 0.2)
    assert cost("claude-opus-5-5", usage) == pytest.approx(4 + 20 + 5 + 0.4)
    assert cost("a-model-with-no-price", usage) is None


def test_a_build_prices_every_call_and_stage(tmp_path: Path) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 500, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 4000}

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if "Stage:" not in json.dumps(body["system"]):
            return httpx2.Response(200, json=message({"flagged": False, "reason": "fine"}))
        return httpx2.Response(200, json=message(answer_for(body), model=body["model"], usage=usage))

    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=AnthropicBackend(client(handle)),
                          progress=quiet)
    per_call = {"claude-sonnet-5-5": (1000 * 2 + 500 * 10 + 4000 * 0.2) / 1e6,
                "claude-opus-5-5": (1000 * 4 + 500 * 20 + 4000 * 0.4) / 1e6}
    sonnet_calls, opus_calls = 1 + 18, 1 + 1 + 1 + 2 + 1  # audience + wave; design, plans, capstone
    assert result.cost == pytest.approx(sonnet_calls * per_call["claude-sonnet-5-5"]
                                        + opus_calls * per_call["claude-opus-5-5"])
    assert result.usage_by_stage is not None and result.usage_by_stage["content"].input_tokens == 6000
    trace = next((result.course_dir / ".runs" / "traces").glob("*.jsonl")).read_text()
    assert '"cache_read_input_tokens": 4000' in trace


def test_replay_makes_no_http_call_and_a_miss_says_what_changed(tmp_path: Path) -> None:
    handle, seen = recording()
    first = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=AnthropicBackend(client(handle)),
                         progress=quiet)
    assert len(seen) == 25 and len(list((first.course_dir / ".runs" / "cache").glob("*.json"))) == 25
    for path in first.course_dir.rglob("*"):
        if path.is_file() and ".runs" not in path.parts and ".state" not in path.parts:
            path.unlink()

    def no_network(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError("a replayed run made an HTTP call")

    replayed = build_course(HTTP, courses_dir=tmp_path, yes=True, replay=True,
                            backend=AnthropicBackend(client(no_network)), progress=quiet)
    assert replayed.complete and replayed.cost == 0 and replayed.calls == 25

    prompts = Prompts.load()
    changed = Prompts(prompts.directory, {**prompts.templates, "content": prompts.templates["content"] + "\nMore."},
                      prompts.references)
    for path in first.course_dir.glob("modules/*/*.md"):
        path.unlink()
    with pytest.raises(stay.errors.ReplayMiss, match=r"stage content .*: the stage instructions \(prompt template\)"):
        build_course(HTTP, courses_dir=tmp_path, yes=True, replay=True, prompts=changed,
                     backend=AnthropicBackend(client(no_network)), progress=quiet)


def test_the_request_cache_explains_a_changed_input(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path)
    request = audience_request()
    handle, _seen = recording()
    backend = CachedBackend(AnthropicBackend(client(handle)), cache)
    backend.complete(request, "claude-sonnet-5-5")
    other = STAGES["audience"].request(Brief.from_yaml(HTTP).model_copy(update={"title": "Other"}),
                                       Prompts.load())
    assert cache.explain_miss(other, "claude-sonnet-5-5").endswith("inputs: brief since the nearest cached request")
    assert "model (claude-sonnet-5-5 -> claude-opus-5-5)" in cache.explain_miss(request, "claude-opus-5-5")


def test_the_async_client_speaks_the_same_protocol() -> None:
    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        return httpx2.Response(200, json=message(answer_for(body), model=body["model"]))

    async_client = anthropic.AsyncAnthropic(api_key="test", base_url="http://testserver", max_retries=0,
                                            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handle)))
    backend = AnthropicBackend(client(handle), async_client)
    answer = asyncio.run(backend.acomplete(audience_request(), "claude-sonnet-5-5"))
    assert answer.data["time_budget_minutes"] == 180


@pytest.mark.api
@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY")
def test_live_smoke_the_audience_stage_answers() -> None:
    answer = AnthropicBackend().complete(audience_request(), model_for("analysis"))
    assert STAGES["audience"].artefact(answer).time_budget_minutes > 0
