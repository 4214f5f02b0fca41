"""``AnthropicBackend.acomplete`` goes through the prefix gate as ``complete`` does: of
calls sharing a prefix sent together on one event loop, the first writes it and the others
wait, on the loop (it keeps running), until its response begins, then read it. Over HTTP
against the fake, whose cache bills as the API's does."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from stay.models import AnthropicBackend
from stay.models._roles import DEFAULT_MODELS
from stay.requests import ModelAnswer
from tests.models.fake_api import CacheAccounting, FakeMessagesAPI
from tests.models.helpers import KEY, audience_request, quiet

LATENCY = 2.0
"""The fake's first event at 1 s, its last at 2 s: a call let go at the first event is
sent well before the writer's answer ends, even on a loaded machine (CI's took 0.5 s more
than asked to send one at 1.0 s)."""
CALLS = 3


@dataclass
class Arrivals(CacheAccounting):
    """The accounting, noting when each request arrived (``bill`` runs on arrival)."""

    arrived: list[float] = field(default_factory=list)

    def bill(self, body: dict[str, Any], answer: str) -> tuple[dict[str, int], list[str]]:
        self.arrived.append(time.monotonic())
        return super().bill(body, answer)


def _together(*, warm: bool) -> tuple[list[ModelAnswer], Arrivals, int]:
    """``CALLS`` identical calls gathered on one loop, and how often a ticker ran meanwhile."""
    accounting = Arrivals()
    request = audience_request()
    model = DEFAULT_MODELS[request.role]
    with FakeMessagesAPI(accounting, latency=LATENCY) as api:
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
    return answers, accounting, ticks


def test_acomplete_calls_sharing_a_prefix_write_it_once_and_read_it_once_its_response_begins() -> None:
    answers, accounting, ticks = _together(warm=True)
    writes = [a.usage.cache_creation_input_tokens for a in answers]
    reads = [a.usage.cache_read_input_tokens for a in answers]
    assert sum(w > 0 for w in writes) == 1 and sum(r > 0 for r in reads) == CALLS - 1
    first, *rest = sorted(accounting.arrived)
    assert all(at - first < LATENCY for at in rest)  # let go when the response began, not when it ended
    assert ticks > LATENCY / 0.01 / 10  # the loop kept running while calls were held (a blocked one: ~0)


def test_without_the_gate_every_acomplete_call_pays_the_write() -> None:
    """The difference the gate makes, measured the same way (so the test above can fail)."""
    answers, _accounting, _ticks = _together(warm=False)
    assert all(a.usage.cache_creation_input_tokens > 0 for a in answers)
    assert all(a.usage.cache_read_input_tokens == 0 for a in answers)
