"""An openai build's trace (issue 24): its JSONL records and its OTLP export, over real HTTP
from the fake OpenAI server (``tests/models/fake_openai.py``) to the OTLP receiver of
``test_otel``. The provider is the backend's own name; usage is what the server reported
(cached tokens as cache reads, inside the convention's input tokens); the cost is the
backend's price table's; each call names the ``x-request-id`` its response carried."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the openai extra is not installed: pip install -e '.[openai]'")

from stay.models._openai import OPENAI_MODEL, OpenAIBackend
from stay.models._protocol import PRICES, cost
from stay.pipeline import build_course
from stay.pipeline._trace import build_spans
from stay.requests import Usage
from tests.models.fake_openai import FakeOpenAI
from tests.pipeline.test_otel import BRIEF, RECORDS, Receiver, _read_trace, attributes, receiver

__all__ = ["receiver"]  # the OTLP receiver fixture, used here by name


def test_an_openai_build_s_trace_names_the_provider_usage_cost_and_request_ids(
        receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    # OpenAI's default model, served locally, so the backend's price table prices it
    with FakeOpenAI(models=(OPENAI_MODEL,)) as fake:
        result = build_course(BRIEF, courses_dir=tmp_path, yes=True, progress=lambda _line: None,
                              backend=OpenAIBackend(base_url=fake.url, sleep=lambda _s: None))
    assert result.complete and result.cost is not None
    calls = [c for r in _read_trace(result.course_dir, result.trace_id) if r["type"] == "span" for c in r["calls"]]
    exported = [attributes(s.attributes) for s in receiver.spans() if "gen_ai.request.model" in attributes(s.attributes)]
    assert len(calls) == len(exported) == len(fake.usages) == result.calls > 0

    # each call's usage is the server's, cached tokens read from the cache (and some were)
    sent = sorted((u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"], u["completion_tokens"])
                  for u in fake.usages)
    assert sorted((c["input_tokens"] + c["cache_read_input_tokens"], c["cache_read_input_tokens"],
                   c["output_tokens"]) for c in calls) == sent
    assert sorted((a["gen_ai.usage.input_tokens"], a["gen_ai.usage.cache_read.input_tokens"],
                   a["gen_ai.usage.output_tokens"]) for a in exported) == sent
    assert sum(cached for _, cached, _ in sent) > 0
    assert {a["gen_ai.usage.cache_creation.input_tokens"] for a in exported} == {0}

    # the provider is the backend's name, and every call is priced at its table
    assert {a["gen_ai.provider.name"] for a in exported} == {a["gen_ai.system"] for a in exported} == {"openai"}
    assert {a["gen_ai.request.model"] for a in exported} == {OPENAI_MODEL}
    for call in calls:
        usage = Usage(input_tokens=call["input_tokens"], output_tokens=call["output_tokens"],
                      cache_read_input_tokens=call["cache_read_input_tokens"])
        assert call["cost_usd"] == pytest.approx(cost(OPENAI_MODEL, usage, prices=PRICES)) and call["cost_usd"] > 0
    assert sum(a["gen_ai.usage.cost"] for a in exported) == pytest.approx(result.cost)

    # the x-request-id of each response, on its call and its span
    assert sorted(c["request_id"] for c in calls) == sorted(a["stay.request_id"] for a in exported)
    ids = [c["request_id"] for c in calls]
    assert len(set(ids)) == len(ids) and set(ids) <= set(fake.request_ids)  # one response's each


def test_the_provider_is_the_backend_s_name_not_guessed_from_the_model_s() -> None:
    """A Claude model served through an OpenAI-compatible router is the openai backend's
    call; a replay is the backend it replays."""
    for backend in ("openai", "openai (replay)"):
        header = {**RECORDS[0], "backend": backend}
        calls = [{**call, "model": "claude-sonnet-4-5"} for call in RECORDS[1]["calls"]]
        spans = build_spans([header, {**RECORDS[1], "calls": calls}, *RECORDS[2:]], end_ns=10**18)
        providers = {s.attributes["gen_ai.provider.name"] for s in spans if "gen_ai.request.model" in s.attributes}
        assert providers == {"openai"}, backend
