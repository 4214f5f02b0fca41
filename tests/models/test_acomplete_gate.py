"""``AnthropicBackend.acomplete`` goes through the prefix gate as ``complete`` does: of
calls sharing a prefix sent together on one event loop, the first writes it and the others
wait, on the loop (it keeps running), until its response begins, then read it. Over HTTP
against the fake, whose cache bills as the API's does."""

from __future__ import annotations

import asyncio

from stay.models import AnthropicBackend
from stay.models._protocol import DEFAULT_MODELS
from stay.requests import ModelAnswer
from tests.models.fake_api import CacheAccounting, FakeMessagesAPI
from tests.models.helpers import KEY, audience_request, quiet

LATENCY = 2.0
"""The fake's first event at 1 s: the time the calls wait on the loop, while a ticker counts."""
CALLS = 3


def _together(*, warm: bool) -> tuple[list[ModelAnswer], FakeMessagesAPI, int]:
    """``CALLS`` identical calls gathered on one loop, and how often a ticker ran meanwhile.
    The fake holds them as the test needs, not by a clock a loaded machine could outrun:
    with the gate, the writer's answer streams on until the others have arrived (so a gate
    that let them go only at its end is seen to: they arrive after it ended); without, no
    answer begins before all of them are in flight."""
    request = audience_request()
    model = DEFAULT_MODELS[request.role]
    held = frozenset({request.stage})
    with FakeMessagesAPI(CacheAccounting(), latency=LATENCY, held=held,
                         **({"hold_for": CALLS - 1} if warm else {"gather": CALLS})) as api:
        backend = AnthropicBackend(api_key=KEY, base_url=api.url, warm_prefixes=warm, progress=quiet)
        ticks = 0

        async def ticker(done: asyncio.Event) -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        async def run() -> list[ModelAnswer]:
            done = asyncio.Event()
            ticking = asyncio.create_task(ticker(done))
            answers = await asyncio.gather(*(backend.acomplete(request, model) for _ in range(CALLS)))
            done.set()
            await ticking
            return list(answers)

        answers = asyncio.run(run())
    return answers, api, ticks


def test_acomplete_calls_sharing_a_prefix_write_it_once_and_read_it_once_its_response_begins() -> None:
    answers, api, ticks = _together(warm=True)
    writes = [a.usage.cache_creation_input_tokens for a in answers]
    reads = [a.usage.cache_read_input_tokens for a in answers]
    assert sum(w > 0 for w in writes) == 1 and sum(r > 0 for r in reads) == CALLS - 1
    # let go when the response began, not when it ended: the others arrived while it answered
    assert [answering for _stage, answering in api.arrivals] == [0] + [1] * (CALLS - 1)
    assert ticks > LATENCY / 0.01 / 10  # the loop kept running while calls were held (a blocked one: ~0)


def test_without_the_gate_every_acomplete_call_pays_the_write() -> None:
    """The difference the gate makes, measured the same way (so the test above can fail)."""
    answers, _accounting, _ticks = _together(warm=False)
    assert all(a.usage.cache_creation_input_tokens > 0 for a in answers)
    assert all(a.usage.cache_read_input_tokens == 0 for a in answers)
