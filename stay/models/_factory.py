"""The one place a backend is made from ``Settings``: the runner's, the evals suite's
and the judges' all come from here, through the registry (``stay.models._registry``), so
each backend's factory takes every setting that bears on it, and a setting added later
reaches all of them at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from stay.models._protocol import ModelClient
from stay.models._registry import make_backend
from stay.settings import Settings

if TYPE_CHECKING:
    import anthropic


def backend_from(settings: Settings, *, progress: Callable[[str], None] | None = None,
                 client: anthropic.Anthropic | None = None) -> ModelClient:
    """The backend ``settings`` choose (``Settings.chosen_backend``), made by its registered
    factory. ``client`` is an SDK client made elsewhere (batch scoring's), for Claude
    alone; ``progress`` where a backend says it retries."""
    if client is not None and settings.chosen_backend == "anthropic":
        from stay.models._anthropic import make

        return make(settings, progress=progress, client=client)
    return make_backend(settings.chosen_backend, settings, progress=progress)
