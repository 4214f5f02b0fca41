"""Differential test of a fast path: the prefix gate (``PrefixGate`` in ``stay/models/_anthropic.py``),
which holds a request while another one writes the cache prefix it would read and lets
it go when the writer's response begins, against the slow path, the same requests with
no gate (``warm_prefixes=False``).

Over generated small sets of concurrent requests (real stage requests recorded from an
offline build: calls of one stage share their prefix, calls of two stages differ in
their schema; each request's effort drawn too, and an effort is part of the cache key),
sent at once over HTTP to the fake, which bills its cache as the API does:

- the answers are the same, request for request, and so is each one's input in all;
- the gated run never pays more cache writes than the ungated one;
- no read is billed before the stream of the request that wrote it began (the fake's
  own records: when each prefix was made readable, when each was read);
- with the gate, no prefix is written by two requests (the gate's promise).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.models import AnthropicBackend, ModelRequest, OfflineBackend
from stay.models._protocol import DEFAULT_MODELS, THINKING, Thinking
from stay.pipeline import build_course
from stay.requests import ModelAnswer
from tests.models.fake_api import CacheAccounting, FakeMessagesAPI
from tests.models.helpers import HTTP, KEY, quiet
from tests.parity.harness import examples

LATENCY = 0.2
"""Seconds the fake takes to answer (its stream's first event at half of it)."""
EFFORTS = ("low", "medium", "high")
WAVE = ("content", "exercises", "quiz")


@dataclass
class _Recorder(OfflineBackend):
    requests: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        self.requests.append(request)
        return super().complete(request, model)


@pytest.fixture(scope="module")
def requests(tmp_path_factory: pytest.TempPathFactory) -> list[ModelRequest]:
    """The wave's requests of an offline build of the sample brief, in a stable order."""
    recorder = _Recorder()
    build_course(HTTP, courses_dir=tmp_path_factory.mktemp("courses"), yes=True, backend=recorder,
                 progress=quiet)
    found = sorted((r for r in recorder.requests if r.stage in WAVE), key=lambda r: (r.stage, r.artefact))
    assert {r.stage for r in found} == set(WAVE) and len(found) > len(WAVE)  # stages with more than one call
    return found


@dataclass
class Recorded(CacheAccounting):
    """The fake's accounting, with its own record of events, in the order they took effect:
    ``("readable", key)`` is noted before the key is made readable (the writer's stream has
    begun), ``("read", key)`` after the read was billed."""

    events: list[tuple[str, str]] = field(default_factory=list)

    def bill(self, body: dict[str, Any], answer: str) -> tuple[dict[str, int], list[str]]:
        points = self.breakpoints(body)
        usage, written = super().bill(body, answer)
        read = usage["cache_read_input_tokens"]
        if read:
            key = next(key for key, size in reversed(points) if size == read)
            with self.lock:
                self.events.append(("read", key))
        return usage, written

    def answered(self, keys: list[str]) -> None:
        with self.lock:
            self.events.extend(("readable", key) for key in keys)
        super().answered(keys)


@pytest.fixture(scope="module")
def api() -> Iterator[FakeMessagesAPI]:
    """One fake for the module; each run bills into an accounting of its own (``_run``)."""
    with FakeMessagesAPI(latency=LATENCY) as fake:
        yield fake


def _run(api: FakeMessagesAPI, picked: list[tuple[ModelRequest, str]], *, warm: bool,
         ) -> tuple[list[ModelAnswer], Recorded]:
    """Every picked request sent at once (one thread each), through one backend, into an
    empty cache. Without the gate the fake holds them until all are in flight, so they
    overlap however loaded the machine is (with it, the gate is what orders them)."""
    api.accounting = accounting = Recorded()
    api.regather(0 if warm else len(picked))
    backend = AnthropicBackend(api_key=KEY, base_url=api.url, warm_prefixes=warm, progress=quiet)
    assert backend.client is not None  # made now: no thread pays for making it after the others have sent
    answers: list[ModelAnswer | None] = [None] * len(picked)
    ready = threading.Barrier(len(picked))

    def send(index: int) -> None:
        request, effort = picked[index]
        thinking = Thinking(effort, THINKING[request.role].room)  # type: ignore[arg-type]
        ready.wait()
        answers[index] = backend._complete(request, DEFAULT_MODELS[request.role], thinking)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(picked))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(answer is not None for answer in answers)
    return [answer for answer in answers if answer is not None], accounting


def _readable_before_read(events: list[tuple[str, str]]) -> Iterator[str]:
    """Every key read before any writer's stream had begun (none, if the fake is right)."""
    readable: set[str] = set()
    for kind, key in events:
        if kind == "readable":
            readable.add(key)
        elif key not in readable:
            yield key


def _written_twice(accounting: Recorded) -> set[str]:
    """Keys written by more than one request (each request's writes are made readable
    once, when its stream begins; a read refreshes an entry without a \"readable\" event)."""
    written = [key for kind, key in accounting.events if kind == "readable"]
    return {key for key in written if written.count(key) > 1}


@settings(max_examples=examples(20, dev=6), deadline=None)
@given(data=st.data())
def test_the_gate_answers_as_the_ungated_run_does_and_never_pays_more_writes(
        api: FakeMessagesAPI, requests: list[ModelRequest], data: st.DataObject) -> None:
    picked = data.draw(st.lists(st.tuples(st.sampled_from(requests), st.sampled_from(EFFORTS)),
                                min_size=2, max_size=5), label="requests")
    gated, with_gate = _run(api, picked, warm=True)
    ungated, without = _run(api, picked, warm=False)
    assert [a.data for a in gated] == [a.data for a in ungated]
    whole = [[a.usage.input_tokens + a.usage.cache_creation_input_tokens + a.usage.cache_read_input_tokens
              for a in run] for run in (gated, ungated)]
    assert whole[0] == whole[1]  # the same input, however it was billed
    assert with_gate.cache_creation_input_tokens <= without.cache_creation_input_tokens
    for accounting in (with_gate, without):
        assert not list(_readable_before_read(accounting.events))
    assert not _written_twice(with_gate)  # the gate's promise: each prefix written once, however many in flight


def test_the_comparison_can_tell_a_gate_from_none(api: FakeMessagesAPI, requests: list[ModelRequest]) -> None:
    """Not a vacuous comparison: calls of one stage at one effort, sent together, pay one
    write with the gate and one each without; at two efforts, both pay theirs."""
    stage = next(stage for stage in WAVE if sum(r.stage == stage for r in requests) > 1)
    same = [(r, "medium") for r in requests if r.stage == stage][:2]
    _gated, with_gate = _run(api, same, warm=True)
    _ungated, without = _run(api, same, warm=False)
    assert with_gate.cache_read_input_tokens > 0 and without.cache_read_input_tokens == 0
    assert with_gate.cache_creation_input_tokens < without.cache_creation_input_tokens
    assert not _written_twice(with_gate) and _written_twice(without)
    apart = [(same[0][0], "low"), (same[1][0], "high")]  # an effort is part of the key: nothing to share
    _gated, with_gate = _run(api, apart, warm=True)
    assert with_gate.cache_read_input_tokens == 0
