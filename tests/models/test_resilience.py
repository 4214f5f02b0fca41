"""When the service misbehaves: retries that wait what retry-after asks (and stop above the
cap), timeouts, the service unavailable (exit 6), malformed responses (a model error naming stage and file, never
exit 3), and API error text that never carries the key. No test really sleeps."""

from __future__ import annotations

import email.utils
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay._bounds import json_nesting
from stay.errors import EXIT_REFUSED, EXIT_UNAVAILABLE, ModelError, ModelUnavailable, StayError, exit_code
from stay.models import AnthropicBackend
from stay.models._protocol import backoff, retry_after
from tests.conftest import run_stay
from tests.models.fake_api import message
from tests.models.helpers import HTTP, KEY, audience_request, backend, client, recording
from tests.parity.harness import examples

AUDIENCE = {"learners": "x", "prior_knowledge": [], "goals": ["g"], "time_budget_minutes": 60}
WHERE = "stage audience (audience.yaml)"
STREAMED = audience_request()  # 24,000 tokens: streams
PLAIN = audience_request().model_copy(update={"max_tokens": 1_000})  # 9,000 tokens: one JSON body


def error(status: int, kind: str, text: str = "no", headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json={"type": "error", "error": {"type": kind, "message": text}},
                           headers=headers or {})


class Clock:
    """Records the sleeps the backend asks for instead of sleeping."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_a_529_is_retried_then_succeeds() -> None:
    handle, seen = recording([error(529, "overloaded_error", headers={"retry-after": "2"}), message(AUDIENCE)])
    clock = Clock()
    answer = backend(handle, sleep=clock.sleep, jitter=lambda: 0.0).complete(STREAMED, "claude-sonnet-5-5")
    assert len(seen) == 2 and answer.data == AUDIENCE and clock.slept == [2.0]


def test_a_retry_after_above_the_cap_stops_at_once_exit_6_in_one_line() -> None:
    handle, seen = recording([error(429, "rate_limit_error", headers={"retry-after": "100000"}),
                              message(AUDIENCE)])
    clock, lines = Clock(), []
    with pytest.raises(ModelUnavailable) as caught:
        backend(handle, sleep=clock.sleep, progress=lines.append).complete(STREAMED, "claude-sonnet-5-5")
    assert len(seen) == 1 and clock.slept == [] and lines == []  # no early retry, no 28-hour wait
    text = str(caught.value)
    assert text.startswith(f"{WHERE}: the API asks to wait 100000 s (retry-after, above the 60 s this run waits)")
    assert "STAY_RETRY_AFTER_CAP" in text and "\n" not in text and exit_code(caught.value) == EXIT_UNAVAILABLE


def test_the_cap_is_settable_and_backoff_applies_without_retry_after() -> None:
    handle, _seen = recording([error(503, "api_error", headers={"retry-after-ms": "4000"}),
                               error(500, "api_error"), message(AUDIENCE)])
    clock = Clock()
    backend(handle, sleep=clock.sleep, retry_after_cap=5, jitter=lambda: 0.0).complete(PLAIN, "m")
    assert clock.slept == [4.0, backoff(1, 0.0)]  # the hint under the cap; then the backoff
    handle, _seen = recording([error(503, "api_error", headers={"retry-after-ms": "6000"}), message(AUDIENCE)])
    with pytest.raises(ModelUnavailable, match=r"asks to wait 6 s \(retry-after, above the 5 s"):
        backend(handle, retry_after_cap=5).complete(PLAIN, "m")


def test_a_hung_endpoint_times_out_says_so_and_ends_unavailable() -> None:
    calls: list[float | None] = []

    def hung(request: httpx2.Request) -> httpx2.Response:
        calls.append(request.extensions.get("timeout", {}).get("read"))
        raise httpx2.ReadTimeout("timed out", request=request)

    lines: list[str] = []
    slow = backend(hung, max_retries=2, timeout=300, progress=lines.append)
    with pytest.raises(ModelUnavailable) as caught:
        slow.complete(STREAMED, "claude-sonnet-5-5")
    assert calls == [300, 300, 300]  # every attempt carries the request timeout
    assert [line.strip() for line in lines] == [
        f"{WHERE}: no answer within 300 s (the request timeout); retrying ({n} of 2)" for n in (1, 2)]
    text = str(caught.value)
    assert WHERE in text and "no answer within 300 s" in text and "rerun to continue" in text
    assert exit_code(caught.value) == EXIT_UNAVAILABLE == 6


@pytest.mark.parametrize("status, kind, fragment", [
    (429, "rate_limit_error", "rate limited (429)"), (529, "overloaded_error", "overloaded (529)"),
    (500, "api_error", "unavailable (HTTP 500"), (503, "api_error", "unavailable (HTTP 503")])
def test_the_service_unavailable_after_retries_is_exit_6_rerun_to_continue(
        status: int, kind: str, fragment: str) -> None:
    handle, seen = recording([error(status, kind) for _ in range(3)])
    with pytest.raises(ModelUnavailable) as caught:
        backend(handle, max_retries=2).complete(PLAIN, "m")
    text = str(caught.value)
    assert fragment in text and "after 3 attempts" in text and "rerun to continue" in text and "\n" not in text
    assert len(seen) == 3 and exit_code(caught.value) == EXIT_UNAVAILABLE


def test_a_connection_error_is_unavailable_too() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    with pytest.raises(ModelUnavailable, match=r"cannot reach the Anthropic API .* rerun to continue"):
        backend(refuse, max_retries=1).complete(PLAIN, "m")


def test_an_overloaded_error_inside_a_stream_is_retried() -> None:
    overloaded = httpx2.Response(200, content=b'event: error\ndata: {"type": "error", "error": '
                                 b'{"type": "overloaded_error", "message": "Overloaded"}}\n\n',
                                 headers={"content-type": "text/event-stream"})
    handle, seen = recording([overloaded, message(AUDIENCE)])
    assert backend(handle).complete(STREAMED, "m").data == AUDIENCE and len(seen) == 2


def test_a_rejected_key_is_not_retried() -> None:
    handle, seen = recording([error(401, "authentication_error")])
    with pytest.raises(ModelError, match=r"ANTHROPIC_API_KEY was rejected \(401\)"):
        backend(handle).complete(PLAIN, "m")
    assert len(seen) == 1


def test_no_reply_and_an_unusable_reply_are_disjoint_and_keep_their_exit_codes() -> None:
    """After httpx's split of TransportError from HTTPStatusError: the service not answering
    (ModelUnavailable, exit 6) is no kind of reply that cannot be used (ModelError, exit 5),
    so an ``except ModelError`` never swallows a rerun-to-continue."""
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    with pytest.raises(StayError) as none_came:
        backend(refuse, max_retries=0).complete(PLAIN, "m")
    handle, _seen = recording([error(401, "authentication_error")])
    with pytest.raises(StayError) as unusable:
        backend(handle).complete(PLAIN, "m")
    assert isinstance(none_came.value, ModelUnavailable) and not isinstance(none_came.value, ModelError)
    assert isinstance(unusable.value, ModelError) and not isinstance(unusable.value, ModelUnavailable)
    assert not issubclass(ModelError, ModelUnavailable) and not issubclass(ModelUnavailable, ModelError)
    assert (exit_code(none_came.value), exit_code(unusable.value)) == (EXIT_UNAVAILABLE, EXIT_REFUSED)


def _body(**changes: Any) -> dict[str, Any]:
    body = message(AUDIENCE)
    body.update(changes)
    return body


MALFORMED = {
    "not JSON": httpx2.Response(200, content=b"{not json", headers={"content-type": "application/json"}),
    "an HTML page": httpx2.Response(200, content=b"<html><body>502 Bad Gateway</body></html>",
                                    headers={"content-type": "text/html"}),
    "a JSON array": httpx2.Response(200, json=[{"type": "message"}]),
    "content null": httpx2.Response(200, json=_body(content=None)),
    "no usage": httpx2.Response(200, json={k: v for k, v in _body().items() if k != "usage"}),
    "negative token counts": httpx2.Response(200, json=_body(usage={
        "input_tokens": -3_999_999_999, "output_tokens": 20})),
    "a 100,000-deep JSON answer": httpx2.Response(200, json=_body(content=[
        {"type": "text", "text": "[" * 100_000 + "]" * 100_000}])),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_response_is_a_model_error_naming_stage_and_file(case: str) -> None:
    handle, _seen = recording([MALFORMED[case]])
    with pytest.raises(ModelError) as caught:
        backend(handle).complete(PLAIN, "claude-sonnet-5-5")
    assert type(caught.value) is ModelError  # neither a bug (exit 3) nor "unavailable"
    assert WHERE in str(caught.value) and exit_code(caught.value) == EXIT_REFUSED
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("case", ["not an event stream (an HTML page)", "negative token counts",
                                  "a 100,000-deep JSON answer"])
def test_a_malformed_stream_is_a_model_error_naming_stage_and_file(case: str) -> None:
    canned: httpx2.Response | dict[str, Any] = {
        "not an event stream (an HTML page)": httpx2.Response(200, content=b"<html>proxy</html>",
                                                              headers={"content-type": "text/html"}),
        "negative token counts": _body(usage={"input_tokens": 10, "output_tokens": -5}),
        "a 100,000-deep JSON answer": _body(content=[{"type": "text", "text": "{\"a\":" * 100_000}]),
    }[case]
    handle, _seen = recording([canned])
    with pytest.raises(ModelError) as caught:
        backend(handle).complete(STREAMED, "claude-sonnet-5-5")
    assert type(caught.value) is ModelError and WHERE in str(caught.value)


def test_api_error_text_never_carries_the_key() -> None:
    echo = error(400, "invalid_request_error", f"bad request from key {KEY} (x-api-key: {KEY})")
    handle, _seen = recording([echo])
    with pytest.raises(ModelError) as caught:
        backend(handle).complete(PLAIN, "m")
    assert KEY not in str(caught.value) and "[redacted]" in str(caught.value)

    def leaky(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError(f"proxy refused https://user:{KEY}@proxy.internal", request=request)

    with pytest.raises(ModelUnavailable) as unavailable:
        backend(leaky, max_retries=0).complete(PLAIN, "m")
    assert KEY not in str(unavailable.value) and "[redacted]" in str(unavailable.value)


def test_a_key_of_another_shape_is_redacted_too() -> None:
    odd = "key-that-does-not-look-like-one-42"
    handle, _seen = recording([error(400, "invalid_request_error", f"echo {odd}")])
    with pytest.raises(ModelError) as caught:
        AnthropicBackend(client(handle, key=odd), sleep=lambda _s: None).complete(PLAIN, "m")
    assert odd not in str(caught.value) and "echo [redacted]" in str(caught.value)


def test_every_request_is_sent_once_per_attempt_with_the_sdk_retries_off() -> None:
    handle, seen = recording([error(500, "api_error"), message(AUDIENCE)])
    slow = backend(handle, max_retries=1)
    assert slow.client.max_retries == 0  # ours apply, not the SDK's
    slow.complete(PLAIN, "m")
    assert len(seen) == 2 and json.dumps(seen[0], sort_keys=True) == json.dumps(seen[1], sort_keys=True)


def test_the_command_exits_6_with_one_line_when_the_service_stays_unavailable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Overloaded(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = json.dumps({"type": "error", "error": {"type": "overloaded_error",
                                                         "message": f"Overloaded (key {KEY})"}}).encode()
            self.send_response(529)
            self.send_header("content-type", "application/json")
            self.send_header("retry-after-ms", "1")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Overloaded)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        for name in [k for k in os.environ if k.startswith("STAY_MODEL")]:
            monkeypatch.delenv(name)
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path),
                        env={"ANTHROPIC_BASE_URL": f"http://{host}:{port}", "ANTHROPIC_API_KEY": KEY})
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 6, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("unavailable: stage audience (audience.yaml): the API is overloaded (529) after 5 "
                           "attempts; rerun to continue")
    assert KEY not in done.stderr and KEY not in done.stdout


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=st.sampled_from('ab"\\[]{}:, \n')),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(alphabet=st.sampled_from('k"\\[]{}'), max_size=4), inner, max_size=4),
    max_leaves=30)


def nesting(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((nesting(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((nesting(v) for v in value.values()), default=0)
    return 0


@given(json_values)
@settings(max_examples=examples(300, dev=100), deadline=None)
def test_the_depth_guard_measures_what_the_parser_would_nest(value: object) -> None:
    """The guard runs before json.loads: it must never call a shallow answer deep (strings
    full of brackets and escaped quotes included)."""
    assert json_nesting(json.dumps(value)) == nesting(value)
    assert json_nesting(json.dumps(value, ensure_ascii=False)) == nesting(value)


def test_retry_after_reads_milliseconds_then_seconds_then_an_http_date() -> None:
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"retry-after": "100000"}) == 100_000
    date = "Wed, 21 Oct 2026 07:28:00 GMT"
    at = email.utils.parsedate_to_datetime(date).timestamp()
    assert retry_after({"retry-after": date}, now=lambda: at - 20) == 20.0
    assert retry_after({"retry-after": "Wed, 21 Oct 2026 07:28:00 -0000"}, now=lambda: at - 20) == 20.0
    assert retry_after({"retry-after": date}, now=lambda: at + 5) == 0.0  # already past: no wait
    assert retry_after({"retry-after": "not a date"}) is None
    assert retry_after({"retry-after": "-3"}) is None and retry_after({}) is None
