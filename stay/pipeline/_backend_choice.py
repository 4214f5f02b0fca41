"""Which backend a run uses: the one the settings choose, the models its roles are played
by when the backend names its own, and the line that says so.

Split from ``stay.pipeline._runner`` (which imports these by name, so a test that swaps
``_runner.default_backend`` still reaches the run) to keep the runner readable in one sitting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stay.models import AnthropicBackend, ModelClient, OfflineBackend, backend_from
from stay.pipeline._progress import Progress, default_progress
from stay.settings import DEFAULT_MODELS, Settings


def default_backend(settings: Settings, progress: Progress | None = None) -> ModelClient:
    """The backend the settings choose (``Settings.chosen_backend``), made by the one
    factory (``stay.models.backend_from``, through the registry)."""
    return backend_from(settings, progress=progress or default_progress())


def with_backend_models(settings: Settings, backend: ModelClient) -> Settings:
    """``settings`` whose roles no setting named (each still at Claude's default id) play
    the backend's own ``default_models``, when it has them (the openai backend's: OpenAI's
    ids, or the one model a local server serves). Resolved once, before the ledger's model
    digest, the request cache's keys, the cost cap and the run log read a role's model, so
    all of them name the model that is really asked."""
    if isinstance(backend, (OfflineBackend, AnthropicBackend)) or backend.name == "anthropic":
        return settings
    unset = [role for role, model in settings.models.items() if model == DEFAULT_MODELS[role]]
    if not unset:  # read only when needed: a local server's defaults are asked of it
        return settings
    own: Mapping[str, str] = getattr(backend, "default_models", None) or {}
    unset = [role for role in unset if role in own]
    if not unset:
        return settings
    return settings.replace(models={**settings.models, **{role: own[role] for role in unset}})


def judged_by(settings: Settings, built: Mapping[str, Any]) -> tuple[Settings, str]:
    """What a command that reads a course without building it (status, approve, adopt, the
    viewer) judges its files by, and that backend's name: the backend and models its ledger
    records it was last built with (``built``, hashes.json's), for each role no setting
    names, unless the settings name another backend (``--backend``, ``STAY_BACKEND``),
    whose models are then resolved as a build resolves them (``with_backend_models``)."""
    recorded, models = built.get("backend"), built.get("models")
    if isinstance(recorded, str) and isinstance(models, Mapping) and settings.backend in (None, recorded):
        kept = {role: model for role, model in models.items() if role in settings.models and isinstance(model, str)
                and model.strip() and settings.models[role] == DEFAULT_MODELS[role]}
        return settings.replace(models={**settings.models, **kept}), recorded
    if settings.chosen_backend in ("offline", "anthropic"):
        return settings, settings.chosen_backend
    return with_backend_models(settings, default_backend(settings)), settings.chosen_backend


def announce(settings: Settings, backend: ModelClient, say: Progress) -> None:
    """The one line that says which backend a run uses, and which model plays each role."""
    if isinstance(backend, OfflineBackend):
        say("backend: offline (ANTHROPIC_API_KEY is not set): deterministic template prose, no network"
            if not settings.api_key else "backend: offline (chosen): deterministic template prose, no network")
        return
    models = ", ".join(f"{role} {model}" for role, model in settings.models.items())
    where = getattr(backend, "endpoint", None)
    say(f"backend: {backend.name} ({models}){f' at {where}' if isinstance(where, str) else ''}")
