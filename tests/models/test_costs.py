"""Prices per model from one table, the batch discount, and a cost that is unknown, not
partial, when a model has no price."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx2
import pytest

from stay.models import BATCH_DISCOUNT, DEFAULT_MODELS, PRICES, Usage, cost, describe_cost
from stay.pipeline import build_course
from stay.stages import STAGES
from tests.conftest import run_stay
from tests.expected import calls, curriculum_of
from tests.models.fake_api import FakeMessagesAPI, answer_for, is_stage, message, reply
from tests.models.helpers import HTTP, backend, quiet

MILLION = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_creation_input_tokens=1_000_000,
                cache_read_input_tokens=1_000_000)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STAY_MODEL", "STAY_MODEL_PLANNING", "STAY_MODEL_WRITING", "STAY_MODEL_ANALYSIS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")


def test_cache_multipliers_are_per_model() -> None:
    # input + output + a 5-minute write + a read, a million tokens each
    assert cost("claude-opus-5-5", MILLION) == pytest.approx(4 + 20 + 5 + 0.20)  # reads 0.05x, not 0.1x
    assert cost("claude-sonnet-5-5", MILLION) == pytest.approx(2 + 10 + 2.5 + 0.20)
    assert cost("claude-fable-5-1", MILLION) == pytest.approx(10 + 50 + 12.5 + 0.25)  # 0.025x
    assert cost("claude-opus-4-8", MILLION) == pytest.approx(5 + 25 + 6.25 + 0.50)
    assert PRICES["claude-opus-5-5"].rates.cache_read / PRICES["claude-opus-5-5"].rates.input == 0.05


def test_haiku_5_5_is_priced_by_prompt_length() -> None:
    short = Usage(input_tokens=60_000, cache_read_input_tokens=40_000, output_tokens=1_000)
    long = Usage(input_tokens=60_000, cache_read_input_tokens=40_001, output_tokens=1_000)
    assert cost("claude-haiku-5-5", short) == pytest.approx((60_000 * 0.10 + 40_000 * 0.01 + 1_000 * 0.50) / 1e6)
    assert cost("claude-haiku-5-5", long) == pytest.approx((60_000 * 0.50 + 40_001 * 0.05 + 1_000 * 2.50) / 1e6)


def test_a_batch_costs_half() -> None:
    """Cache writes aside: a batch writes 1-hour entries (tests/models/test_batch.py prices them)."""
    unwritten = MILLION.model_copy(update={"cache_creation_input_tokens": 0})
    for model in ("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"):
        assert cost(model, unwritten, batch=True) == pytest.approx(BATCH_DISCOUNT * (cost(model, unwritten) or 0))


def test_every_current_model_the_sdk_lists_is_priced_or_named_unpriced() -> None:
    from anthropic.types import model_param

    listed = [name for name in model_param.ModelParam.__args__[0].__args__]  # type: ignore[attr-defined]
    unpriced = {"claude-fable-5-2", "claude-mythos-5-2", "claude-mythos-preview"}  # no published source
    assert set(listed) - unpriced <= set(PRICES), "a model the SDK lists has no price and is not known unpriced"
    for name in unpriced:
        assert cost(name, MILLION) is None
    assert "claude-haiku-5-5" in PRICES and all(price.source for price in PRICES.values())


def test_a_cost_is_unknown_never_partial_when_a_model_has_no_price() -> None:
    assert cost("a-model-with-no-price", MILLION) is None
    assert describe_cost(1.5) == "$1.5000"
    assert describe_cost(1.5, {"claude-fable-5-2"}) == \
        "cost unknown (no price on file for claude-fable-5-2)"


def _fixed_usage_handler(usage: dict[str, int]) -> object:
    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        data = answer_for(body) if is_stage(body) else {"flagged": False, "reason": "fine"}
        return reply(body, message(data, model=body["model"], usage=usage))

    return handle


def test_a_build_prices_every_call_stage_and_the_screen(tmp_path: Path) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 500, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 4000}
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend(_fixed_usage_handler(usage)),
                          progress=quiet)
    per_call = {"claude-sonnet-5-5": (1000 * 2 + 500 * 10 + 4000 * 0.2) / 1e6,
                "claude-opus-5-5": (1000 * 4 + 500 * 20 + 4000 * 0.2) / 1e6}
    made = calls(curriculum_of(result.course_dir))
    screen = per_call[DEFAULT_MODELS["analysis"]]  # the input screen is asked of the analysis model
    assert result.cost == pytest.approx(
        sum(n * per_call[DEFAULT_MODELS[STAGES[stage].role]] for stage, n in made.items()) + screen)
    assert result.usage_by_stage is not None
    assert result.usage_by_stage["content"].input_tokens == usage["input_tokens"] * made["content"]
    assert result.usage_by_stage["moderation"].input_tokens == 1000  # the screen is counted
    assert result.cost_by_stage is not None and result.cost_by_stage["moderation"] == pytest.approx(
        per_call["claude-sonnet-5-5"])
    trace = next((result.course_dir / ".runs" / "traces").glob("*.jsonl")).read_text()
    assert '"cache_read_input_tokens": 4000' in trace and '"batch": false' in trace


def test_an_unpriced_model_makes_the_cost_unknown_in_the_result_and_on_stdout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as env:  # the design stages, up to the gate, with an unpriced planner
        env.setenv("STAY_MODEL_PLANNING", "claude-fable-5-2")
        result = build_course(HTTP, courses_dir=tmp_path / "api",
                              backend=backend(_fixed_usage_handler({"input_tokens": 10, "output_tokens": 10})),
                              progress=quiet)
    assert result.stopped_at == "design gate"
    assert result.cost is None and result.unpriced == ("claude-fable-5-2",)
    assert result.cost_by_stage is not None and "audience" in result.cost_by_stage  # what is priced, per stage
    for name in [k for k in os.environ if k.startswith("STAY_MODEL")]:
        monkeypatch.delenv(name)
    with FakeMessagesAPI() as api:
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path / "cli"),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test-key-not-real",
                             "STAY_MODEL_PLANNING": "claude-fable-5-2", "SOURCE_DATE_EPOCH": "1780000000"})
    assert done.returncode == 0, done.stderr
    usage_line = next(line for line in done.stdout.splitlines() if line.startswith("usage:"))
    assert usage_line.endswith("cost unknown (no price on file for claude-fable-5-2)") and "$" not in usage_line


def test_the_total_cost_is_the_same_whatever_order_the_calls_end_in() -> None:
    """Wave threads finish in any order; a running float sum would make the same answers
    cost a different last digit from one run to the next (and the eval reports differ)."""
    import itertools

    from stay.models import ModelAnswer
    from stay.pipeline._run import Tally

    answers = [ModelAnswer(data={}, model=model, usage=Usage(input_tokens=tokens, output_tokens=7 * tokens + 3,
                                                             cache_read_input_tokens=tokens // 3))
               for model, tokens in (("claude-sonnet-5-5", 1_237), ("claude-opus-5-5", 9_901),
                                     ("claude-sonnet-5-5", 31), ("claude-haiku-5-5", 77_777),
                                     ("claude-opus-5-5", 5))]
    totals = set()
    by_stage = set()
    naive = set()
    for order in itertools.permutations(answers):
        tally = Tally()
        running = 0.0
        for answer in order:
            tally.add_call("content", answer)
            running += cost(answer.model, answer.usage) or 0.0
        totals.add(tally.cost)
        by_stage.add(tally.cost_by_stage["content"])
        naive.add(running)
    assert len(totals) == 1 and by_stage == totals
    assert len(naive) > 1  # the running sum this replaced does depend on the order
