"""Retries that obey the service, over real HTTP against the fake Messages API
(``tests.models.fake_api``: ``RateLimited``, ``Stall``, ``PingsOnly``, ``Limiter``): an
HTTP-date retry-after is waited in full, concurrent calls in a 429 storm do not retry in
lock-step, a wait above the cap ends the call (exit 6), a spend limit is not retried, and
a stalled or pings-only stream ends at the call's deadline. Sleeps are recorded, never
slept; only the deadline tests take real (sub-second) time, and none asserts on it
beyond an upper bound far above the deadline."""

from __future__ import annotations

import asyncio
import email.utils
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from stay.errors import EXIT_REFUSED, EXIT_UNAVAILABLE, ModelError, ModelUnavailable, UsageError, exit_code
from stay.models import AnthropicBackend, backend_from
from stay.models._protocol import BACKOFF_FIRST, RETRY_AFTER_SPREAD, backoff, jittered
from stay.settings import Settings
from tests.models.fake_api import FakeMessagesAPI, Limiter, PingsOnly, RateLimited, Stall
from tests.models.helpers import KEY, audience_request

WHERE = "stage audience (audience.yaml)"
STREAMED = audience_request()  # streams: the stage's max_tokens is above the SDK's non-streaming limit
PLAIN = audience_request().model_copy(update={"max_tokens": 1_000})
DATE = "Wed, 21 Oct 2026 07:28:00 GMT"
AT = email.utils.parsedate_to_datetime(DATE).timestamp()


class Sleeps:
    """Records every wait asked for, per thread, instead of sleeping."""

    def __init__(self) -> None:
        self.waits: dict[int, list[float]] = {}
        self.lock = threading.Lock()

    def __call__(self, seconds: float) -> None:
        with self.lock:
            self.waits.setdefault(threading.get_ident(), []).append(seconds)

    @property
    def all(self) -> list[float]:
        return [wait for waits in self.waits.values() for wait in waits]


def over(api: FakeMessagesAPI, **options: Any) -> AnthropicBackend:
    options.setdefault("sleep", Sleeps())
    return AnthropicBackend(api_key=KEY, base_url=api.url, warm_prefixes=False, **options)


def test_an_http_date_retry_after_is_waited_in_full() -> None:
    """On the branch point the date was ignored and the call retried after the 0.5 s backoff."""
    twenty_on = email.utils.formatdate(AT + 20, usegmt=True)
    with FakeMessagesAPI(faults=[RateLimited(twenty_on)]) as api:
        sleeps = Sleeps()
        answer = over(api, sleep=sleeps, jitter=lambda: 0.0, wall=lambda: AT).complete(PLAIN, "claude-sonnet-5-5")
    assert answer.data and len(api.requests) == 1  # the retry was answered
    assert sleeps.all == [20.0]


def test_an_http_date_beyond_the_cap_stops_with_the_wait_it_asks_exit_6() -> None:
    later = email.utils.formatdate(AT + 100, usegmt=True)
    with FakeMessagesAPI(faults=[RateLimited(later)]) as api:
        sleeps = Sleeps()
        with pytest.raises(ModelUnavailable) as caught:
            over(api, sleep=sleeps, wall=lambda: AT).complete(PLAIN, "claude-sonnet-5-5")
    assert sleeps.all == [] and api.requests == []  # the answer was never asked for again
    text = str(caught.value)
    assert text.startswith(f"{WHERE}: the API asks to wait 100 s (retry-after, above the 60 s this run waits)")
    assert "\n" not in text and exit_code(caught.value) == EXIT_UNAVAILABLE


def test_a_spend_limit_429_is_not_retried_and_says_the_fix() -> None:
    with FakeMessagesAPI(faults=[RateLimited(spend_limit=True)]) as api:
        sleeps = Sleeps()
        with pytest.raises(ModelError) as caught:
            over(api, sleep=sleeps).complete(PLAIN, "claude-sonnet-5-5")
    assert sleeps.all == [] and api.requests == []
    text = str(caught.value)
    assert text.startswith(f"{WHERE}: the API refused the call: a spend limit or the credit balance is reached (HTTP 429")
    assert "not retried" in text and "Billing" in text and "\n" not in text
    assert exit_code(caught.value) == EXIT_REFUSED  # not 6: rerunning at once cannot help


CALLS = 8
RETRY_AFTER = 1.0


def storm(jitter: Callable[[], float]) -> tuple[Sleeps, Limiter, list[BaseException | None]]:
    """``CALLS`` concurrent calls against a limiter that admits two and answers the rest
    429 retry-after 1 s; the waits are recorded, not slept, so the retries come at once
    and every one is limited again until its retries are spent."""
    limiter = Limiter(limit=2, window=600.0, retry_after=f"{RETRY_AFTER:g}")
    sleeps = Sleeps()
    outcomes: list[BaseException | None] = []
    with FakeMessagesAPI(limiter=limiter) as api:
        backend = over(api, sleep=sleeps, jitter=jitter, max_retries=2)
        start = threading.Barrier(CALLS)

        def call() -> None:
            start.wait()
            try:
                backend.complete(PLAIN, "claude-sonnet-5-5")
                outcomes.append(None)
            except ModelUnavailable as exc:
                outcomes.append(exc)

        threads = [threading.Thread(target=call) for _ in range(CALLS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    return sleeps, limiter, outcomes


def test_a_429_storm_does_not_retry_in_lock_step() -> None:
    """Every limited call is told "1 s": on the branch point each waited exactly 1 s, so all
    of them came back in the same instant. Now each waits at least the 1 s asked, and the
    calls' retry instants (on the timeline of the recorded waits) spread apart."""
    sleeps, limiter, outcomes = storm(random.Random(23).random)
    limited = [waits for waits in sleeps.waits.values()]
    assert len(outcomes) == CALLS and outcomes.count(None) == limiter.limit
    assert len(limited) == CALLS - limiter.limit and all(len(waits) == 2 for waits in limited)
    assert all(wait >= RETRY_AFTER for wait in sleeps.all)  # never sooner than the service asked
    spread = max(RETRY_AFTER * RETRY_AFTER_SPREAD, BACKOFF_FIRST)
    assert all(wait < RETRY_AFTER + spread for wait in sleeps.all)
    for retry in (0, 1):  # the instants of each call's first, then second retry
        instants = sorted(sum(waits[:retry + 1]) for waits in limited)
        assert len(set(instants)) == len(instants)
        assert instants[-1] - instants[0] > spread / 4, instants
    # the limiter saw every refused request: the calls' attempts, no more
    assert sum(1 for _when, admitted in limiter.arrivals if not admitted) == len(sleeps.all) + len(limited)


def test_the_jitter_is_what_spreads_the_storm() -> None:
    """With no jitter, the same storm retries in lock-step: the spread above is jitter's."""
    sleeps, _limiter, _outcomes = storm(lambda: 0.0)
    assert set(sleeps.all) == {RETRY_AFTER}


def test_every_wait_is_jittered_within_its_bounds() -> None:
    for attempt in range(6):
        step = min(0.5 * 2 ** attempt, 8.0)
        assert backoff(attempt, 0.0) == step / 2 and backoff(attempt, 0.999) < step
    for hint in (0.0, 1.0, 20.0, 60.0):
        assert jittered(hint, 0.0) == hint < jittered(hint, 0.5) < hint + max(hint / 4, 0.5) + 1e-9


DEADLINE = 0.4
LONG = 20.0
"""How long the fake would stall or ping: far beyond the deadline, so only it can end the call."""


@pytest.mark.parametrize("fault", [Stall(LONG), PingsOnly(LONG, every=0.02)], ids=["stall", "pings only"])
def test_a_stream_that_never_answers_ends_at_the_call_deadline(fault: Stall | PingsOnly) -> None:
    """On the branch point a stall lasted the 300 s request timeout per attempt, and a
    stream of pings never ended (every ping resets the read timeout)."""
    with FakeMessagesAPI(faults=[fault]) as api:
        began = time.monotonic()
        with pytest.raises(ModelUnavailable) as caught:
            over(api, call_deadline=DEADLINE).complete(STREAMED, "claude-sonnet-5-5")
        took = time.monotonic() - began
    assert took < LONG / 2  # the deadline ended it, not the fake
    text = str(caught.value)
    assert text.startswith(f"{WHERE}: no complete answer within {DEADLINE:g} s (the call's deadline, after 1 attempt")
    assert "STAY_CALL_DEADLINE" in text and "\n" not in text and exit_code(caught.value) == EXIT_UNAVAILABLE


def test_an_async_stream_of_pings_ends_at_the_call_deadline_too() -> None:
    with FakeMessagesAPI(faults=[PingsOnly(LONG)]) as api, pytest.raises(
            ModelUnavailable, match=r"no complete answer within 0.4 s \(the call's deadline"):
        asyncio.run(over(api, call_deadline=DEADLINE).acomplete(STREAMED, "claude-sonnet-5-5"))


def test_a_wait_that_would_outlast_the_deadline_is_not_waited() -> None:
    with FakeMessagesAPI(faults=[RateLimited("30")]) as api:
        sleeps = Sleeps()
        with pytest.raises(ModelUnavailable, match=r"no complete answer within 10 s"):
            over(api, sleep=sleeps, call_deadline=10).complete(PLAIN, "claude-sonnet-5-5")
    assert sleeps.all == []


def test_the_deadline_is_a_setting() -> None:
    assert Settings.from_env({"STAY_CALL_DEADLINE": "90"}).call_deadline == 90.0
    assert Settings.from_env({}).call_deadline is None
    made = backend_from(Settings(backend="anthropic", api_key=KEY, call_deadline=90))
    assert isinstance(made, AnthropicBackend) and made.call_deadline == 90
    with pytest.raises(UsageError, match="STAY_CALL_DEADLINE"):
        Settings.from_env({"STAY_CALL_DEADLINE": "0"})
