"""Settings: everything a run can be told from outside, in one typed object. ``Settings.from_env``
is the only reader of ``os.environ``, called at the edge and passed down; an unusable value is a one-line
``UsageError`` naming the variable. The variables: docs/commands.md, "Settings". The backends are known
by name here (entry points, nothing loaded), so ``--help`` lists them without importing one."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote

from stay import _secrets
from stay.errors import UsageError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

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

    backend: BackendName | None = None  # None: anthropic when an API key is set, else offline
    api_key: str | None = field(default=None, repr=False)
    auth_token: str | None = field(default=None, repr=False)  # a gateway's bearer token, sent without a key
    base_url: str | None = None
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None  # an OpenAI-compatible server; None: OpenAI's own
    models: Mapping[Role, str] = field(default_factory=lambda: dict(DEFAULT_MODELS))
    wave_concurrency: int = 4
    model_concurrency: int = 8
    repair_rounds: int = 2
    request_timeout: float = 300.0
    retry_after_cap: float = 60.0
    max_retries: int = 4
    call_deadline: float | None = None  # None: each call's own
    answer_tokens: int | None = None  # every answer's room (thinking on top); None: each stage's own
    max_cost: float | None = None
    """US dollars a run may spend: a call whose worst case would pass it is not made."""
    batch_poll_seconds: float = 30.0
    prompts_dir: Path | None = None  # None: the packaged prompts
    data_dir: Path | None = None  # None: ./data when it exists, else the packaged data
    cache: bool | None = None  # the request cache: None is on for a model, off offline
    source_date_epoch: int | None = None  # when set, the time every ledger records
    otlp: OtlpTarget | None = None

    def __post_init__(self) -> None:
        for name, variable in _KEYS.items():
            # a blank api_key stays "" (the SDK would read None as "use the environment's"), as it always has
            if (value := getattr(self, name)) is not None:
                checked = checked_key(value, variable)
                object.__setattr__(self, name, checked if name == "api_key" else checked or None)
        _secrets.keep(self.secrets)
        if self.backend is not None:
            checked_backend(self.backend)
        unset = {f.name for f in dataclasses.fields(self) if f.default is None and getattr(self, f.name) is None}
        for name, least in _WHOLE.items():
            value = getattr(self, name)
            if name not in unset and (not isinstance(value, int) or isinstance(value, bool) or value < least):
                raise UsageError(f"{name} must be a whole number of at least {least}, not {value!r}")
        if self.max_cost is not None and (not isinstance(self.max_cost, int | float) or
                                          isinstance(self.max_cost, bool) or not 0 < self.max_cost < float("inf")):
            raise UsageError(f"max_cost must be a number of US dollars above 0, not {self.max_cost!r}")
        for name, zero in _SECONDS.items():
            seconds = getattr(self, name)
            if name not in unset and (not isinstance(seconds, int | float) or isinstance(seconds, bool) or not (
                    seconds >= 0 if zero else seconds > 0)):
                raise UsageError(f"{name} must be a number of seconds {'of at least' if zero else 'above'} 0, "
                                 f"not {seconds!r}")
        unknown = set(self.models) - set(ROLES)
        if unknown or not all(isinstance(m, str) and m.strip() for m in self.models.values()):
            raise UsageError(f"models must map the roles {', '.join(ROLES)} to model ids")
        object.__setattr__(self, "models", {role: self.models.get(role, DEFAULT_MODELS[role]) for role in ROLES})

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every configured secret, by value (``stay._secrets`` cuts them out of all output)."""
        otlp = self.otlp.secrets if self.otlp is not None else ()
        return (*(getattr(self, name) for name in _KEYS if getattr(self, name)), *_secrets.url_secrets(self.base_url),
                *otlp, *_secrets.url_secrets(self.openai_base_url))

    @property
    def chosen_backend(self) -> BackendName:
        return self.backend or ("anthropic" if self.api_key or self.auth_token else "offline")

    def model(self, role: Role) -> str:
        return self.models[role]

    def replace(self, **changes: Any) -> Settings:
        """These settings with some fields changed (None leaves a field as it is)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def resolved_data_dir(self) -> Path:
        return resolve_data_dir(self.data_dir)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from the environment, then ``overrides`` (None leaves the environment's value)."""
        env = environment() if environ is None else environ

        def read(name: str, parse: Callable[..., Any], **options: Any) -> Any:
            """The variable parsed, refused in one line if it cannot be used; None when unset or blank."""
            raw = env.get(name, "").strip()
            return parse(name, raw, **options) if raw else None

        models = {role: (env.get(f"STAY_MODEL_{role.upper()}") or env.get("STAY_MODEL") or DEFAULT_MODELS[role]).strip()
                  for role in ROLES}
        values: dict[str, Any] = {
            "backend": read("STAY_BACKEND", lambda name, raw: checked_backend(raw, name)),
            **{name: checked_key(env.get(variable, ""), variable) or None for name, variable in _KEYS.items()},
            "base_url": env.get("ANTHROPIC_BASE_URL") or None,
            "openai_base_url": env.get("OPENAI_BASE_URL", "").strip() or None,
            "models": models,
            **{name: read(f"STAY_{name.upper()}", _integer, least=least) for name, least in _WHOLE.items()},
            **{name: read(f"STAY_{name.upper()}", _seconds, zero=zero) for name, zero in _SECONDS.items()},
            "max_cost": read("STAY_MAX_COST", _dollars),
            "prompts_dir": read("STAY_PROMPTS_DIR", lambda _name, raw: Path(raw)),
            "data_dir": data_dir_from(env),
            "cache": read("STAY_CACHE", _switch),
            "source_date_epoch": read("SOURCE_DATE_EPOCH", _epoch),
            "otlp": otlp_from(env),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**{k: v for k, v in values.items() if v is not None})  # unset: the field's default


_KEYS = {"api_key": "ANTHROPIC_API_KEY", "auth_token": "ANTHROPIC_AUTH_TOKEN", "openai_api_key": "OPENAI_API_KEY"}
"""Each secret setting and the variable it is read from (``checked_key`` names it)."""
_WHOLE = {"wave_concurrency": 1, "model_concurrency": 1, "repair_rounds": 0, "max_retries": 0, "answer_tokens": 1}
"""Each whole-number setting and the least it takes, read from ``STAY_<NAME>``."""
_SECONDS = {"request_timeout": False, "retry_after_cap": False, "batch_poll_seconds": True, "call_deadline": False}
"""Each setting in seconds, read from ``STAY_<NAME>``, and whether it may be 0 (else it must be above it)."""


def packaged_data_dir() -> Path:
    """The data shipped with stay: inside the wheel, or the checkout's data/."""
    here = Path(__file__).resolve().parent
    wheel = here / "_data"
    return wheel if wheel.is_dir() else here.parent / "data"


def resolve_data_dir(chosen: str | os.PathLike[str] | None) -> Path:
    """The data directory, for a run and ``stay validate`` alike: the one chosen, else ``./data``
    (the contract's default), else the packaged one (so a plain ``pip install`` validates)."""
    if chosen is not None:
        return Path(chosen)
    local = Path("data")
    return local if local.is_dir() else packaged_data_dir()


def data_dir_from(env: Mapping[str, str] | None = None) -> Path | None:
    """``STAY_DATA_DIR`` alone, so a bad unrelated variable never stops the validator."""
    raw = (environment() if env is None else env).get("STAY_DATA_DIR", "").strip()
    return Path(raw) if raw else None


def secrets_from(env: Mapping[str, str] | None = None) -> list[str]:
    """Every secret the environment holds, as written and as read; never raises (for the last
    line a failing command prints)."""
    env = environment() if env is None else env
    found = [text for variable in _KEYS.values() for text in (env.get(variable, ""), env.get(variable, "").strip())]
    found += [*_secrets.url_secrets(env.get("ANTHROPIC_BASE_URL")), *_secrets.url_secrets(env.get("OPENAI_BASE_URL"))]
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        found += _secrets.url_secrets(env.get(name))
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        found += _secrets.header_secrets(env.get(name))
    return [value for value in found if value]


BackendName = str
"""A backend's name: an entry point of the ``stay.backends`` group (``registered_backends``)."""
JUDGED_HELP = ("judge the files against this backend's models (default: the backend and models the course's "
               "ledger records it was last built with, unless $STAY_BACKEND names another)")
"""``--backend``'s help on a command that judges a course's files (status, approve, adopt, view)."""
BACKEND_GROUP = "stay.backends"
BUILTIN_BACKENDS: Mapping[str, str] = {
    "offline": "stay.models._offline:make",
    "anthropic": "stay.models._anthropic:make",
    "openai": "stay.models._openai:make",
}
"""stay's own backends, as pyproject.toml declares them (a test holds the two equal), for
when the installed metadata lacks them (a checkout run without installing it)."""


def registered_backends() -> dict[str, EntryPoint]:
    """Every backend's entry point by name, nothing loaded. A built-in name is stay's: another
    distribution's plug-in declaring it is ignored, so no package can stand in for Claude."""
    import sys

    return dict(_registered(tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _registered(path: tuple[str, ...]) -> tuple[tuple[str, EntryPoint], ...]:
    """Read once per ``sys.path``: scanning every distribution takes tens of milliseconds."""
    from importlib.metadata import EntryPoint, entry_points

    from stay._version import DISTRIBUTION

    found = {name: EntryPoint(name, value, BACKEND_GROUP) for name, value in BUILTIN_BACKENDS.items()}
    for point in entry_points(group=BACKEND_GROUP):
        dist = _normalised(point.dist.name) if point.dist is not None else None
        if point.name not in BUILTIN_BACKENDS or (dist == _normalised(DISTRIBUTION)
                                                  and point.value == BUILTIN_BACKENDS[point.name]):
            found[point.name] = point  # an installed built-in is stay's own, with its version
    return tuple(sorted(found.items()))


def _normalised(distribution: str) -> str:
    """A distribution's name as PEP 503 compares them (``Stay_Course`` is ``stay-course``)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def checked_backend(name: object, where: str = "backend") -> str:
    """``name`` when a backend is registered under it, else one line naming the installed ones."""
    if isinstance(name, str) and name in BUILTIN_BACKENDS:
        return name  # no scan of the installed packages for stay's own
    names = registered_backends()
    if isinstance(name, str) and name in names:
        return name
    import difflib

    close = difflib.get_close_matches(str(name), names, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise UsageError(f"{where} {str(name)[:40]!r} is not an installed backend{hint}; the installed backends are "
                     f"{', '.join(names)} (a plug-in adds one through the {BACKEND_GROUP} entry points)")


def _integer(name: str, raw: str, least: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{name}={raw[:40]!r} is not a whole number") from None
    if value < least:
        raise UsageError(f"{name} must be at least {least}, not {value}")
    return value


def _seconds(name: str, raw: str, zero: bool) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name}={raw[:40]!r} is not a number of seconds") from None
    if not (value >= 0 if zero else value > 0) or value == float("inf"):
        raise UsageError(f"{name} must be a number of seconds{' of at least 0' if zero else ' above 0'}, "
                         f"not {raw[:40]}")
    return value


def _dollars(name: str, raw: str) -> float:
    try:
        value = float(raw.removeprefix("$"))
    except ValueError:
        raise UsageError(f"{name}={raw[:40]!r} is not an amount of US dollars (e.g. {name}=2.50)") from None
    if not 0 < value < float("inf"):
        raise UsageError(f"{name} must be an amount of US dollars above 0, not {raw[:40]}")
    return value


_SWITCH = {"auto": None, **dict.fromkeys(("on", "1", "true", "yes"), True),
           **dict.fromkeys(("off", "0", "false", "no"), False)}


def _switch(name: str, raw: str) -> bool | None:
    if raw.lower() not in _SWITCH:
        raise UsageError(f"{name}={raw[:40]!r} is not on, off or auto")
    return _SWITCH[raw.lower()]


def _epoch(name: str, raw: str) -> int:
    from datetime import UTC, datetime

    try:
        value = int(raw)
        datetime.fromtimestamp(value, UTC)
    except (ValueError, OverflowError, OSError):
        raise UsageError(f"{name}={raw[:40]!r} is not a usable time: give whole seconds since 1970 "
                         "(e.g. 1780000000), or unset it") from None
    return value


def checked_key(raw: str, name: str = "ANTHROPIC_API_KEY") -> str:
    """An API key stripped (one pasted with its newline), refused unshown when it holds a character
    no HTTP header can carry (the HTTP library's error would print it)."""
    key = raw.strip()
    if any(not 33 <= ord(char) <= 126 for char in key):
        _secrets.keep([key, raw])
        raise UsageError(f"{name} holds a space, a control character or a non-ASCII character inside "
                         "it; set it to the key alone (the value is not shown)")
    return key


@dataclass(frozen=True)
class OtlpTarget:
    """Where OpenTelemetry spans go (OTLP over HTTP), with its headers."""

    endpoint: str  # the full traces URL, e.g. http://localhost:6006/v1/traces
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = 10.0  # seconds the export may take, retries included
    service_name: str = "stay"
    capture_content: bool = False  # send each call's prompt and answer too (CAPTURE_CONTENT=true)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Never shown: the endpoint's userinfo and every header value, malformed pairs' too."""

    def __post_init__(self) -> None:
        extra = (*_secrets.url_secrets(self.endpoint), *self.headers.values())
        object.__setattr__(self, "secrets", tuple(dict.fromkeys((*self.secrets, *extra))))
        _secrets.keep(self.secrets)


def otlp_from(env: Mapping[str, str]) -> OtlpTarget | None:
    """The exporter's target as the OpenTelemetry specification reads the environment: the traces
    endpoint as given, else the base endpoint + ``/v1/traces``; None (no export) without one or
    when ``OTEL_SDK_DISABLED`` is ``true``."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    endpoint = traces or (base.rstrip("/") + "/v1/traces" if base else "")
    if not endpoint:
        return None
    raw = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    # both variables' values are secrets: the exporter reads the other itself when these are empty
    secrets = [*(value for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
                 for value in _secrets.header_secrets(env.get(name))),
               *_secrets.url_secrets(traces), *_secrets.url_secrets(base)]
    return OtlpTarget(endpoint=endpoint, headers=parse_headers(raw), secrets=tuple(secrets),
                      service_name=env.get("OTEL_SERVICE_NAME", "").strip() or OtlpTarget.service_name,
                      capture_content=env.get(CAPTURE_CONTENT, "").strip().lower() == "true")


CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def parse_headers(raw: str) -> dict[str, str]:
    """``"a=1,b=x%20y"`` -> ``{"a": "1", "b": "x y"}``; pairs without ``=`` are skipped."""
    headers: dict[str, str] = {}
    for pair in raw.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip())] = unquote(value.strip())
    return headers
