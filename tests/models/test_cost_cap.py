"""--max-cost over real HTTP, against the fake Messages API on 127.0.0.1: a cap hit in the
middle of the wave stops the run before the call that could pass it (exit 5, one line,
the usage: lines), and a rerun with a higher cap finishes having paid nothing twice.
(test_cost_cap_held: every billed request is held, the screen and a retry too.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from stay.errors import EXIT_REFUSED, EXIT_USAGE
from stay.pipeline._run import worst_of
from stay.requests import Usage
from stay.stages import REGISTRY
from tests.conftest import run_stay
from tests.models.fake_api import FakeMessagesAPI, stage_of
from tests.models.helpers import HTTP

SLUG = "how-http-requests-travel"
WAVE = {stage.name for stage in REGISTRY if stage.phase == "wave"}
LATENCY = 0.4
"""Seconds the fake takes to answer: long enough that the wave's first calls are all in
flight together, so the cap is met by calls holding their worst case at once."""


def _env(api: FakeMessagesAPI, **more: str) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test-key-not-real", **more}


def _planned(courses: Path) -> None:
    """A course designed and planned (uncapped): what is left is the wave."""
    with FakeMessagesAPI() as api:
        assert run_stay("new", str(HTTP), "--backend", "anthropic", "--courses-dir", str(courses),
                        env=_env(api)).returncode in (0, 4)
        assert run_stay("approve", SLUG, "design", "--courses-dir", str(courses)).returncode == 0
        assert run_stay("plan", SLUG, "--yes", "--backend", "anthropic", "--courses-dir", str(courses),
                        env=_env(api)).returncode == 0


def _messages(api: FakeMessagesAPI) -> list[dict[str, Any]]:
    return [body for body in api.requests if "messages" in body and stage_of(body) in WAVE]


def _worst(body: dict[str, Any]) -> float:
    """A call's worst case as the cap counts it (``worst_of``), from the body as sent."""
    price = worst_of(body)
    assert price is not None
    return price


def _billed(api: FakeMessagesAPI) -> tuple[int, int, int]:
    """What the fake billed for the wave: calls, prompt tokens (however cached), output tokens."""
    accounting = api.accounting
    prompt = (accounting.input_tokens + accounting.cache_creation_input_tokens
              + accounting.cache_read_input_tokens)
    return len(_messages(api)), prompt, accounting.total("output_tokens")


@pytest.fixture(scope="module")
def uncapped(tmp_path_factory: pytest.TempPathFactory) -> FakeMessagesAPI:
    """The wave of one uncapped build: what a capped run and its rerun must add up to."""
    courses = tmp_path_factory.mktemp("uncapped")
    _planned(courses)
    with FakeMessagesAPI(latency=LATENCY) as api:
        done = run_stay("write", SLUG, "--yes", "--backend", "anthropic", "--courses-dir", str(courses),
                        env=_env(api))
    assert done.returncode == 0, done.stderr
    return api


def test_a_cap_hit_mid_wave_stops_before_the_call_and_a_rerun_pays_nothing_twice(
        uncapped: FakeMessagesAPI, tmp_path: Path) -> None:
    bodies = _messages(uncapped)
    worst = [_worst(body) for body in bodies]
    # the first call always fits (nothing spent, nothing held); the wave starts a call for
    # each of its first lessons and the capstone at once, and any three held together pass it
    cap = max(worst)
    assert cap < sum(sorted(worst)[:3])
    _planned(tmp_path)
    with FakeMessagesAPI(latency=LATENCY) as first:
        stopped = run_stay("write", SLUG, "--yes", "--backend", "anthropic", "--courses-dir", str(tmp_path),
                           "--max-cost", f"{cap:.6f}", env=_env(first))
    assert stopped.returncode == EXIT_REFUSED, stopped.stderr
    [line] = [line for line in stopped.stderr.splitlines() if "cost cap" in line]
    assert f"of ${cap:.4f}" in line and " left" in line and "spent" in line, line
    assert "usage:" in stopped.stdout  # what it paid before it stopped
    made = len(_messages(first))
    assert 0 < made < len(bodies)  # stopped in the middle of the wave

    with FakeMessagesAPI(latency=LATENCY) as second:  # room for every call's worst case: it finishes
        done = run_stay("write", SLUG, "--yes", "--backend", "anthropic", "--courses-dir", str(tmp_path),
                        "--max-cost", f"{sum(worst):.6f}", env=_env(second))
    assert done.returncode == 0, done.stderr
    # over both runs, each call was paid once: the same calls and tokens as the uncapped wave's
    calls, prompt, output = (a + b for a, b in zip(_billed(first), _billed(second), strict=True))
    assert (calls, prompt, output) == _billed(uncapped)
    # and stay's own count of the rerun is what the fake billed it: the answers the first
    # run paid for were served from the request cache at no cost
    # "1 call;" or "n calls;": how many calls the rerun has left depends on how many of the
    # first run's overlapped before the cap, which is the machine's timing (one at a time: one)
    usage = next(line for line in done.stdout.splitlines() if re.match(r"usage: \d+ calls?; ", line))
    assert f" {_billed(second)[2]} output tokens" in usage, usage

def test_a_cap_over_a_model_with_no_price_is_refused_up_front(tmp_path: Path) -> None:
    with FakeMessagesAPI() as api:
        done = run_stay("build", str(HTTP), "--yes", "--backend", "anthropic", "--courses-dir", str(tmp_path),
                        "--max-cost", "5", env=_env(api, STAY_MODEL_WRITING="claude-sonnet-4-0"))
    assert done.returncode == EXIT_USAGE
    [line] = [line for line in done.stderr.splitlines() if "no price on file" in line]
    assert "STAY_MODEL_WRITING" in line and "Traceback" not in done.stderr
    assert api.requests == [] and not (tmp_path / SLUG).exists()  # nothing asked, nothing written


@pytest.mark.parametrize("raw", ["0", "-1", "nan", "inf", "lots"])
def test_stay_max_cost_that_is_not_an_amount_is_one_line(raw: str) -> None:
    from stay.errors import UsageError
    from stay.settings import Settings

    with pytest.raises(UsageError, match="STAY_MAX_COST"):
        Settings.from_env({"STAY_MAX_COST": raw})
    assert Settings.from_env({"STAY_MAX_COST": "$2.50"}).max_cost == 2.5



def test_the_worst_case_is_held_atomically_and_let_go_when_the_call_returns() -> None:
    """Calls racing for the cap: only as many as fit are let through, whatever the order,
    and each one's hold is let go once its answer is counted (or its call failed)."""
    import threading

    from stay.errors import CostCapReached, ModelUnavailable
    from stay.models import ModelAnswer
    from stay.pipeline._run import ModelGateway, Tally, worst_case
    from stay.pipeline._trace import Reporter
    from stay.settings import Settings
    from tests.models.helpers import audience_request, quiet

    request = audience_request()
    settings = Settings(max_cost=1.0)
    model = settings.model(request.role)
    each = worst_case(request, model, settings)
    assert each is not None
    fits = 3
    settings = Settings(max_cost=each * (fits + 0.5))
    release, entered, failing = threading.Event(), threading.Semaphore(0), threading.Event()

    class Held:
        name = "held"

        def complete(self, request: Any, model: str) -> ModelAnswer:
            entered.release()
            release.wait(10)
            if failing.is_set():
                raise ModelUnavailable("no reply")
            return ModelAnswer(data={}, model=model, usage=Usage())

        def screen(self, text: str) -> str | None:
            return None

    from stay.pipeline._run import cost_cap

    gateway = ModelGateway(Held(), settings, Tally(), Reporter(quiet), threading.Semaphore(16),
                           cap=cost_cap(settings))
    assert gateway.cap is not None
    outcomes: list[str] = []
    start = threading.Barrier(fits * 3)

    def call() -> None:
        start.wait()
        try:
            gateway.ask(request)
            outcomes.append("answered")
        except CostCapReached:
            outcomes.append("stopped")

    threads = [threading.Thread(target=call) for _ in range(fits * 3)]
    for thread in threads:
        thread.start()
    for _ in range(fits):
        assert entered.acquire(timeout=10)
    assert not entered.acquire(timeout=0.3)  # no more than fit reached the backend
    assert gateway.cap.held == pytest.approx(each * fits)
    release.set()
    for thread in threads:
        thread.join(10)
    assert sorted(outcomes) == ["answered"] * fits + ["stopped"] * (fits * 2)
    assert gateway.cap.held == 0  # each hold let go once its (free) answer was counted
    failing.set()
    with pytest.raises(ModelUnavailable):
        gateway.ask(request)  # room again: the call is made, and fails
    assert gateway.cap.held == 0  # a failed call lets go of its hold too


@pytest.mark.parametrize("raw", ["0", "-2", "nan", "a dollar"])
def test_a_max_cost_flag_that_is_not_an_amount_is_one_usage_line(raw: str, tmp_path: Path) -> None:
    done = run_stay("build", str(HTTP), "--yes", "--courses-dir", str(tmp_path), f"--max-cost={raw}")
    assert done.returncode == EXIT_USAGE
    [line] = [line for line in done.stderr.splitlines() if "--max-cost" in line]
    assert "above 0" in line or "amount of US dollars" in line, line  # said what it takes
    assert "Traceback" not in done.stderr and not (tmp_path / SLUG).exists()


def test_an_offline_run_is_not_billed_so_a_cap_never_stops_it(tmp_path: Path) -> None:
    """The worst case is priced at the settings' models; an offline run pays nothing, and
    a cap far below any one call's worst case leaves it as it is, an unpriced model too."""
    done = run_stay("new", str(HTTP), "--backend", "offline", "--courses-dir", str(tmp_path), "--max-cost", "0.0001",
                    env={"STAY_MODEL_WRITING": "claude-sonnet-4-0"})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / SLUG / "curriculum.yaml").is_file()


def test_a_cap_with_batch_is_refused_up_front(tmp_path: Path) -> None:
    with FakeMessagesAPI() as api:
        done = run_stay("build", str(HTTP), "--yes", "--batch", "--backend", "anthropic", "--courses-dir",
                        str(tmp_path), env=_env(api, STAY_MAX_COST="5"))
    assert done.returncode == EXIT_USAGE
    assert sum("--batch cannot keep to --max-cost" in line for line in done.stderr.splitlines()) == 1
    assert api.requests == [] and not (tmp_path / SLUG).exists()

