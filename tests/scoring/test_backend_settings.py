"""The evals suite and the judges make their Claude backend from the settings, as the
build does (``stay.models.backend_from``): the retries and the retry-after cap they are
given are the ones they keep to. Before, both made their own backend and kept the
defaults (4 retries, a 60 s cap), whatever they were told.

Against an API on 127.0.0.1 that is always overloaded, and asks either for a wait far
above the cap given (which stops each call at once: with the default 60 s cap it would
be retried) or for 1 ms (so each call is retried as often as it is told).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path

import pytest
from pydantic import BaseModel

from stay.errors import StayError
from stay.scoring import OfflineJudge
from stay.scoring._core import judge_request
from stay.scoring._judges import make_judge
from stay.settings import Settings
from stay.suite import evaluate_build
from tests.conftest import ROOT

BRIEF = ROOT / "evals" / "briefs" / "accessible-web-forms.yaml"
ASKED_WAIT = 2
"""Seconds the API asks for (retry-after) before each retry: far above the cap given."""
BODY = b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'


@dataclass
class Overloaded:
    url: str
    asks: str
    """"cap": retry-after far above the cap given; "retries": a wait under it."""
    arrivals: list[tuple[bytes, float]] = field(default_factory=list)
    """Each request's body and when it arrived."""

    def attempts(self) -> dict[bytes, list[float]]:
        """Each request (a body) with the times it was sent."""
        found: dict[bytes, list[float]] = {}
        for body, when in self.arrivals:
            found.setdefault(body, []).append(when)
        return found


@pytest.fixture(params=["cap", "retries"])
def api(request: pytest.FixtureRequest) -> Iterator[Overloaded]:
    arrivals: list[tuple[bytes, float]] = []
    asks = request.param
    header = ("retry-after", str(ASKED_WAIT)) if asks == "cap" else ("retry-after-ms", "1")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            arrivals.append((self.rfile.read(int(self.headers.get("content-length", 0))), time.monotonic()))
            self.send_response(529)
            self.send_header("content-type", "application/json")
            self.send_header(*header)
            self.send_header("content-length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield Overloaded(f"http://{host}:{port}", asks, arrivals)
    finally:
        server.shutdown()
        server.server_close()


def _settings(api: Overloaded) -> Settings:
    return Settings(backend="anthropic", api_key="sk-ant-test-0000", base_url=api.url, max_retries=1,
                    retry_after_cap=0.01)


def _kept_to(api: Overloaded, settings: Settings) -> None:
    """Asked to wait above the cap given, every request was sent once and not retried
    (the call stops rather than retry early); asked to wait under it, every request was
    retried ``max_retries`` times, none after the long wait."""
    attempts = api.attempts()
    sends = 1 if api.asks == "cap" else settings.max_retries + 1
    assert attempts and all(len(times) == sends for times in attempts.values())
    assert all(later - earlier < ASKED_WAIT for times in attempts.values() for earlier, later in pairwise(times))


class _Verdict(BaseModel):
    ok: bool


def test_a_judge_keeps_to_the_retry_settings_it_is_given(api: Overloaded, tmp_path: Path) -> None:
    settings = _settings(api)
    judge = make_judge("anthropic", tmp_path / "judge-cache", settings=settings)
    with contextlib.suppress(StayError):  # an unavailable judge: no verdict (recorded, or raised)
        judge.ask(judge_request("outcome_coverage", "Judge it.", "item", {"item": "x"}, _Verdict))
    _kept_to(api, settings)


def test_the_suite_builds_keeping_to_the_retry_settings_it_is_given(api: Overloaded, tmp_path: Path) -> None:
    settings = _settings(api)
    with pytest.raises(StayError):  # the first request never gets an answer
        evaluate_build(BRIEF, epoch=1, courses_dir=tmp_path / "courses", backend="anthropic", prompts_dir=None,
                       judge=OfflineJudge(), settings=settings)
    _kept_to(api, settings)
