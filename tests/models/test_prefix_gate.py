"""The prefix gate: one writer per (model, prefix) in flight; the others wait for its answer."""

from __future__ import annotations

import threading

import pytest

from stay.models import MIN_CACHEABLE_TOKENS, PrefixGate, min_cacheable_tokens, prefix_keys
from stay.models._anthropic import CHARS_PER_TOKEN
from stay.settings import DEFAULT_MODELS

LONG = "x" * 5_000


def params(model: str, *texts: str, marked: tuple[int, ...] = (0,)) -> dict[str, object]:
    system = [{"type": "text", "text": text, **({"cache_control": {"type": "ephemeral"}} if i in marked else {})}
              for i, text in enumerate(texts)]
    return {"model": model, "system": system, "messages": [{"role": "user", "content": "q"}]}


def test_keys_are_per_model_and_per_breakpoint_and_skip_prefixes_too_short_to_cache() -> None:
    one = prefix_keys(params("a", LONG, LONG, marked=(0, 1)))
    assert len(one) == 2 and one != prefix_keys(params("b", LONG, LONG, marked=(0, 1)))
    assert prefix_keys(params("a", LONG, "y" * 5_000, marked=(0, 1)))[0] == one[0]  # shared first prefix
    assert prefix_keys(params("a", "short")) == []


def scoped(body: dict[str, object], **fields: object) -> dict[str, object]:
    return {**body, **fields}


def test_keys_change_with_the_schema_the_effort_the_thinking_and_the_tools_as_the_api_keys_its_cache() -> None:
    base = scoped(params("a", LONG), thinking={"type": "adaptive"},
                  output_config={"effort": "medium", "format": {"type": "json_schema", "schema": {"type": "object"}}})
    other_schema = {"type": "json_schema", "schema": {"type": "object", "properties": {"x": {"type": "string"}}}}
    variants = [
        scoped(base, output_config={**base["output_config"], "format": other_schema}),  # type: ignore[dict-item]
        scoped(base, output_config={**base["output_config"], "effort": "low"}),  # type: ignore[dict-item]
        scoped(base, thinking={"type": "disabled"}),
        scoped(base, tools=[{"name": "t", "input_schema": {"type": "object"}}]),
    ]
    keys = [prefix_keys(base)] + [prefix_keys(variant) for variant in variants]
    assert all(len(k) == 1 for k in keys) and len({k[0] for k in keys}) == len(keys)
    assert prefix_keys(scoped(base)) == keys[0]  # the same request keys the same


def test_the_gate_does_not_hold_a_request_whose_schema_differs_from_the_writers() -> None:
    gate = PrefixGate()
    first = scoped(params("a", LONG), output_config={"format": {"type": "json_schema", "schema": {"title": "A"}}})
    second = scoped(params("a", LONG), output_config={"format": {"type": "json_schema", "schema": {"title": "B"}}})
    through = threading.Event()

    def other() -> None:
        with gate.hold(prefix_keys(second)):
            through.set()

    with gate.hold(prefix_keys(first)):  # the first is writing while the second arrives
        thread = threading.Thread(target=other)
        thread.start()
        assert through.wait(30), "held for a write it can never read"  # at once, but a loaded machine is slow
    thread.join(5)
    assert gate.waits == 0


def test_the_minimum_cacheable_length_is_each_models_published_one() -> None:
    for model in DEFAULT_MODELS.values():
        floor = min_cacheable_tokens(model) * CHARS_PER_TOKEN
        assert prefix_keys(params(model, "x" * floor)) and not prefix_keys(params(model, "x" * (floor - 1)))
    assert min_cacheable_tokens("claude-sonnet-5-5") == MIN_CACHEABLE_TOKENS["claude-sonnet-5-5"]
    # the longest matching prefix wins: Sonnet 5.5 is not Sonnet 5
    assert min_cacheable_tokens("claude-sonnet-5-5") != min_cacheable_tokens("claude-sonnet-5")
    assert min_cacheable_tokens("claude-opus-4-6") == MIN_CACHEABLE_TOKENS["claude-opus-4-6"]


class _Watched(threading.Condition):
    """The gate's condition, saying when a thread waits on it: a test then knows a request
    is held, rather than sleeping and hoping a loaded machine has started it by then."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()  # still under the lock: no one can notify before the wait begins
        return super().wait(timeout)


def _watched() -> tuple[PrefixGate, _Watched]:
    gate, watched = PrefixGate(), _Watched()
    gate._changed = watched
    return gate, watched


def test_a_second_request_waits_for_the_first_ones_answer_then_reads() -> None:
    gate, watched = _watched()
    order: list[str] = []
    inside = threading.Event()
    release = threading.Event()

    def first() -> None:
        with gate.hold(["k"]):
            order.append("first sent")
            inside.set()
            release.wait(30)
            order.append("first answered")

    def second() -> None:
        inside.wait(30)
        with gate.hold(["k"]):
            order.append("second sent")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert watched.waiting.wait(30), "the second request was never held"
    assert order == ["first sent"]  # the second is held
    release.set()
    for thread in threads:
        thread.join(30)
    assert order == ["first sent", "first answered", "second sent"] and gate.waits == 1


def test_a_written_prefix_lets_everyone_through_until_it_expires() -> None:
    now = [0.0]
    gate = PrefixGate(ttl=300, clock=lambda: now[0])
    with gate.hold(["k"]):
        pass
    assert gate._fresh("k")
    now[0] = 299.0
    with gate.hold(["k"]):  # a read refreshes the entry
        pass
    now[0] = 598.0
    assert gate._fresh("k")
    now[0] = 600.0
    assert not gate._fresh("k")


def test_after_a_failed_write_requests_go_through_together_not_one_after_another() -> None:
    now = [0.0]
    gate = PrefixGate(ttl=300, clock=lambda: now[0])
    with pytest.raises(RuntimeError), gate.hold(["k"]):
        raise RuntimeError("the service is failing")
    assert not gate._fresh("k") and not gate._writing
    with gate.hold(["k"]), gate.hold(["k"]):  # both in flight at once: neither waits for the other
        assert not gate._writing
    assert gate._fresh("k")  # one of them answered: the prefix is written
    now[0] = 1_000.0
    with gate.hold(["k"]):
        assert "k" in gate._writing  # expired: gated again, this request writes it


def test_waiters_go_when_the_writers_response_begins_not_when_it_ends() -> None:
    gate, watched = _watched()
    writing, begun, second_sent, release = (threading.Event() for _ in range(4))

    def first() -> None:
        with gate.hold(["k"]) as started:
            writing.set()
            begun.wait(30)
            started()  # the stream's message_start has arrived: the prefix is in the cache
            release.wait(30)  # ...while the rest of the answer is still streaming

    def second() -> None:
        with gate.hold(["k"]):
            second_sent.set()

    writer = threading.Thread(target=first)
    writer.start()
    assert writing.wait(30)  # the writer holds the key before the reader asks for it
    reader = threading.Thread(target=second)
    reader.start()
    assert watched.waiting.wait(30), "the reader was never held"
    assert not second_sent.is_set()  # held while the write has not begun
    begun.set()
    assert second_sent.wait(30)  # let go while the writer is still answering
    assert writer.is_alive() and gate._fresh("k") and gate.waits == 1
    release.set()
    for thread in (writer, reader):
        thread.join(30)
