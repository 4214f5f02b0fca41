"""--max-cost holds every billed request, not only a stage's first ask: the input screen,
and the retry of an answer cut off at max_tokens (the screen's too). Over real HTTP
against the fake Messages API on 127.0.0.1, over a grid of caps at every request's edge,
with the fake's bill priced at the price table's rates."""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stay.errors import EXIT_GATE, EXIT_REFUSED
from stay.models import cost
from stay.models._cache import ROOM_RECORD_BYTES, ROOMS_DIR
from stay.requests import ROLES, Usage
from tests.conftest import run_stay
from tests.models.fake_api import FakeMessagesAPI, stage_of, tokens
from tests.models.helpers import HTTP
from tests.models.test_cost_cap import SLUG, _env, _worst
from tests.models.test_damaged_cache import DAMAGES

ONE_ROOM_MODELS = {f"STAY_MODEL_{role.upper()}": "claude-haiku-4-5" for role in ROLES}
"""A priced model that does not think adaptively, for every role: ``max_tokens`` is the
answer's room alone, so the fake cuts an answer off exactly where STAY_ANSWER_TOKENS ends
and bills that room in full (the worst case's output), as the API bills a cut-off."""


def _design(courses: Path, api: FakeMessagesAPI, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The screen and the design stages, one call at a time (so every run sends the same
    requests in the same order): ``stay new``, or, once the course exists, its rerun."""
    begun = (courses / SLUG / "course.yaml").exists()
    command = ("build", SLUG) if begun else ("new", str(HTTP))
    return run_stay(*command, "--backend", "anthropic", "--courses-dir", str(courses), *flags,
                    env=_env(api, STAY_MODEL_CONCURRENCY="1", **ONE_ROOM_MODELS, **env))


def _priced(model: str, usage: dict[str, int]) -> float:
    price = cost(model, Usage(**usage))
    assert price is not None
    return price


def _sends(api: FakeMessagesAPI) -> list[tuple[dict[str, Any], float]]:
    """Every request the fake billed, in the order sent (the screen comes before any
    stage), with its price at the price table's rates."""
    screens = zip(api.screens, api.screen_usage, strict=True)
    stages = zip(api.requests, (entry.usage for entry in api.accounting.billed), strict=True)
    return [(body, _priced(body["model"], usage)) for body, usage in [*screens, *stages]]


def _spent(api: FakeMessagesAPI) -> float:
    return math.fsum(paid for _body, paid in _sends(api))


def _counted(api: FakeMessagesAPI) -> tuple[int, int, int]:
    """Requests, prompt tokens (however cached) and output tokens the fake billed, screens included."""
    usages = [*api.screen_usage, *(entry.usage for entry in api.accounting.billed)]
    prompt = sum(u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
                 for u in usages)
    return len(usages), prompt, sum(u["output_tokens"] for u in usages)


@dataclass(frozen=True)
class CutOffs:
    room: str
    """STAY_ANSWER_TOKENS that cuts design answers off once and fits each the second time."""
    reference: FakeMessagesAPI
    """One uncapped run at that room: what a capped run and its rerun must add up to."""


@pytest.fixture(scope="module")
def cut_offs(tmp_path_factory: pytest.TempPathFactory) -> CutOffs:
    with FakeMessagesAPI() as roomy:
        assert _design(tmp_path_factory.mktemp("roomy"), roomy).returncode == 0
    sizes = [tokens(json.dumps(answer)) for answer in roomy.answers]  # as the fake measures an answer
    room = math.ceil(max(sizes) / 2)  # the longest fits twice the room: every retry succeeds
    assert sum(size > room for size in sizes) >= 2, sizes  # and more than one answer is cut off first
    with FakeMessagesAPI() as reference:
        done = _design(tmp_path_factory.mktemp("reference"), reference, STAY_ANSWER_TOKENS=str(room))
    assert done.returncode == 0, done.stderr
    assert "was cut off at max_tokens" in done.stderr
    return CutOffs(str(room), reference)


PARTS = 3


def _caps(sends: list[tuple[dict[str, Any], float]]) -> list[float]:
    """Caps at every request's edge: what was billed before it plus its worst case (it
    fits when nothing else is held), and halfway below that (it does not)."""
    caps, before = [], 0.0
    for body, paid in sends:
        worst = _worst(body)
        caps += [before + worst / 2, before + worst]
        before += paid
    return caps


@pytest.mark.sweep
@pytest.mark.parametrize("part", range(PARTS))
def test_no_cap_is_passed_by_a_cut_off_retry_or_the_screen_and_a_rerun_pays_nothing_twice(
        cut_offs: CutOffs, tmp_path: Path, part: int) -> None:
    """Over a grid of caps at every request's edge (the screen's, each first ask, each
    retry with more room), the fake's bill never passes the cap, and a rerun without a cap
    makes the calls and pays the tokens of one uncapped run, no more. The grid is dealt
    into parts, every PARTS-th cap: the first part runs in the default tier."""
    room, reference = cut_offs.room, cut_offs.reference
    caps = _caps(_sends(reference))[part::PARTS]
    stopped = set()
    for index, cap in enumerate(caps):
        courses = tmp_path / f"cap{index}"
        with FakeMessagesAPI() as capped:
            done = _design(courses, capped, "--max-cost", repr(cap), STAY_ANSWER_TOKENS=room)
        assert _spent(capped) <= cap, (cap, done.stderr)
        if done.returncode != 0:
            assert done.returncode == EXIT_REFUSED, done.stderr
            assert "usage:" in done.stdout or not _sends(capped)
            stopped.add(len(_sends(capped)))
        with FakeMessagesAPI() as rerun:
            again = _design(courses, rerun, STAY_ANSWER_TOKENS=room)
        assert again.returncode in (0, EXIT_GATE), again.stderr
        both = tuple(a + b for a, b in zip(_counted(capped), _counted(rerun), strict=True))
        assert both == _counted(reference), (cap, done.stderr)
    assert len(stopped) > len(reference.answers) // 2  # even a part's caps stop runs at many different requests


def _first_cut_off(sends: list[tuple[dict[str, Any], float]], room: str) -> int:
    """The index of the first request cut off at ``room`` (the next one is its retry, at twice the room)."""
    return next(i for i, (body, _paid) in enumerate(sends[:-1])
                if body["max_tokens"] == int(room) and sends[i + 1][0]["max_tokens"] == 2 * int(room))


def test_a_retry_with_more_room_that_could_pass_the_cap_is_not_sent_and_the_cut_off_is_counted(
        cut_offs: CutOffs, tmp_path: Path) -> None:
    sends = _sends(cut_offs.reference)
    first = _first_cut_off(sends, cut_offs.room)
    cut_off = sends[first][0]
    cap = math.fsum(paid for _body, paid in sends[:first]) + _worst(cut_off)  # the first ask just fits
    with FakeMessagesAPI() as capped:
        done = _design(tmp_path, capped, "--max-cost", repr(cap), STAY_ANSWER_TOKENS=cut_offs.room)
    assert done.returncode == EXIT_REFUSED, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "cost cap" in line]
    assert f"asking {stage_of(cut_off)} (" in line and "again with more room" in line, line
    assert capped.requests[-1] == cut_off  # the cut-off reply came, and its retry was never sent
    assert _spent(capped) <= cap
    # the paid cut-off is in stay's count: its calls and tokens are the fake's bill
    calls, _prompt, output = _counted(capped)
    usage = next(line for line in done.stdout.splitlines() if line.startswith(f"usage: {calls} calls;"))
    assert f" {output} output tokens" in usage, usage


def test_the_screen_is_held_like_any_call(cut_offs: CutOffs, tmp_path: Path) -> None:
    """A cap below the screen's worst case stops the run before anything is sent."""
    [screen] = cut_offs.reference.screens
    cap = _worst(screen) / 2
    with FakeMessagesAPI() as capped:
        done = _design(tmp_path, capped, "--max-cost", repr(cap), STAY_ANSWER_TOKENS=cut_offs.room)
    assert done.returncode == EXIT_REFUSED, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "cost cap" in line]
    assert "stopped before moderation (the brief)" in line, line
    assert capped.screens == [] and capped.requests == []  # nothing was sent, nothing paid
    assert not (tmp_path / SLUG).exists()  # the screen comes before anything is written


def _stopped_before_a_retry(cut_offs: CutOffs, courses: Path) -> tuple[FakeMessagesAPI, dict[str, Any]]:
    """A run the cap stops between the first cut-off answer (paid) and its retry: its
    fake, and that cut-off request as it was sent."""
    sends = _sends(cut_offs.reference)
    first = _first_cut_off(sends, cut_offs.room)
    cap = math.fsum(paid for _body, paid in sends[:first]) + _worst(sends[first][0])
    with FakeMessagesAPI() as capped:
        assert _design(courses, capped, "--max-cost", repr(cap),
                       STAY_ANSWER_TOKENS=cut_offs.room).returncode == EXIT_REFUSED
    assert capped.requests[-1] == sends[first][0]
    return capped, sends[first][0]


def test_a_rerun_after_a_stop_before_a_retry_does_not_pay_the_cut_off_again(
        cut_offs: CutOffs, tmp_path: Path) -> None:
    """The rerun asks the cut-off request straight at its retry's room, and the two runs
    pay what one uncapped run does; a replay then finds that answer under the request's key."""
    capped, cut_off = _stopped_before_a_retry(cut_offs, tmp_path)
    with FakeMessagesAPI() as rerun:
        again = _design(tmp_path, rerun, STAY_ANSWER_TOKENS=cut_offs.room)
    assert again.returncode in (0, EXIT_GATE), again.stderr
    sends = [body for body, _paid in _sends(cut_offs.reference)]
    retry = sends[sends.index(cut_off) + 1]  # the reference's retry: the room the cut-off needed
    assert retry in rerun.requests and cut_off not in rerun.requests, again.stderr
    both = tuple(a + b for a, b in zip(_counted(capped), _counted(rerun), strict=True))
    assert both == _counted(cut_offs.reference)
    with FakeMessagesAPI() as replayed:
        done = _design(tmp_path, replayed, "--replay", STAY_ANSWER_TOKENS=cut_offs.room)
    assert done.returncode == again.returncode, done.stderr
    assert replayed.requests == [] and replayed.screens == []


@pytest.mark.parametrize("fits", [False, True], ids=["below", "at"])
def test_a_capped_rerun_holds_the_remembered_room_in_place_of_the_old_one(
        fits: bool, cut_offs: CutOffs, tmp_path: Path) -> None:
    """The rerun's cap is held for the remembered room before it asks: below that room's
    worst case (though above the old room's) nothing is sent; at it, the request is sent,
    at that room, because its worst case takes the old room's place rather than adding to it."""
    _capped, cut_off = _stopped_before_a_retry(cut_offs, tmp_path)
    sends = [body for body, _paid in _sends(cut_offs.reference)]
    retry = sends[sends.index(cut_off) + 1]
    # this run pays nothing before that request: every answer before it is cached
    cap = _worst(retry) if fits else (_worst(cut_off) + _worst(retry)) / 2
    assert _worst(cut_off) < cap < _worst(cut_off) + _worst(retry)  # the two held together would not fit
    with FakeMessagesAPI() as rerun:
        done = _design(tmp_path, rerun, "--max-cost", repr(cap), STAY_ANSWER_TOKENS=cut_offs.room)
    assert _spent(rerun) <= cap and rerun.screens == [], done.stderr
    if fits:
        assert rerun.requests[:1] == [retry], done.stderr
        return
    assert done.returncode == EXIT_REFUSED, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "cost cap" in line]
    assert f"asking {stage_of(cut_off)} (" in line and "with more room (an earlier run's" in line, line
    assert rerun.requests == [], done.stderr


def test_the_screens_retry_with_more_room_is_held_too(cut_offs: CutOffs, tmp_path: Path) -> None:
    """The screen's verdict cut off at a room of half its length: its first ask fits the
    cap, its retry does not, and is never sent; the cut-off screen is counted."""
    [screen], [usage] = cut_offs.reference.screens, cut_offs.reference.screen_usage
    room = math.ceil(usage["output_tokens"] / 2)
    cap = _worst({**screen, "max_tokens": room})  # the first ask just fits
    with FakeMessagesAPI() as capped:
        done = _design(tmp_path, capped, "--max-cost", repr(cap), STAY_ANSWER_TOKENS=str(room))
    assert done.returncode == EXIT_REFUSED, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "cost cap" in line]
    assert "asking moderation (the brief) again with more room" in line, line
    assert [body["max_tokens"] for body in capped.screens] == [room] and capped.requests == []
    assert _spent(capped) <= cap
    assert any(line.startswith("usage: moderation: 1 call;") for line in done.stdout.splitlines()), done.stdout


@pytest.mark.parametrize("asynchronous", [False, True], ids=["complete", "acomplete"])
def test_the_backend_tells_the_hook_of_a_retry_before_it_sends_it(asynchronous: bool) -> None:
    """``hold_more`` is told the retry's parameters and the cut-off reply it paid for; when
    it refuses, the retry is never sent (both the thread and the asyncio paths)."""
    import asyncio

    from stay.errors import CostCapReached
    from stay.models import AnthropicBackend, ModelAnswer, holding
    from tests.models.helpers import KEY, audience_request, quiet

    model, request = ONE_ROOM_MODELS["STAY_MODEL_ANALYSIS"], audience_request()
    told: list[tuple[dict[str, Any], ModelAnswer | None]] = []

    def refuse(params: dict[str, Any], paid: ModelAnswer | None) -> None:
        told.append((params, paid))
        raise CostCapReached("no room for the retry")

    with FakeMessagesAPI() as probe:
        AnthropicBackend(api_key=KEY, base_url=probe.url, progress=quiet).complete(request, model)
    room = tokens(json.dumps(probe.answers[-1])) - 1  # cut off by one token; twice the room holds it
    with FakeMessagesAPI() as api:
        chosen = AnthropicBackend(api_key=KEY, base_url=api.url, answer_tokens=room, progress=quiet)
        with holding(refuse), pytest.raises(CostCapReached):
            if asynchronous:
                asyncio.run(chosen.acomplete(request, model))
            else:
                chosen.complete(request, model)
    assert [body["max_tokens"] for body in api.requests] == [room]  # the retry was never sent
    [(params, paid)] = told
    assert params["max_tokens"] == 2 * room and params["messages"] == api.requests[0]["messages"]
    assert paid is not None and paid.usage == Usage(**api.accounting.billed[0].usage)


ROOM_DAMAGES: dict[str, str] = {"negative": '{"answer_tokens": -5}', "zero": '{"answer_tokens": 0}',
                                "a bool": '{"answer_tokens": true}', "a string": '{"answer_tokens": "900"}',
                                "a float": '{"answer_tokens": 900.0}', "not an object": "[900]",
                                "oversized": json.dumps({"answer_tokens": 900, "pad": "x" * ROOM_RECORD_BYTES})}
"""Damage only a room record can have, beside every damage a cache entry can (``DAMAGES``)."""


@pytest.mark.parametrize("kind", [*(k for k in DAMAGES if k != "negative usage"), *ROOM_DAMAGES])
def test_a_damaged_room_record_is_ignored(kind: str, tmp_path: Path) -> None:
    """A room record is untrusted on read: damaged in any way, it is no record (the request
    is asked at its configured room), never an error; a sound one is read back."""
    from stay.models import RequestCache
    from tests.models.helpers import audience_request

    cache, request, model = RequestCache(tmp_path / "cache"), audience_request(), ONE_ROOM_MODELS["STAY_MODEL_ANALYSIS"]
    cache.remember_room(request, model, 900)
    assert cache.room(request, model) == 900
    [record] = (tmp_path / "cache" / ROOMS_DIR).glob("*.json")
    if kind in ROOM_DAMAGES:
        record.write_text(ROOM_DAMAGES[kind])
    else:
        DAMAGES[kind](record)
    assert cache.room(request, model) is None
    assert cache.get(request, model) is None and "no cached request" in cache.explain_miss(request, model)


def test_a_remembered_room_is_asked_at_once_held_first_and_bounded_by_the_models_limit() -> None:
    """Inside the request cache's ``sizing``, the backend's first request goes out at the
    remembered room, up to the model's limit, told to the cap's hook first (no reply paid
    yet); a cut-off then is recorded before its retry is held."""
    from stay.errors import TruncationError
    from stay.models import AnthropicBackend, ModelAnswer, holding
    from stay.models._protocol import Room, sizing
    from tests.models.helpers import KEY, audience_request, quiet

    model, request = ONE_ROOM_MODELS["STAY_MODEL_ANALYSIS"], audience_request()
    told: list[tuple[int, ModelAnswer | None]] = []
    remembered: list[int] = []
    with FakeMessagesAPI() as api:
        backend = AnthropicBackend(api_key=KEY, base_url=api.url, answer_tokens=1, progress=quiet)
        limit = backend.output_limit(model)
        with holding(lambda params, paid: told.append((params["max_tokens"], paid))), \
                sizing(Room(10 * limit, remembered.append)):
            backend.complete(request, model)
        with holding(lambda params, paid: told.append((params["max_tokens"], paid))), \
                sizing(Room(None, remembered.append)), pytest.raises(TruncationError):
            backend.complete(request, model)  # cut off at one token: recorded, then retried (cut off again)
    assert [body["max_tokens"] for body in api.requests] == [limit, 1, 2]
    assert [room for room, _paid in told] == [limit, 2] and told[0][1] is None and told[1][1] is not None
    assert remembered == [2]
