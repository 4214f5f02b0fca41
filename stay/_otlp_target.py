"""Where OpenTelemetry spans go: the OTLP target, and how its specification reads it
from the environment's variables (handed in as a mapping: ``stay.settings`` alone reads
the environment).

Split from ``stay.settings``, which re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from stay import _secrets


@dataclass(frozen=True)
class OtlpTarget:
    """Where OpenTelemetry spans go (OTLP over HTTP), with its headers."""

    endpoint: str
    """The full OTLP/HTTP traces URL, e.g. ``http://localhost:6006/v1/traces``."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = 10.0
    """Seconds the export may take, retries included; a run waits at most this long."""
    service_name: str = "stay"
    """The resource's ``service.name``: ``OTEL_SERVICE_NAME`` when set."""
    capture_content: bool = False
    """Send each call's prompt and answer too (GenAI ``gen_ai.input.messages`` ...):
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``, off by default."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """What must never be shown: the endpoint's userinfo and every header value, also
    those of pairs too malformed to send (``otlp_from`` fills it from the raw variables)."""

    def __post_init__(self) -> None:
        extra = (*_secrets.url_secrets(self.endpoint), *self.headers.values())
        object.__setattr__(self, "secrets", tuple(dict.fromkeys((*self.secrets, *extra))))
        _secrets.keep(self.secrets)


def otlp_from(env: Mapping[str, str]) -> OtlpTarget | None:
    """The OpenTelemetry exporter's target, as its specification reads the environment.

    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is used as given; else
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is a base URL to which ``/v1/traces`` is appended.
    Headers come from ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` or
    ``OTEL_EXPORTER_OTLP_HEADERS`` (``key=value`` pairs separated by commas, values
    percent-decoded). None when no endpoint is set, or when ``OTEL_SDK_DISABLED`` is
    ``true`` (any case, as the specification has it): nothing is exported.
    ``OTEL_SERVICE_NAME`` names the service (else ``stay``).
    """
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if traces:
        endpoint = traces
    elif base:
        endpoint = base.rstrip("/") + "/v1/traces"
    else:
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
"""The GenAI instrumentations' switch for sending prompts and answers with the spans."""


def parse_headers(raw: str) -> dict[str, str]:
    """``"a=1,b=x%20y"`` -> ``{"a": "1", "b": "x y"}``; pairs without ``=`` are skipped."""
    headers: dict[str, str] = {}
    for pair in raw.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip())] = unquote(value.strip())
    return headers
