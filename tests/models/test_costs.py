"""Prices per model from one table, the batch discount, and a cost that is unknown, not
partial, when a model has no price."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import httpx2
import pytest

from stay._display import plural
from stay.errors import EXIT_REFUSED, RefusalError, TruncationError
from stay.models import BATCH_DISCOUNT, DEFAULT_MODELS, PRICES, SCREENING, AnthropicBackend, Usage, cost, describe_cost
from stay.models._protocol import US_INFERENCE
from stay.pipeline import build_course, spent_of
from stay.stages import REGISTRY, STAGES
from tests.conftest import run_stay
from tests.expected import calls, curriculum_of
from tests.models.fake_api import FakeMessagesAPI, RateLimited, answer_for, is_stage, message, reply, stage_of
from tests.models.helpers import HTTP, KEY, backend, quiet

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
    made = calls(curriculum_of(result.course_dir), REGISTRY)  # a model build: a review per lesson
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


# -- a billed call that failed, and a run that failed ------------------------------------

FAILING = "curriculum"
"""The stage the fake's model stops early on: the second of the design phase, so one
stage has been paid for in full before it."""


def _anthropic(api: FakeMessagesAPI) -> AnthropicBackend:
    return AnthropicBackend(api_key=KEY, base_url=api.url, sleep=lambda _s: None)


@pytest.mark.parametrize("reason, error", [("refusal", RefusalError), ("max_tokens", TruncationError)])
def test_a_refused_or_cut_off_call_is_counted_priced_and_traced(
        tmp_path: Path, reason: str, error: type[Exception]) -> None:
    """The API bills a reply that stopped at max_tokens or refused: the run's usage, cost
    and trace count it, though it raised."""
    with FakeMessagesAPI(stop=lambda body: reason if stage_of(body) == FAILING else None) as api, \
            pytest.raises(error) as raised:
        build_course(HTTP, courses_dir=tmp_path, backend=_anthropic(api), progress=quiet)
    billed = [b for b in api.accounting.billed if b.stage == FAILING]
    # a cut-off reply is asked once more with twice the room (and cut off again here); a refusal is not
    assert len(billed) == (2 if reason == "max_tokens" else 1)
    paid = sum((Usage(**b.usage) for b in billed), Usage())
    spent = spent_of(raised.value)
    assert spent is not None
    # every billed reply is a call of its own: the API answered each (a cut-off asked again with more room too)
    assert spent.calls_by_stage[FAILING] == len(billed) and spent.usage_by_stage[FAILING] == paid
    assert spent.cost_by_stage[FAILING] == pytest.approx(sum(cost(b.model, Usage(**b.usage)) for b in billed))
    assert spent.calls == len(api.requests) + len(api.screens)  # every reply that came, counted
    trace = next((tmp_path / curriculum_slug() / ".runs" / "traces").glob("*.jsonl")).read_text()
    calls = [c for line in trace.splitlines() for c in json.loads(line).get("calls", [])]
    failed = [c for c in calls if c["stage"] == FAILING]
    assert len(failed) == len(billed) and {c["error"] for c in failed} == {error.__name__}
    assert [(c["input_tokens"], c["output_tokens"]) for c in failed] == [
        (b.usage["input_tokens"], b.usage["output_tokens"]) for b in billed]
    assert math.fsum(c["cost_usd"] for c in failed) == pytest.approx(cost(billed[0].model, paid))
    assert all("error" not in c for c in calls if c["stage"] != FAILING)  # only a failed call says one


def _usage_of(api: FakeMessagesAPI) -> tuple[int, int]:
    """The replies the fake billed (screens included) and their output tokens."""
    usages = [*api.screen_usage, *(b.usage for b in api.accounting.billed)]
    return len(usages), sum(u["output_tokens"] for u in usages)


@pytest.mark.parametrize("retry", ["answered", "refused"])
def test_a_cut_off_reply_asked_again_with_more_room_is_a_call_in_the_usage_line(tmp_path: Path, retry: str) -> None:
    """The API answers and bills a reply cut off at max_tokens, then its retry with more room
    is answered (or refused: the spend limit, which is not retried): every reply billed is a
    call in the run's usage line and its stage's, as the bill counts them."""
    cut: list[str] = []

    def once(body: dict[str, object]) -> str | None:  # the failing stage's first answer only
        if stage_of(body) != FAILING or cut:
            return None
        cut.append(FAILING)
        if retry == "refused":
            api.faults.append(RateLimited(spend_limit=True))
        return "max_tokens"

    with FakeMessagesAPI(stop=once) as api:
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY})
    assert cut and "was cut off at max_tokens" in done.stderr, done.stderr
    assert done.returncode == (EXIT_REFUSED if retry == "refused" else 0), done.stderr
    replies, output = _usage_of(api)
    lines = [line for line in done.stdout.splitlines() if line.startswith("usage:")]
    assert lines and lines[0].startswith(f"usage: {replies} calls;") and f" {output} output tokens" in lines[0], lines
    billed = sum(b.stage == FAILING for b in api.accounting.billed)  # the cut-off reply, and an answered retry
    assert billed == (2 if retry == "answered" else 1), billed
    assert any(line.startswith(f"usage: {FAILING}: {plural(billed, 'call')};") for line in lines), lines


def curriculum_slug() -> str:
    from stay.briefs import load_brief, slugify

    return slugify(load_brief(HTTP).title)


def _usage_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("usage:")]


def test_a_failed_run_still_prints_its_usage_line(tmp_path: Path) -> None:
    with FakeMessagesAPI(stop=lambda body: "refusal" if stage_of(body) == FAILING else None) as api:
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY,
                             "SOURCE_DATE_EPOCH": "1780000000"})
    assert done.returncode == EXIT_REFUSED, done.stderr
    assert "refused:" in done.stderr and "the model refused" in done.stderr
    lines = _usage_lines(done.stdout)
    calls = len(api.requests) + len(api.screens)
    assert lines and lines[0].startswith(f"usage: {calls} calls; ") and lines[0].endswith(" so far")
    assert "$" in lines[0]  # every model of the run is priced: a figure, not "unknown"
    stages = {stage_of(body) for body in api.requests}
    assert {line.split(":")[1].strip() for line in lines[1:]} == stages | {"moderation"}


def test_an_interrupted_run_still_prints_its_usage_line(tmp_path: Path) -> None:
    """Ctrl-C while the failing stage's call is in flight: the calls answered before it
    are what the run paid, and the command says so before it exits 130."""
    import signal
    import subprocess
    import sys
    import threading
    import time

    from tests.conftest import ROOT

    reached, release = threading.Event(), threading.Event()

    def hold(body: dict[str, object]) -> None:
        if stage_of(body) == FAILING:
            reached.set()
            release.wait(30)  # a model still thinking

    with FakeMessagesAPI(stop=hold) as api:
        try:
            env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.url}
            proc = subprocess.Popen([sys.executable, "-m", "stay.cli", "new", str(HTTP), "--courses-dir",
                                     str(tmp_path)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            assert reached.wait(60), "the failing stage's call never reached the fake"
            time.sleep(0.2)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            release.set()
    assert proc.returncode == 130, err
    lines = _usage_lines(out)
    answered = len(api.screens) + len([b for b in api.requests if stage_of(b) != FAILING])
    assert lines and lines[0].startswith(f"usage: {answered} calls; ") and lines[0].endswith(" so far"), out
    assert "interrupted" in err


# -- where a price comes from, and how a response was served ------------------------------

def test_every_price_cites_its_page_and_the_day_it_was_checked() -> None:
    import datetime
    import re

    for model, price in PRICES.items():
        if model == "offline":
            continue
        assert re.search(r"https://\S+", price.source), f"{model}: no source page"
        assert datetime.date.fromisoformat(price.checked) <= datetime.date.today(), model
    # where the official pages were not reached for a rate, the row says so
    assert "unverified" in PRICES["claude-haiku-5-5"].source
    # two public sources disagree on Sonnet 5.5's cache reads: the official page's is kept
    assert PRICES["claude-sonnet-5-5"].rates.cache_read == 0.20
    assert "platform.claude.com" in PRICES["claude-sonnet-5-5"].source


@pytest.mark.parametrize("served, factor", [({"service_tier": "standard", "inference_geo": "global"}, 1.0),
                                            ({"inference_geo": "us"}, US_INFERENCE),
                                            ({"service_tier": "batch"}, BATCH_DISCOUNT),
                                            ({"service_tier": "priority"}, None)])
def test_how_the_api_says_it_served_a_call_prices_it(
        tmp_path: Path, served: dict[str, str], factor: float | None) -> None:
    """``usage.service_tier`` and ``usage.inference_geo`` change the price: US-only
    inference costs 1.1x, the batch tier half, and Priority Tier (no published per-token
    price) makes the cost unknown, named, never a guess at the standard price."""
    with FakeMessagesAPI(served=served) as api:
        result = build_course(HTTP, courses_dir=tmp_path, backend=_anthropic(api), progress=quiet)
    assert result.stopped_at == "design gate"
    standard = math.fsum(cost(b.model, Usage(**b.usage)) or 0.0 for b in api.accounting.billed)
    assert result.cost_by_stage is not None and result.calls == len(api.requests) + len(api.screens)
    if factor is None:
        assert result.cost is None
        assert set(result.unpriced) == {f"{model} (priority tier)" for model in
                                        {b.model for b in api.accounting.billed} | {DEFAULT_MODELS["analysis"]}}
        assert "priority tier" in result.summary().splitlines()[1]
    else:
        staged = math.fsum(result.cost_by_stage[stage] for stage in {b.stage for b in api.accounting.billed})
        assert staged == pytest.approx(standard * factor)


def test_a_run_the_disk_stops_still_says_what_it_paid(tmp_path: Path) -> None:
    """An OSError mid-run becomes one EnvironmentProblem line; what was paid goes with it."""
    import errno

    from stay.errors import EnvironmentProblem

    def full(node: str) -> None:
        if node == FAILING:
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))

    with FakeMessagesAPI() as api, pytest.raises(EnvironmentProblem) as raised:
        build_course(HTTP, courses_dir=tmp_path, backend=_anthropic(api), progress=quiet, on_node=full)
    spent = spent_of(raised.value)
    assert spent is not None and spent.calls == len(api.requests) + len(api.screens) > 0
    assert spent.cost == pytest.approx(math.fsum(cost(b.model, Usage(**b.usage)) or 0.0
                                                 for b in api.accounting.billed) + spent.cost_by_stage["moderation"])


def test_a_cut_off_screen_is_counted_though_the_build_stops(tmp_path: Path) -> None:
    """The input screen is a billed call too: cut off at max_tokens (the fake's screen thinks
    all its room, and one token, then two, is left for the verdict), its replies are in the
    run's usage under its own stage, though the build stops there."""
    with FakeMessagesAPI(thinking=SCREENING.room) as api, pytest.raises(TruncationError) as raised:
        build_course(HTTP, courses_dir=tmp_path, backend=AnthropicBackend(api_key=KEY, base_url=api.url,
                                                                        answer_tokens=1, sleep=lambda _s: None),
                     progress=quiet)
    spent = spent_of(raised.value)
    assert spent is not None and len(api.screens) == 2 and not api.requests  # asked again with more room
    assert spent.calls_by_stage == {"moderation": len(api.screens)}  # each billed reply is a call
    # each reply spends its whole room, thinking included: both are counted, all of each
    rooms = sum(body["max_tokens"] for body in api.screens)
    assert spent.usage_by_stage["moderation"].output_tokens == rooms
    assert spent.usage_by_stage["moderation"].input_tokens > 0
