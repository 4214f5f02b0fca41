"""A configuration error is an error: a mistyped model id or a rejected credential stops
the run in one line, exit 2, before anything is paid or written; the screen fails open
only when the service is unreachable. And a gateway's bearer token (ANTHROPIC_AUTH_TOKEN)
authenticates without a key. All over real HTTP against ``FakeMessagesAPI``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stay.errors import EXIT_USAGE, UsageError, exit_code
from stay.models import AnthropicBackend
from stay.pipeline import build_course
from stay.settings import DEFAULT_MODELS, ROLES, Settings
from tests.conftest import run_stay
from tests.models.fake_api import KNOWN_MODELS, FakeMessagesAPI
from tests.models.helpers import HTTP, KEY, quiet

TYPO = "claude-sonet-5-5"
TOKEN = "gw-token-NOT-REAL-4f1c2a9d"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith(("STAY_MODEL", "ANTHROPIC_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")


def test_the_fake_knows_the_default_models_and_not_the_typo() -> None:
    assert set(DEFAULT_MODELS.values()) <= KNOWN_MODELS and TYPO not in KNOWN_MODELS  # else the tests prove nothing


@pytest.mark.parametrize("role", ROLES)
def test_a_mistyped_model_is_one_line_naming_its_setting_exit_2_before_anything_is_paid(
        tmp_path: Path, role: str) -> None:
    setting = f"STAY_MODEL_{role.upper()}"
    with FakeMessagesAPI() as api:
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path / "c"),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY, setting: TYPO})
    assert done.returncode == EXIT_USAGE, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{setting}={TYPO}" in errors[0] and "404" in errors[0], done.stderr
    assert TYPO in api.model_checks
    assert api.requests == [] and api.screens == []  # nothing was paid
    assert not (tmp_path / "c").exists()  # nothing was written


def test_the_model_ids_are_checked_once_a_process_and_not_for_a_given_backend(tmp_path: Path) -> None:
    settings = Settings(api_key=KEY, base_url=None)
    with FakeMessagesAPI() as api:
        chosen = settings.replace(base_url=api.url)
        build_course(HTTP, courses_dir=tmp_path / "a", settings=chosen, progress=quiet)
        build_course(HTTP, courses_dir=tmp_path / "b", settings=chosen, progress=quiet)
        assert sorted(api.model_checks) == sorted(set(chosen.models.values()))  # each distinct id, once
        given = AnthropicBackend(api_key=KEY, base_url=api.url, screen_model=TYPO)
        with pytest.raises(UsageError):
            build_course(HTTP, courses_dir=tmp_path / "c", backend=given, progress=quiet)
        assert TYPO not in api.model_checks  # the screen met it, not the check


def test_a_gateway_without_the_models_api_builds_as_before(tmp_path: Path) -> None:
    with FakeMessagesAPI(models_api=False) as api:
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": KEY})
    assert done.returncode == 0, done.stderr
    assert api.model_checks and api.requests  # asked, answered with a route's 404, and built all the same


def test_offline_checks_no_model(tmp_path: Path) -> None:
    with FakeMessagesAPI() as api:
        build_course(HTTP, courses_dir=tmp_path, settings=Settings(base_url=api.url, backend="offline"),
                     progress=quiet)
    assert api.model_checks == [] and api.seen_auth == []


@pytest.mark.parametrize("credentials, screen_model, setting", [
    (None, TYPO, f"STAY_MODEL_ANALYSIS={TYPO}"),  # 404: the screen's model does not exist
    (frozenset({"another-key"}), DEFAULT_MODELS["analysis"], "ANTHROPIC_API_KEY"),  # 401: the key is rejected
])
def test_a_4xx_on_the_screen_is_a_usage_error_not_a_build_unscreened(
        tmp_path: Path, credentials: frozenset[str] | None, screen_model: str, setting: str) -> None:
    lines: list[str] = []
    with FakeMessagesAPI(credentials=credentials) as api:
        given = AnthropicBackend(api_key=KEY, base_url=api.url, screen_model=screen_model, max_retries=0)
        with pytest.raises(UsageError) as caught:
            build_course(HTTP, courses_dir=tmp_path / "c", backend=given, progress=lines.append)
    message = str(caught.value)
    assert exit_code(caught.value) == EXIT_USAGE and "\n" not in message
    assert message.startswith("stage moderation (the brief)") and setting in message, message
    assert KEY not in message
    assert not any(line.startswith("warning: input moderation failed") for line in lines)
    assert api.requests == [] and not (tmp_path / "c").exists()


def test_a_gateway_token_authenticates_as_a_bearer_and_is_never_shown(tmp_path: Path) -> None:
    with FakeMessagesAPI(credentials=frozenset({TOKEN})) as api:
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path / "c"),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_AUTH_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr
    assert "backend: anthropic" in done.stderr and api.requests  # the token chose the real backend
    assert api.seen_auth and set(api.seen_auth) == {("bearer", TOKEN)}  # every request carried it
    assert TOKEN not in done.stdout + done.stderr


def test_a_rejected_gateway_token_is_one_line_naming_it_and_not_showing_it(tmp_path: Path) -> None:
    with FakeMessagesAPI(credentials=frozenset({"the-right-token"})) as api:
        done = run_stay("new", str(HTTP), "--courses-dir", str(tmp_path / "c"),
                        env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_AUTH_TOKEN": TOKEN})
    assert done.returncode == EXIT_USAGE, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "ANTHROPIC_AUTH_TOKEN was rejected (401)" in errors[0], done.stderr
    assert TOKEN not in done.stdout + done.stderr
    assert api.requests == [] and api.screens == [] and not (tmp_path / "c").exists()


def test_the_token_is_a_secret_and_a_key_wins_over_it() -> None:
    settings = Settings.from_env({"ANTHROPIC_AUTH_TOKEN": f" {TOKEN}\n"})
    assert settings.auth_token == TOKEN and settings.chosen_backend == "anthropic" and TOKEN in settings.secrets
    assert TOKEN not in repr(settings)
    both = AnthropicBackend(api_key=KEY, auth_token=TOKEN, base_url="http://127.0.0.1:9")
    assert both.client.api_key == KEY and both.client.auth_token is None  # the SDK's own precedence
