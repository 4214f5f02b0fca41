"""Every request's ``request-id`` (the id the API gives each HTTP exchange, what its
support asks for) reaches the trace, and a refused call's line names it: over real HTTP
against the fake, which sends one with every response as the API does."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import anthropic
import pytest

from stay.errors import StayError
from stay.models import AnthropicBackend
from stay.pipeline import build_course
from stay.pipeline._trace import build_spans
from tests.models.fake_api import FakeMessagesAPI
from tests.models.helpers import HTTP, audience_request


def test_every_call_in_the_trace_names_the_request_id_the_api_sent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith(("STAY_MODEL", "STAY_WAVE", "STAY_REPAIR"))]:
        monkeypatch.delenv(name)
    with FakeMessagesAPI(latency=0.0) as api:
        client = anthropic.Anthropic(api_key="test-key", base_url=api.url)
        result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=AnthropicBackend(client),
                              progress=lambda _line: None)
    assert result.complete
    (trace,) = (result.course_dir / ".runs" / "traces").glob("*.jsonl")
    calls = [call for line in trace.read_text().splitlines() for call in json.loads(line).get("calls", [])]
    said = [call.get("request_id") for call in calls]
    assert len(calls) >= len(api.requests) > 0
    assert all(isinstance(rid, str) for rid in said), said
    assert len(set(said)) == len(said) and set(said) <= set(api.request_ids)  # each call its own exchange
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    exported = [s.attributes or {} for s in build_spans(records, end_ns=time.time_ns())]
    assert sorted(str(a["stay.request_id"]) for a in exported if "gen_ai.request.model" in a) == sorted(said)


def test_a_refused_call_names_its_request_id() -> None:
    with FakeMessagesAPI(latency=0.0) as api:
        client = anthropic.Anthropic(api_key="test-key", base_url=api.url, max_retries=0)
        with pytest.raises(StayError) as raised:
            AnthropicBackend(client).complete(audience_request(), "claude-no-such-model")
    assert "404" in str(raised.value)
    assert f"request-id {api.request_ids[-1]}" in str(raised.value)
