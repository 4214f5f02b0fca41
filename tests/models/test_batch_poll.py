"""A batch poll outlives a bad hour: polling is free and idempotent and the batch runs on
at the server, so transient failures (5xx, 429, resets) are polled through for as long as
the batch can still end (its ``expires_at``), one progress line a streak; a 401, 403 or
404 ends the run at once, in one line saying a rerun reattaches. Over real HTTP against
``FakeMessagesAPI``'s batch endpoints (``batch_faults``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from stay.errors import ModelError, ModelUnavailable, exit_code
from stay.models import AnthropicBackend
from stay.models._batch import BATCH_LIFETIME, poll_until
from stay.models._protocol import backoff
from stay.pipeline import build_course
from tests.conftest import ROOT
from tests.models.fake_api import FakeMessagesAPI

BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"
CREATE = "POST /v1/messages/batches"


pytestmark = pytest.mark.usefixtures("batch_env")  # tests/models/conftest.py


def _backend(api: FakeMessagesAPI, slept: list[float], wall: Callable[[], float] | None = None) -> AnthropicBackend:
    """No real waits, no jitter; ``wall``: the wall clock, moved on by every wait."""
    if wall is None:
        return AnthropicBackend(api_key="test-key-not-real", base_url=api.url, sleep=slept.append,
                                jitter=lambda: 0.0)
    return AnthropicBackend(api_key="test-key-not-real", base_url=api.url, sleep=slept.append,
                            jitter=lambda: 0.0, wall=lambda: wall() + sum(slept))


def _polls(api: FakeMessagesAPI) -> int:
    """GETs of a batch, the one the SDK's ``results()`` makes first (to find the URL) left out."""
    results = sum(call.endswith("/results") for call in api.batch_calls)
    return sum(call.startswith("GET ") and not call.endswith("/results") for call in api.batch_calls) - results


def test_a_streak_of_500s_and_resets_longer_than_the_retries_is_polled_through_and_the_build_completes(
        tmp_path: Path) -> None:
    probe = AnthropicBackend(api_key="x")
    streak: list[int | str | None] = [500, "reset"] * (probe.max_retries + 1)  # twice the retries and more
    lines: list[str] = []
    with FakeMessagesAPI(batch_faults=[None, *streak]) as api:  # None: the create is answered
        slept: list[float] = []
        result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_backend(api, slept), batch=True,
                              progress=lines.append)
    assert result.complete and len(api.batches) == 1 and not api.batch_faults
    assert api.batch_calls[0] == CREATE and _polls(api) == len(streak) + 1  # every failure, then the answer
    assert slept == [backoff(attempt, 0.0) for attempt in range(len(streak))]  # the live backoff, to its cap
    said = [line for line in lines if "a poll failed" in line]
    assert len(said) == 1 and "HTTP 500" in said[0] and "polling goes on" in said[0]  # one line for the streak


def test_each_streak_is_said_once_and_a_429_is_waited_for_as_long_as_it_asks(tmp_path: Path) -> None:
    probe = AnthropicBackend(api_key="x")
    asked = probe.retry_after_cap * 2  # above the live cap: a poll waits it all the same
    lines: list[str] = []
    with FakeMessagesAPI(batch_faults=[None, 429, 429, None, "reset"], batch_retry_after=f"{asked:g}",
                         batch_polls=2) as api:
        slept: list[float] = []
        result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_backend(api, slept), batch=True,
                              progress=lines.append)
    assert result.complete
    assert slept == [asked, asked, backoff(0, 0.0)]
    said = [line for line in lines if "a poll failed" in line]
    assert len(said) == 2 and "HTTP 429" in said[0] and "RemoteProtocolError" in said[1]


@pytest.mark.sweep
@pytest.mark.parametrize("status", [404, 401, 403])
def test_a_404_while_polling_ends_the_run_at_once_in_one_line_that_a_rerun_reattaches(tmp_path: Path,
                                                                                     status: int) -> None:
    with FakeMessagesAPI(batch_faults=[None, status]) as api:
        slept: list[float] = []
        with pytest.raises(ModelError) as stopped:
            build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=_backend(api, slept), batch=True,
                         progress=lambda _l: None)
    text = str(stopped.value)
    assert "polling batch msgbatch_0001fake" in text and f"{status}" in text and "a rerun reattaches" in text
    assert "\n" not in text and not isinstance(stopped.value, ModelUnavailable) and exit_code(stopped.value) != 0
    assert _polls(api) == 1 and not slept  # not retried
    (course,) = [path for path in tmp_path.iterdir() if path.is_dir()]
    assert [path.name for path in (course / ".runs" / "batches").iterdir()] == ["msgbatch_0001fake.json"]


def test_polling_through_failures_stops_once_the_batch_has_expired(tmp_path: Path) -> None:
    """The wall clock moves with each wait (backoff capped at 8 s): started a minute before
    the batch's ``expires_at``, the streak ends when it passes, exit 6, in one line."""
    minute = 60.0
    faults: list[int | str | None] = [None, *[503] * 1000]
    with FakeMessagesAPI(batch_faults=faults) as api:
        slept: list[float] = []
        # the wall stands a minute before expiry from when the API created the batch (its own clock), so
        # the design stages' time before the batch, long on a loaded machine, is not counted
        created = lambda: min(api._created.values(), default=datetime.now(UTC).timestamp())  # noqa: E731
        backend = _backend(api, slept, wall=lambda: created() + BATCH_LIFETIME - minute)
        with pytest.raises(ModelUnavailable) as stopped:
            build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=backend, batch=True,
                         progress=lambda _l: None)
    text = str(stopped.value)
    assert "HTTP 503" in text and "a rerun reattaches" in text and "\n" not in text and exit_code(stopped.value) == 6
    # the fake stamps whole seconds, so its expires_at may fall up to 1 s before now + a day
    assert minute - 1.0 <= sum(slept) < minute + backoff(99, 1.0) and api.batch_faults  # bounded, not the 1000
    assert sum(slept) == pytest.approx(minute, abs=2.0)  # waited until it expired, not past it


def test_the_bound_is_expires_at_else_a_day_after_creation() -> None:
    created = datetime(2026, 11, 30, tzinfo=UTC)
    expires = created + timedelta(hours=3)
    assert poll_until(SimpleNamespace(created_at=created, expires_at=expires)) == expires.timestamp()
    assert poll_until(SimpleNamespace(created_at=created, expires_at=None)) == created.timestamp() + BATCH_LIFETIME


def test_a_poll_that_cannot_connect_is_polled_through_too(tmp_path: Path) -> None:
    """A live call that cannot connect is final at once (``Unreachable``), but the service took
    this batch: a poll that cannot connect (the network gone for a while) is polled through."""
    import anthropic
    import httpx2

    probe = AnthropicBackend(api_key="x")
    drops = probe.max_retries + 2  # more than the live retries

    class Dropping(httpx2.HTTPTransport):
        """Real HTTP, but the first ``drops`` polls find no route to the service."""

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            nonlocal drops
            polling = request.method == "GET" and "/batches/" in request.url.path
            if polling and not request.url.path.endswith("/results") and drops:
                drops -= 1
                raise httpx2.ConnectError("[Errno 101] Network is unreachable", request=request)
            return super().handle_request(request)

    lines: list[str] = []
    with FakeMessagesAPI(batch_polls=2) as api:
        slept: list[float] = []
        sdk = anthropic.Anthropic(api_key="test-key-not-real", base_url=api.url,
                                  http_client=httpx2.Client(transport=Dropping()))
        backend = AnthropicBackend(sdk, sleep=slept.append, jitter=lambda: 0.0)
        result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=backend, batch=True,
                              progress=lines.append)
    assert result.complete and drops == 0
    said = [line for line in lines if "a poll failed" in line]
    assert len(said) == 1 and "ConnectError" in said[0]
