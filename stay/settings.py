"""Settings: everything a run can be told from outside, in one typed object.

The environment is read in one place, ``Settings.from_env``, by whoever stands at the
edge (the command line; ``build_course`` when it is given no settings), and the object
is passed down: no other module of stay reads ``os.environ``. A value that cannot be
used is a one-line ``UsageError`` naming the variable and what it takes.

    variable                      field                 default
    STAY_BACKEND                  backend               anthropic with a key, else offline
    ANTHROPIC_API_KEY             api_key               (none; stripped; never shown)
    ANTHROPIC_AUTH_TOKEN          auth_token            (none; a gateway's bearer token, used without a key)
    ANTHROPIC_BASE_URL            base_url              the SDK's
    OPENAI_API_KEY                openai_api_key        (none; the openai backend's; never shown)
    OPENAI_BASE_URL               openai_base_url       OpenAI's (any OpenAI-compatible server)
    STAY_MODEL, STAY_MODEL_<ROLE> models                DEFAULT_MODELS
    STAY_WAVE_CONCURRENCY         wave_concurrency      4 lessons in flight
    STAY_MODEL_CONCURRENCY        model_concurrency     8 model calls in flight
    STAY_REPAIR_ROUNDS            repair_rounds         2
    STAY_REQUEST_TIMEOUT          request_timeout       300 seconds per request
    STAY_RETRY_AFTER_CAP          retry_after_cap       60: a longer retry-after stops the call
    STAY_MAX_RETRIES              max_retries           4
    STAY_CALL_DEADLINE            call_deadline         per call, retries included: max_tokens at 20/s, >= 600 s
    STAY_ANSWER_TOKENS            answer_tokens         each stage's own room (stay.models.MAX_TOKENS)
    STAY_MAX_COST                 max_cost              no cap: US dollars a run may spend (stay.pipeline._run)
    STAY_BATCH_POLL_SECONDS       batch_poll_seconds    30
    STAY_PROMPTS_DIR              prompts_dir           the packaged prompts/
    STAY_DATA_DIR                 data_dir              ./data, else the packaged data/
    STAY_CACHE                    cache                 auto: on for a model, off offline
    SOURCE_DATE_EPOCH             source_date_epoch     the clock
    OTEL_EXPORTER_OTLP_*          otlp                  no export
    OTEL_SERVICE_NAME             otlp                  service.name stay
    OTEL_SDK_DISABLED             otlp                  false (true: no export)
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT  otlp  false (true: prompts and answers exported)

Beside it, so this module reads in one sitting: the backends by name
(``stay._backend_names``), the reading of one variable's value (``stay._env_values``) and
the OTLP target (``stay._otlp_target``); their names are still imported from here.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from stay import _secrets

# split out of this module (the ``as`` form re-exports): still imported from here by name
from stay._backend_names import BACKEND_GROUP as BACKEND_GROUP
from stay._backend_names import BUILTIN_BACKENDS as BUILTIN_BACKENDS
from stay._backend_names import BackendName as BackendName
from stay._backend_names import checked_backend as checked_backend
from stay._backend_names import registered_backends as registered_backends
from stay._env_values import _Reader
from stay._env_values import checked_key as checked_key
from stay._otlp_target import CAPTURE_CONTENT as CAPTURE_CONTENT
from stay._otlp_target import OtlpTarget as OtlpTarget
from stay._otlp_target import otlp_from as otlp_from
from stay._otlp_target import parse_headers as parse_headers
from stay.errors import UsageError

Role = Literal["analysis", "planning", "writing", "judging"]
"""What a model does in the pipeline: each role is played by one model (``Settings.models``)."""
ROLES: tuple[Role, ...] = ("analysis", "planning", "writing", "judging")

DEFAULT_MODELS: Mapping[Role, str] = {
    # The current generation as of late 2026; none is on the SDK's deprecation list.
    # Planning gets the strongest model because every later stage inherits its mistakes;
    # writing a cheaper one because it runs once per lesson per artefact and is checked
    # mechanically afterwards.
    "analysis": "claude-sonnet-5-5",
    "planning": "claude-opus-5-5",
    "writing": "claude-sonnet-5-5",
    "judging": "claude-sonnet-5-5",
}


def environment() -> Mapping[str, str]:
    """The process environment: the only place stay reads it."""
    return os.environ


@dataclass(frozen=True)
class Settings:
    """What a run is told from outside. Frozen: ``settings.replace(...)`` for a variant."""

    backend: BackendName | None = None
    """None: anthropic when an API key is set, else offline; else a registered backend's name."""
    api_key: str | None = field(default=None, repr=False)
    auth_token: str | None = field(default=None, repr=False)
    """A gateway's bearer token (``Authorization: Bearer``), sent only when there is no key."""
    base_url: str | None = None
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    """An OpenAI-compatible server (the openai backend's); None: OpenAI's own."""
    models: Mapping[Role, str] = field(default_factory=lambda: dict(DEFAULT_MODELS))
    wave_concurrency: int = 4
    model_concurrency: int = 8
    repair_rounds: int = 2
    request_timeout: float = 300.0
    retry_after_cap: float = 60.0
    max_retries: int = 4
    call_deadline: float | None = None
    """None: each call's own (``stay.models._anthropic.default_deadline``)."""
    answer_tokens: int | None = None
    """Every answer's room in tokens (thinking comes on top); None: each stage's own."""
    max_cost: float | None = None
    """US dollars a run may spend: a call whose worst case would pass it is not made
    (``stay.pipeline._run.CostCap``); None: no cap."""
    batch_poll_seconds: float = 30.0
    prompts_dir: Path | None = None
    """None: the prompts shipped with stay."""
    data_dir: Path | None = None
    """None: ./data when it exists, else the data shipped with stay."""
    data_from: Literal["prompts", "data"] | None = None
    """Which wins when the prompts' bloom-verbs.yaml or house-style.yaml differs from the
    data directory's (``--data-from``; ``stay.pipeline._commands``): None refuses the run."""
    cache: bool | None = None
    """The request cache under <course>/.runs/cache/: None is on for a model, off offline."""
    source_date_epoch: int | None = None
    """When set, the time every ledger records (reproducible builds)."""
    otlp: OtlpTarget | None = None

    def __post_init__(self) -> None:
        if self.api_key is not None:
            object.__setattr__(self, "api_key", checked_key(self.api_key))
        if self.auth_token is not None:
            object.__setattr__(self, "auth_token", checked_key(self.auth_token, "ANTHROPIC_AUTH_TOKEN") or None)
        if self.openai_api_key is not None:
            object.__setattr__(self, "openai_api_key", checked_key(self.openai_api_key, "OPENAI_API_KEY") or None)
        _secrets.keep(self.secrets)
        if self.backend is not None:
            checked_backend(self.backend)
        if self.data_from not in (None, "prompts", "data"):
            raise UsageError(f"data_from is {self.data_from!r}; give 'prompts' or 'data' (or None)")
        for name, least in (("wave_concurrency", 1), ("model_concurrency", 1), ("repair_rounds", 0),
                            ("max_retries", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise UsageError(f"{name} must be a whole number of at least {least}, not {value!r}")
        if self.answer_tokens is not None and (not isinstance(self.answer_tokens, int) or
                                               isinstance(self.answer_tokens, bool) or self.answer_tokens < 1):
            raise UsageError(f"answer_tokens must be a whole number of at least 1, not {self.answer_tokens!r}")
        if self.max_cost is not None and (not isinstance(self.max_cost, int | float) or
                                          isinstance(self.max_cost, bool) or not 0 < self.max_cost < float("inf")):
            raise UsageError(f"max_cost must be a number of US dollars above 0, not {self.max_cost!r}")
        for name, zero in (("request_timeout", False), ("retry_after_cap", False), ("batch_poll_seconds", True),
                           ("call_deadline", False)):
            seconds = getattr(self, name)
            if name == "call_deadline" and seconds is None:
                continue
            if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not (
                    seconds >= 0 if zero else seconds > 0):
                raise UsageError(f"{name} must be a number of seconds {'of at least' if zero else 'above'} 0, "
                                 f"not {seconds!r}")
        unknown = set(self.models) - set(ROLES)
        if unknown or not all(isinstance(m, str) and m.strip() for m in self.models.values()):
            raise UsageError(f"models must map the roles {', '.join(ROLES)} to model ids")
        object.__setattr__(self, "models", {role: self.models.get(role, DEFAULT_MODELS[role]) for role in ROLES})

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every configured secret, by value: the API key, the userinfo of
        ``ANTHROPIC_BASE_URL``, the OTLP endpoint's and its headers' (``stay._secrets``
        cuts them out of everything printed or written)."""
        otlp = self.otlp.secrets if self.otlp is not None else ()
        return (*([self.api_key] if self.api_key else []), *([self.auth_token] if self.auth_token else []),
                *_secrets.url_secrets(self.base_url), *otlp,
                *([self.openai_api_key] if self.openai_api_key else []), *_secrets.url_secrets(self.openai_base_url))

    @property
    def chosen_backend(self) -> BackendName:
        return self.backend or ("anthropic" if self.api_key or self.auth_token else "offline")

    def model(self, role: Role) -> str:
        """The model id that plays ``role``."""
        return self.models[role]

    def replace(self, **changes: Any) -> Settings:
        """These settings with some fields changed (None leaves a field as it is)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def resolved_data_dir(self) -> Path:
        """The house style this run is checked against (``resolve_data_dir``)."""
        return resolve_data_dir(self.data_dir)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from the environment (``environ`` defaults to the process's), then
        ``overrides`` (keyword arguments; None leaves the environment's value)."""
        env = environment() if environ is None else environ
        read = _Reader(env)
        models = {role: (env.get(f"STAY_MODEL_{role.upper()}") or env.get("STAY_MODEL") or DEFAULT_MODELS[role]).strip()
                  for role in ROLES}
        values: dict[str, Any] = {
            "backend": read.backend("STAY_BACKEND"),
            "api_key": checked_key(env.get("ANTHROPIC_API_KEY", "")) or None,
            "auth_token": checked_key(env.get("ANTHROPIC_AUTH_TOKEN", ""), "ANTHROPIC_AUTH_TOKEN") or None,
            "base_url": env.get("ANTHROPIC_BASE_URL") or None,
            "openai_api_key": checked_key(env.get("OPENAI_API_KEY", ""), "OPENAI_API_KEY") or None,
            "openai_base_url": env.get("OPENAI_BASE_URL", "").strip() or None,
            "models": models,
            "wave_concurrency": read.integer("STAY_WAVE_CONCURRENCY", 4, least=1),
            "model_concurrency": read.integer("STAY_MODEL_CONCURRENCY", 8, least=1),
            "repair_rounds": read.integer("STAY_REPAIR_ROUNDS", 2, least=0),
            "request_timeout": read.seconds("STAY_REQUEST_TIMEOUT", 300.0),
            "retry_after_cap": read.seconds("STAY_RETRY_AFTER_CAP", 60.0),
            "max_retries": read.integer("STAY_MAX_RETRIES", 4, least=0),
            "call_deadline": read.seconds("STAY_CALL_DEADLINE", 0.0) or None,  # 0 is refused when given
            "answer_tokens": read.integer("STAY_ANSWER_TOKENS", 0, least=1) or None,
            "max_cost": read.dollars("STAY_MAX_COST"),
            "batch_poll_seconds": read.seconds("STAY_BATCH_POLL_SECONDS", 30.0, zero=True),
            "prompts_dir": read.path("STAY_PROMPTS_DIR"),
            "data_dir": data_dir_from(env),
            "cache": read.switch("STAY_CACHE"),
            "source_date_epoch": read.epoch("SOURCE_DATE_EPOCH"),
            "otlp": otlp_from(env),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def packaged_data_dir() -> Path:
    """The data directory shipped with stay: inside the wheel, or the checkout's data/."""
    here = Path(__file__).resolve().parent
    wheel = here / "_data"
    return wheel if wheel.is_dir() else here.parent / "data"


def resolve_data_dir(chosen: str | os.PathLike[str] | None) -> Path:
    """The one resolution of the data directory, for a run and for ``stay validate``
    alike: the one chosen (``Settings.data_dir``, ``--data-dir``, ``STAY_DATA_DIR``),
    else ``./data`` (the contract's default), else the data shipped with stay (so the
    validator works from any directory after a plain ``pip install``)."""
    if chosen is not None:
        return Path(chosen)
    local = Path("data")
    return local if local.is_dir() else packaged_data_dir()


def data_dir_from(env: Mapping[str, str] | None = None) -> Path | None:
    """``STAY_DATA_DIR`` alone: the validator's data directory (its contract's default),
    read without the rest of the settings, so a bad unrelated variable never stops it."""
    raw = (environment() if env is None else env).get("STAY_DATA_DIR", "").strip()
    return Path(raw) if raw else None


def secrets_from(env: Mapping[str, str] | None = None) -> list[str]:
    """Every secret the environment holds, as written and as read, without checking
    anything (for the last line a failing command prints: it never raises)."""
    env = environment() if env is None else env
    key, token = env.get("ANTHROPIC_API_KEY", ""), env.get("ANTHROPIC_AUTH_TOKEN", "")
    found = [key, key.strip(), token, token.strip(), *_secrets.url_secrets(env.get("ANTHROPIC_BASE_URL"))]
    found += [env.get("OPENAI_API_KEY", ""), env.get("OPENAI_API_KEY", "").strip(),
              *_secrets.url_secrets(env.get("OPENAI_BASE_URL"))]
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        found += _secrets.url_secrets(env.get(name))
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        found += _secrets.header_secrets(env.get(name))
    return [value for value in found if value]
