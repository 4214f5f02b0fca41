"""The OpenAI-compatible backend over real HTTP against ``fake_openai``: the strict schema
transform, the request's layout, usage, and each failure mode's error (the Claude
backend's: same classes, so the same exit codes)."""

from __future__ import annotations

import email.utils
from pathlib import Path
from typing import Any

import pytest

from stay.errors import AnswerError, ModelError, ModelUnavailable, RefusalError, TruncationError, UsageError
from stay.models import CachedBackend, RequestCache, _openai
from stay.models._openai import OpenAIBackend, make, request_params, strict_schema, unnull
from stay.models._protocol import screen_request
from stay.pipeline import build_course
from stay.requests import ModelAnswer, ModelRequest
from stay.settings import Settings
from stay.stages import REGISTRY, answer_schema, offline_answer
from tests.models.fake_api import inputs_of, stage_of
from tests.models.fake_openai import FakeOpenAI, RateLimited, Status, _as_messages_body, filled, schema_problems
from tests.models.helpers import HTTP, audience_request
from tests.wire_schema import check, fit

NOW = 1_780_000_000.0


def backend(fake: FakeOpenAI, **options: Any) -> tuple[OpenAIBackend, list[float], list[str]]:
    waits: list[float] = []
    lines: list[str] = []
    chosen = OpenAIBackend(base_url=fake.url, models={"analysis": "fake-model"}, sleep=waits.append,
                           jitter=lambda: 0.0, wall=lambda: NOW, progress=lines.append, **options)
    return chosen, waits, lines


@pytest.fixture(autouse=True)
def _fresh_json_only() -> Any:
    _openai._JSON_ONLY.clear()
    yield
    _openai._JSON_ONLY.clear()


@pytest.mark.parametrize("stage", REGISTRY, ids=lambda s: s.name)
def test_every_stages_strict_schema_is_one_strict_mode_takes(stage: Any) -> None:
    plain = answer_schema(stage.answer)
    assert schema_problems(plain) != []  # the answer model's own schema is refused: the transform is needed
    assert schema_problems(strict_schema(plain)) == []


class Recording(OpenAIBackend):
    """The backend, keeping each request it was asked (to compare with the offline answer)."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.asked: list[ModelRequest] = []

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        self.asked.append(request)
        return super().complete(request, model)


def test_every_stages_offline_answer_fitted_to_its_strict_schema_validates_and_reads_back(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        recording = Recording(base_url=fake.url)
        result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=recording, progress=lambda _l: None)
    assert result.complete and result.validation is not None and list(result.validation.defects) == []
    assert {r.stage for r in recording.asked} >= {stage.name for stage in REGISTRY}
    for request in recording.asked:
        if request.offline is None:
            continue  # the screen
        schema = strict_schema(request.output_schema)
        offline = offline_answer(request.stage, request.inputs)
        answer = filled(fit(offline, schema), schema, schema)  # as strict decoding would hold a model to it
        assert check(answer, schema) == []
        assert unnull(answer, request.output_schema) == offline, f"{request.stage}: the strict wire loses a field"


def test_the_request_puts_the_stable_parts_first_and_asks_for_strict_json_schema() -> None:
    request = audience_request()
    params = request_params(request, "m", answer_tokens=123)
    system, user = params["messages"]
    assert system == {"role": "system", "content": "\n\n".join(b.text for b in request.system if b.text)}
    assert user["content"].startswith(request.shared) and user["content"].endswith(request.user)
    assert params["max_completion_tokens"] == 123
    fmt = params["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == strict_schema(request.output_schema)
    assert "cache_control" not in str(params)


def test_usage_counts_cached_tokens_as_cache_reads_and_reasoning_as_thinking() -> None:
    request = audience_request()
    with FakeOpenAI(reasoning=7) as fake:
        chosen, _, _ = backend(fake)
        chosen.complete(request, "fake-model")
        answer = chosen.complete(request, "fake-model")  # the same prompt again: its prefix is cached
    sent = fake.usages[-1]
    cached = sent["prompt_tokens_details"]["cached_tokens"]
    assert cached > 0
    assert answer.usage.cache_read_input_tokens == cached
    assert answer.usage.input_tokens == sent["prompt_tokens"] - cached
    assert answer.usage.output_tokens == sent["completion_tokens"] and answer.usage.thinking_tokens == 7
    assert answer.stop_reason == "stop" and answer.response_id


@pytest.mark.parametrize(("header", "value", "waited"), [
    ("retry-after", "3", 3.0),
    ("retry-after-ms", "1500", 1.5),
    ("retry-after", email.utils.formatdate(NOW + 5, usegmt=True), 5.0),
])
def test_a_429_waits_what_retry_after_says_then_answers(header: str, value: str, waited: float) -> None:
    with FakeOpenAI(faults=[RateLimited(value, header)]) as fake:
        chosen, waits, _ = backend(fake)
        answer = chosen.complete(audience_request(), "fake-model")
    assert answer.data and waits and waits[0] == pytest.approx(waited, abs=0.01)


def test_a_retry_after_above_the_cap_ends_the_call_in_one_line() -> None:
    with FakeOpenAI(faults=[RateLimited("120")]) as fake:
        chosen, waits, _ = backend(fake)
        with pytest.raises(ModelUnavailable, match="retry-after, above the 60 s"):
            chosen.complete(audience_request(), "fake-model")
    assert waits == []


def test_5xx_is_retried_with_backoff_and_spent_retries_are_unavailable() -> None:
    with FakeOpenAI(faults=[Status(500), Status(503)]) as fake:
        chosen, waits, _ = backend(fake)
        assert chosen.complete(audience_request(), "fake-model").data
    assert len(waits) == 2 and waits[1] > waits[0]
    with FakeOpenAI(faults=[Status(502)] * 3) as fake:
        chosen, _, _ = backend(fake, max_retries=2)
        with pytest.raises(ModelUnavailable, match="after 3 attempts"):
            chosen.complete(audience_request(), "fake-model")


def test_a_used_up_quota_is_not_retried() -> None:
    with FakeOpenAI(faults=[Status(429, "You exceeded your current quota", "insufficient_quota")]) as fake:
        chosen, waits, _ = backend(fake)
        with pytest.raises(ModelError, match="quota is used up"):
            chosen.complete(audience_request(), "fake-model")
    assert waits == [] and len(fake.bodies) == 1


@pytest.mark.parametrize(("fault", "error", "said"), [
    ("refusal", RefusalError, "refused to answer (refusal: I can't help with that.)"),
    ("filter", RefusalError, "content_filter"),
    ("malformed", AnswerError, "not JSON"),
])
def test_a_refusal_a_content_filter_and_malformed_json_are_the_claude_backends_errors(
        fault: str, error: type[Exception], said: str) -> None:
    with FakeOpenAI(faults=[fault]) as fake:
        chosen, _, _ = backend(fake)
        with pytest.raises(error, match=None) as caught:
            chosen.complete(audience_request(), "fake-model")
    assert said in str(caught.value)
    assert caught.value.billed is not None  # type: ignore[attr-defined]  # a paid reply is counted


def test_a_cut_off_answer_is_asked_once_more_with_twice_the_room_and_both_replies_count() -> None:
    with FakeOpenAI(faults=["length"]) as fake:
        chosen, _, lines = backend(fake, answer_tokens=3000)
        answer = chosen.complete(audience_request(), "fake-model")
    assert [b["max_completion_tokens"] for b in fake.bodies] == [3000, 6000]
    assert answer.usage.output_tokens == sum(u["completion_tokens"] for u in fake.usages)
    assert any("asking once more with 6000" in line for line in lines)
    with FakeOpenAI(faults=["length", "length"]) as fake:
        chosen, _, _ = backend(fake, answer_tokens=3000)
        with pytest.raises(TruncationError, match="STAY_ANSWER_TOKENS=12000"):
            chosen.complete(audience_request(), "fake-model")


def test_a_rerun_asks_at_once_with_the_room_a_cut_off_answer_needed(tmp_path: Path) -> None:
    """The room memory is the shared loop's: recorded before the retry, read by the next miss."""
    cache = RequestCache(tmp_path / "cache")
    with FakeOpenAI(faults=["length"]) as fake:
        chosen, _, _ = backend(fake, answer_tokens=3000)
        CachedBackend(chosen, cache).complete(audience_request(), "fake-model")
        cache.reject(audience_request(), "fake-model", "asked again")  # the next run misses, as after a change
        again, _, lines = backend(fake, answer_tokens=3000)
        CachedBackend(again, cache).complete(audience_request(), "fake-model")
    assert [b["max_completion_tokens"] for b in fake.bodies] == [3000, 6000, 6000]
    assert any("asking with 6000 tokens for the answer at once" in line for line in lines), lines


def test_a_screen_the_server_refuses_with_a_400_is_a_configuration_error() -> None:
    with FakeOpenAI(faults=[Status(400, "bad request")]) as fake:
        chosen, _, _ = backend(fake)
        with pytest.raises(UsageError, match=r"the brief was not screened .*STAY_MODEL_ANALYSIS=fake-model"):
            chosen.screening("Teach HTTP.")


def test_a_server_without_json_schema_is_asked_in_json_mode_said_once_and_remembered() -> None:
    with FakeOpenAI(json_schema=False) as fake:
        chosen, _, lines = backend(fake)
        first = chosen.complete(audience_request(), "fake-model")
        again, _, more = backend(fake)  # another backend, the same server: remembered for the process
        second = again.complete(audience_request(), "fake-model")
    kinds = [b["response_format"]["type"] for b in fake.bodies]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert sum("JSON mode" in line for line in lines + more) == 1
    assert first.data == second.data == offline_answer(stage_of(_as_messages_body(fake.bodies[1])),
                                                       inputs_of(_as_messages_body(fake.bodies[1])))


def test_a_json_mode_answer_that_misfits_its_schema_is_asked_once_more_with_the_error() -> None:
    with FakeOpenAI(json_schema=False, faults=[None, "malformed"]) as fake:
        chosen, _, lines = backend(fake)
        answer = chosen.complete(audience_request(), "fake-model")
    assert answer.data and len(fake.bodies) == 3
    assert "did not fit the schema" in fake.bodies[-1]["messages"][-1]["content"]
    assert any("asking once more" in line for line in lines)


def test_the_screen_is_a_call_through_the_backend_and_reports_its_usage() -> None:
    with FakeOpenAI() as fake:
        chosen, _, _ = backend(fake)
        screening = chosen.screening("Teach HTTP.")
    assert screening.reason is None and screening.answer is not None and screening.answer.usage.input_tokens > 0
    assert fake.bodies[0]["response_format"]["json_schema"]["name"] == screen_request("x").output_name
    assert "screen" in OpenAIBackend.features and "thinking" not in OpenAIBackend.features


def test_models_default_only_where_the_provider_is_known() -> None:
    assert set(OpenAIBackend(api_key="k").default_models.values()) == {_openai.OPENAI_MODEL}
    # the screen's cache key is the model it really uses, read without asking a server
    assert OpenAIBackend(api_key="k").screen_model == _openai.OPENAI_MODEL
    assert OpenAIBackend(base_url="http://127.0.0.1:9/v1", models={"analysis": "m"}).screen_model == "m"
    with FakeOpenAI(models=("only",)) as fake:
        assert set(OpenAIBackend(base_url=fake.url).default_models.values()) == {"only"}
    with FakeOpenAI(models=("a", "b")) as fake, pytest.raises(UsageError, match="STAY_MODEL"):
        OpenAIBackend(base_url=fake.url).default_models  # noqa: B018


def test_make_reads_the_openai_settings_and_a_missing_key_is_one_line() -> None:
    settings = Settings.from_env({"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                  "STAY_MODEL_WRITING": "w", "STAY_BACKEND": "openai"})
    made = make(settings)
    assert made.models == {"writing": "w"} and made.endpoint == "http://127.0.0.1:9/v1"
    assert "sk-x" in settings.secrets
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        OpenAIBackend().client  # noqa: B018


def test_import_stay_needs_no_openai_sdk_and_a_missing_one_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    probe = "import sys, stay, stay.models, stay.pipeline; print('openai' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.stdout.strip() == "False"
    monkeypatch.setitem(sys.modules, "openai", None)  # the SDK not installed
    with pytest.raises(UsageError, match=r"pip install -e '\.\[openai\]'"):
        OpenAIBackend(api_key="k").client  # noqa: B018


def test_a_schema_strict_mode_refuses_is_an_error_not_a_fall_back_to_json_mode() -> None:
    params = request_params(audience_request(), "fake-model")
    del params["response_format"]["json_schema"]["schema"]["additionalProperties"]
    with FakeOpenAI() as fake:
        chosen, _, _ = backend(fake)
        with pytest.raises(ModelError, match="Invalid schema for response_format"):
            chosen._call(params, "stage audience (audience.yaml)")
    assert [b["response_format"]["type"] for b in fake.bodies] == ["json_schema"]
    assert fake.url not in _openai._JSON_ONLY


def test_cache_writes_where_a_server_reports_them_are_counted_and_the_default_model_is_priced() -> None:
    from openai.types.chat import ChatCompletion

    from stay.models import PRICES, cost
    from stay.models._openai import usage_of

    completion = ChatCompletion.model_validate({
        "id": "c", "object": "chat.completion", "created": 0, "model": _openai.OPENAI_MODEL, "choices": [],
        "usage": {"prompt_tokens": 5000, "completion_tokens": 300, "total_tokens": 5300,
                  "prompt_tokens_details": {"cached_tokens": 2048, "cache_write_tokens": 1024},
                  "completion_tokens_details": {"reasoning_tokens": 100}}})
    usage = usage_of(completion, "stage x")
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (1928, 2048, 1024)
    assert usage.total_input_tokens == 5000 and usage.thinking_tokens == 100
    rates = PRICES[_openai.OPENAI_MODEL].rates
    expected = (1928 * rates.input + 2048 * rates.cache_read + 1024 * rates.cache_write + 300 * rates.output) / 1e6
    assert cost(_openai.OPENAI_MODEL, usage) == pytest.approx(expected)
    broken = completion.model_copy(update={"usage": completion.usage.model_copy(update={"prompt_tokens": 10})})
    with pytest.raises(ModelError, match="malformed"):
        usage_of(broken, "stage x")


def test_a_json_mode_answer_of_the_wrong_shape_is_asked_again_with_what_its_schema_says() -> None:
    with FakeOpenAI(json_schema=False, faults=[None, "misfit"]) as fake:
        chosen, _, _ = backend(fake)
        answer = chosen.complete(audience_request(), "fake-model")
    assert answer.data and "learners" in answer.data and len(fake.bodies) == 3
    assert "'learners' is a required property" in fake.bodies[-1]["messages"][-1]["content"]
    assert answer.usage.output_tokens == sum(u["completion_tokens"] for u in fake.usages[-2:])
    with FakeOpenAI(json_schema=False, faults=[None, "misfit", "misfit"]) as fake:
        chosen, _, _ = backend(fake)
        with pytest.raises(AnswerError, match="does not fit its schema twice"):
            chosen.complete(audience_request(), "fake-model")


def test_an_answer_and_a_refused_call_name_their_x_request_id() -> None:
    """The response's ``x-request-id`` (what OpenAI's support asks for) is the answer's
    ``request_id``, and the one line of a call the server refused names it, as Claude's do."""
    with FakeOpenAI(faults=[None, Status(400, "bad request")]) as fake:
        chosen, _waits, _lines = backend(fake)
        answer = chosen.complete(audience_request(), "fake-model")
        assert answer.request_id == fake.request_ids[-1]
        with pytest.raises(ModelError) as refused:
            chosen.complete(audience_request(), "fake-model")
    assert str(refused.value).endswith(f"; x-request-id {fake.request_ids[-1]}")


@pytest.mark.parametrize("retry", ["answered", "capped", "unavailable", "json-mode"])
def test_a_cut_off_reply_is_a_call_of_its_own_and_its_retry_is_held_against_the_cost_cap(retry: str) -> None:
    """Through the run's gateway, as a build asks: the cut-off reply is counted as the call
    it was (its tokens, its price) before its retry is sent, whatever becomes of the retry
    (answered; never sent, as the cap the first ask just fits has no room for it; failed),
    and the retry is held against the cap as Claude's is. So is a JSON-mode answer that
    did not fit its schema, asked again."""
    from stay.errors import CostCapReached
    from stay.pipeline._run import ModelGateway, Tally, cost_cap, worst_case
    from stay.pipeline._trace import Reporter
    from tests.models.helpers import quiet

    model = "gpt-6.2-sol"  # the one OpenAI id with a price row
    request = audience_request()
    settings = Settings(models=dict.fromkeys(Settings().models, model), answer_tokens=3000)
    failing: list[Any] = [Status(503)] * 2 if retry == "unavailable" else []
    faults = [None, "malformed"] if retry == "json-mode" else ["length", *failing]
    with FakeOpenAI(models=(model,), faults=faults, json_schema=retry != "json-mode") as fake:
        chosen = OpenAIBackend(base_url=fake.url, models=dict(settings.models), answer_tokens=3000, max_retries=1,
                               sleep=lambda _s: None, progress=quiet)
        first = worst_case(request, model, settings, chosen.prices)  # the first ask's worst case
        assert first is not None
        settings = settings.replace(max_cost=first if retry == "capped" else None)
        tally = Tally()
        gateway = ModelGateway(chosen, settings, tally, Reporter(quiet), cap=cost_cap(settings, chosen.prices))
        errors = {"capped": CostCapReached, "unavailable": ModelUnavailable}
        if retry in errors:
            with pytest.raises(errors[retry]):
                gateway.ask(request)
        else:
            gateway.ask(request)
    rooms = [b["max_completion_tokens"] for b in fake.bodies]
    assert rooms == {"capped": [3000], "json-mode": [3000] * 3}.get(retry, [3000, *[6000] * max(1, len(failing))])
    assert tally.calls == len(fake.usages) > 0  # every reply the server billed is a call
    assert tally.usage.output_tokens == sum(u["completion_tokens"] for u in fake.usages)
    prompt = tally.usage.input_tokens + tally.usage.cache_read_input_tokens + tally.usage.cache_creation_input_tokens
    assert prompt == sum(u["prompt_tokens"] for u in fake.usages)
    assert tally.cost > 0 and not tally.unpriced and (retry != "capped" or tally.cost <= first)  # within the cap
