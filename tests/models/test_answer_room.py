"""No dead end at ``max_tokens``: a cut-off answer is asked once more with twice the room,
up to the model's limit (the Models API's ``max_tokens``), and the error that remains
names the command line's fix (``STAY_ANSWER_TOKENS``, ``--answer-tokens``), never a
Python argument. Over real HTTP against ``FakeMessagesAPI``, which thinks and cuts off
as the API does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stay.errors import EXIT_REFUSED, TruncationError
from stay.models import SCREENING, THINKING, AnthropicBackend
from stay.requests import Usage
from stay.settings import Settings
from tests.conftest import run_stay
from tests.models.fake_api import FakeMessagesAPI, tokens
from tests.models.helpers import HTTP, KEY, audience_request, quiet

MODEL = "claude-sonnet-5-5"
ROOM = THINKING["analysis"].room  # the audience's thinking room: the fake thinks all of it


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith(("STAY_MODEL", "STAY_ANSWER", "ANTHROPIC_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")


def _answer_size(api: FakeMessagesAPI) -> int:
    """The audience answer's length in the fake's tokens, as the fake answers it in full."""
    AnthropicBackend(api_key=KEY, base_url=api.url, progress=quiet).complete(audience_request(), MODEL)
    return tokens(json.dumps(api.answers[-1]))


def test_a_cut_off_answer_is_asked_once_more_with_twice_the_room() -> None:
    lines: list[str] = []
    with FakeMessagesAPI(thinking=ROOM) as api:
        size = _answer_size(api)
        room = size - 1  # cut off by one token; twice the room holds it
        answer = AnthropicBackend(api_key=KEY, base_url=api.url, answer_tokens=room,
                                  progress=lines.append).complete(audience_request(), MODEL)
    assert [body["max_tokens"] for body in api.requests[1:]] == [room + ROOM, 2 * room + ROOM]
    assert answer.data == api.answers[-1]
    both = [b.usage for b in api.accounting.billed[1:]]  # the cut-off reply and the retry's, both billed
    assert len(both) == 2 and answer.usage == sum((Usage(**u) for u in both), Usage())
    assert any(f"asking once more with {2 * room} tokens" in line and "STAY_ANSWER_TOKENS" in line
               for line in lines), lines


def test_the_retry_stops_at_the_models_limit_and_the_error_names_the_command_line_fix() -> None:
    with FakeMessagesAPI(thinking=ROOM) as probe:
        size = _answer_size(probe)
    room = size // 3  # twice the room is still too little
    limit = ROOM + room + room // 2  # and the model takes less than twice
    with FakeMessagesAPI(thinking=ROOM, output_limit=limit) as api:
        chosen = AnthropicBackend(api_key=KEY, base_url=api.url, answer_tokens=room, progress=quiet)
        chosen.check_models(Settings().models)  # learns the limit from the Models API
        assert chosen.output_limit(MODEL) == limit
        with pytest.raises(TruncationError) as caught:
            chosen.complete(audience_request(), MODEL)
    assert [body["max_tokens"] for body in api.requests] == [room + ROOM, limit]  # never above the limit
    text = str(caught.value)
    assert f"max_tokens={limit}" in text and f"STAY_ANSWER_TOKENS={2 * (limit - ROOM)}" in text
    assert "--answer-tokens" in text and "AnthropicBackend(" not in text


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_the_answer_room_is_set_from_the_command_line(tmp_path: Path, how: str) -> None:
    room = 5_000
    flag = ["--answer-tokens", str(room)] if how == "flag" else []
    env = {"STAY_ANSWER_TOKENS": str(room)} if how == "environment" else {}
    with FakeMessagesAPI() as api:
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path), *flag,
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY, **env})
    assert done.returncode == 0, done.stderr
    rooms = {thinking.room for thinking in (*THINKING.values(), SCREENING)}
    asked = [body["max_tokens"] for body in (*api.screens, *api.requests)]
    assert asked and all(tokens_ - room in rooms for tokens_ in asked), asked


def test_a_cut_off_screen_from_the_command_line_exits_5_naming_the_setting(tmp_path: Path) -> None:
    with FakeMessagesAPI(thinking=SCREENING.room) as api:  # the screen thinks all its room
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path / "c"),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY, "STAY_ANSWER_TOKENS": "1"})
    assert done.returncode == EXIT_REFUSED, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("refused:")]
    assert len(errors) == 1 and "stage moderation (the brief): the answer was cut off" in errors[0]
    assert "STAY_ANSWER_TOKENS=4" in errors[0] and "AnthropicBackend(" not in errors[0]  # asked at 1, then 2
    assert [body["max_tokens"] for body in api.screens] == [1 + SCREENING.room, 2 + SCREENING.room]
    assert api.requests == [] and not (tmp_path / "c").exists()


def test_an_async_caller_gets_the_same_one_retry() -> None:
    import asyncio

    with FakeMessagesAPI(thinking=ROOM) as api:
        room = _answer_size(api) - 1
        chosen = AnthropicBackend(api_key=KEY, base_url=api.url, answer_tokens=room, progress=quiet)
        answer = asyncio.run(chosen.acomplete(audience_request(), MODEL))
    assert [body["max_tokens"] for body in api.requests[1:]] == [room + ROOM, 2 * room + ROOM]
    assert answer.data == api.answers[-1]
