"""The one place a backend is made from ``Settings``: the runner's, the evals suite's
and the judges' all come from here, so each takes every setting that bears on it (the
key or token and URL, the screening model, the answers' room, the timeout, the retries and the retry-after cap),
and a setting added later reaches all of them at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from stay.models._anthropic import AnthropicBackend
from stay.models._offline import OfflineBackend
from stay.models._protocol import ModelClient
from stay.settings import Settings

if TYPE_CHECKING:
    import anthropic


def backend_from(settings: Settings, *, progress: Callable[[str], None] | None = None,
                 client: anthropic.Anthropic | None = None) -> ModelClient:
    """The backend ``settings`` choose (``Settings.chosen_backend``): Claude as they
    configure it, or the offline backend. ``client`` is an SDK client made elsewhere
    (batch scoring's), ``progress`` where the Claude backend says it retries."""
    if settings.chosen_backend == "offline":
        return OfflineBackend()
    if settings.chosen_backend == "openai":  # until the stay.backends registry finds it by name
        from stay.models import _openai

        return _openai.make(settings, progress=progress)
    return AnthropicBackend(client, api_key=settings.api_key, auth_token=settings.auth_token,
                            base_url=settings.base_url, progress=progress,
                            screen_model=settings.model("analysis"), timeout=settings.request_timeout,
                            max_retries=settings.max_retries, retry_after_cap=settings.retry_after_cap,
                            call_deadline=settings.call_deadline,
                            answer_tokens=settings.answer_tokens)
