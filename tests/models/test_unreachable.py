"""A service no connection can be made to (issue 34): named as such at once, with its URL,
never retried, and never tried again in the same run; apart from a connection that failed
mid-answer, which a retry may mend.

Over real HTTP at a local port that refuses (bound, read, closed: nothing listens there),
and over ``httpx2.MockTransport`` for the causes a sandbox cannot make on demand (no such
host, no route, a connect timeout). Attempts are counted as the transport sees them and
waits as the backend asks to sleep: nothing here waits on a clock.
"""

from __future__ import annotations

import errno
import json
import socket
import threading
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from stay.cli import main
from stay.errors import EXIT_UNAVAILABLE, ModelUnavailable, Unreachable, exit_code
from stay.models import AnthropicBackend, ModelClient
from stay.models._openai import OpenAIBackend
from stay.pipeline import build_course
from stay.requests import ModelAnswer, ModelRequest
from tests.models.fake_openai import FakeOpenAI
from tests.models.helpers import HTTP, KEY, audience_request, client, recording

RETRIES = 3
"""Retries each backend is given: a refused connection must use none of them."""


def refused_url(userinfo: str = "") -> str:
    """A URL at a local port nothing listens on (bound to find a free one, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://{userinfo}127.0.0.1:{port}/v1"


def claude(url: str, waits: list[float]) -> AnthropicBackend:
    return AnthropicBackend(api_key=KEY, base_url=url, max_retries=RETRIES, sleep=waits.append)


def gpt(url: str, waits: list[float]) -> OpenAIBackend:
    return OpenAIBackend(base_url=url, models={"analysis": "m", "planning": "m", "writing": "m", "judging": "m"},
                         max_retries=RETRIES, sleep=waits.append, jitter=lambda: 0.0)


BACKENDS: dict[str, Callable[[str, list[float]], Any]] = {"anthropic": claude, "openai": gpt}
SETTING = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}


@pytest.mark.parametrize("name", BACKENDS)
def test_a_refused_connection_is_said_at_once_naming_the_url(name: str) -> None:
    url, waits = refused_url("bob:pw@"), []  # userinfo too short to be a kept secret: cut out by its place
    with pytest.raises(Unreachable) as caught:
        BACKENDS[name](url, waits).complete(audience_request(), "m")
    said = str(caught.value)
    assert waits == []  # no retry, no backoff: the first attempt's refusal is the answer
    assert url.replace("bob:pw", "[redacted]") in said and "bob:pw" not in said
    assert "connection was refused" in said and SETTING[name] in said and "\n" not in said
    assert isinstance(caught.value, ModelUnavailable) and exit_code(caught.value) == EXIT_UNAVAILABLE


@pytest.mark.parametrize("server", ["refuses", "closes unanswered"])
def test_a_local_server_out_of_reach_is_named_when_asked_for_its_models_not_sent_to_stay_model(server: str) -> None:
    """The issue's case: no STAY_MODEL, so the backend asks the server which model it serves."""
    with Closing() if server == "closes unanswered" else nullcontext() as closing:
        url = closing.url if isinstance(closing, Closing) else refused_url()
        with pytest.raises(Unreachable) as caught:
            _ = OpenAIBackend(base_url=url).default_models
    said = str(caught.value)
    why = "connection was refused" if server == "refuses" else "closed the connection with no answer"
    assert url in said and why in said and "OPENAI_BASE_URL" in said
    assert "STAY_MODEL" not in said


def test_the_command_line_says_it_in_one_line_at_the_unavailable_exit_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url = refused_url()
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.delenv("STAY_MODEL", raising=False)
    code = main(["build", str(HTTP), "--yes", "--backend", "openai", "--courses-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == EXIT_UNAVAILABLE, err
    last = err.strip().splitlines()[-1]
    assert url in last and "connection was refused" in last and "Traceback" not in err


class Counted:
    """A backend that counts every request it is asked (the screen's included)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.asked = inner, inner.name, []

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        self.asked.append(request.stage)
        answer: ModelAnswer = self.inner.complete(request, model)
        return answer

    def screen(self, text: str) -> str | None:
        self.asked.append("moderation")
        reason: str | None = self.inner.screen(text)
        return reason


@pytest.mark.parametrize("name", BACKENDS)
def test_a_refused_screen_warns_once_goes_on_and_the_run_asks_that_service_nothing_more(
        name: str, tmp_path: Path) -> None:
    waits: list[float] = []
    backend = Counted(BACKENDS[name](refused_url(), waits))
    assert isinstance(backend, ModelClient)
    lines: list[str] = []
    with pytest.raises(Unreachable) as caught:
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=lines.append)
    warned = [line for line in lines if "input moderation" in line]
    assert len(warned) == 1 and "connection was refused" in warned[0], lines
    assert "rerun" not in warned[0] and "continuing" in warned[0]  # fail open, said one way
    assert backend.asked == ["moderation"] and waits == []  # the first stage was not sent: no second try
    assert str(caught.value).startswith("stage ") and "not asked" in str(caught.value)
    assert "rerun to continue" in str(caught.value)  # the stop says what to do


CAUSES: dict[str, Callable[[httpx2.Request], BaseException]] = {
    "refused": lambda r: _caused(httpx2.ConnectError("refused", request=r), ConnectionRefusedError(
        errno.ECONNREFUSED, "Connection refused")),
    "no such host": lambda r: _caused(httpx2.ConnectError("lookup failed", request=r),
                                      socket.gaierror(socket.EAI_NONAME, "Name or service not known")),
    "no route": lambda r: _caused(httpx2.ConnectError("unreachable", request=r),
                                  OSError(errno.ENETUNREACH, "Network is unreachable")),
    "a connect timeout": lambda r: httpx2.ConnectTimeout("timed out", request=r),
}


def _caused(error: BaseException, cause: BaseException) -> BaseException:
    error.__cause__ = cause
    return error


def _over(transport: Callable[[httpx2.Request], httpx2.Response], name: str, waits: list[float]) -> Any:
    """The backend ``name`` over ``transport`` (no network)."""
    if name == "anthropic":
        return AnthropicBackend(client(transport), max_retries=RETRIES, sleep=waits.append)
    sdk = openai.OpenAI(api_key=KEY, base_url="http://testserver/v1", max_retries=0,
                        http_client=httpx2.Client(transport=httpx2.MockTransport(transport)))
    return OpenAIBackend(sdk, base_url="http://testserver/v1", models={"analysis": "m"}, max_retries=RETRIES,
                         sleep=waits.append, jitter=lambda: 0.0)


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("cause", CAUSES)
def test_every_failure_to_connect_is_final_at_the_first_attempt(name: str, cause: str) -> None:
    attempts: list[str] = []

    def fail(request: httpx2.Request) -> httpx2.Response:
        attempts.append(str(request.url))
        raise CAUSES[cause](request)

    waits: list[float] = []
    with pytest.raises(Unreachable, match="http://testserver"):
        _over(fail, name, waits).complete(audience_request(), "m")
    assert len(attempts) == 1 and waits == []


DROPS: dict[str, Callable[[httpx2.Request], BaseException]] = {
    "reset": lambda request: httpx2.ReadError("connection reset by peer", request=request),
    "refused": lambda request: httpx2.ConnectError("[Errno 111] Connection refused", request=request),
    "connect timeout": lambda request: httpx2.ConnectTimeout("timed out", request=request),
}
"""What a service that has answered may do to one later attempt: lose the connection, or
refuse or time out a new one (a network drop or a restart in a long run)."""


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("drop", DROPS)
def test_a_service_that_has_answered_and_then_drops_a_connection_is_retried(name: str, drop: str) -> None:
    """Apart from a service never reached: one that answered may fail a connection and answer
    again, which is what the retries are for."""
    attempts: list[str] = []
    with FakeOpenAI(models=("m",)) as fake:
        def answer(request: httpx2.Request) -> httpx2.Response:  # as the offline backend would
            if name == "anthropic":
                return recording()[0](request)
            status, payload = fake.complete(json.loads(request.content), None)
            return httpx2.Response(status, json=payload)

        def flaky(request: httpx2.Request) -> httpx2.Response:
            attempts.append(str(request.url))
            if len(attempts) == 2:
                raise DROPS[drop](request)
            return answer(request)

        waits: list[float] = []
        backend = _over(flaky, name, waits)
        backend.complete(audience_request(), "m")
        backend.complete(audience_request(), "m")  # its first attempt fails: retried, answered
    assert len(attempts) == 3 and len(waits) == 1


class Closing:
    """A local TCP server that accepts each connection and closes it unanswered, counting them."""

    def __enter__(self) -> Closing:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.accepted = 0
        self.done = threading.Event()

        def serve() -> None:
            while not self.done.is_set():
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    return
                self.accepted += 1
                conn.close()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        return self

    def __exit__(self, *_exc: object) -> None:
        self.done.set()
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone need not)
        self.thread.join()
        self.sock.close()


@pytest.mark.parametrize("name", BACKENDS)
def test_a_server_that_closes_every_connection_unanswered_is_named_after_one_attempt(name: str) -> None:
    waits: list[float] = []
    with Closing() as server, pytest.raises(Unreachable) as caught:
        BACKENDS[name](server.url, waits).complete(audience_request(), "m")
    assert server.accepted == 1 and waits == []
    assert server.url in str(caught.value) and "closed the connection with no answer" in str(caught.value)


@pytest.mark.parametrize("name", BACKENDS)
def test_a_proxy_that_refuses_is_named_as_the_one_in_the_way(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = refused_url().removesuffix("/v1")
    for variable in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)
    for variable in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(variable, proxy)
    waits: list[float] = []
    with pytest.raises(Unreachable) as caught:
        BACKENDS[name]("http://model.example.test/v1", waits).complete(audience_request(), "m")
    assert f"http://model.example.test/v1 through the proxy {proxy} (the connection was refused" in str(caught.value)
    assert waits == []
