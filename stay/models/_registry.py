"""Backends as plug-ins: a backend is a factory registered under the ``stay.backends``
entry points, ``make(settings, *, progress=None) -> Backend``, found by name.

stay's own (offline, anthropic, openai) are registered the same way, in pyproject.toml,
and ``stay.settings.BUILTIN_BACKENDS`` holds them for a checkout whose installed metadata
lacks them. Only the chosen backend's module is imported: an offline or a Claude run never
imports another backend's SDK. A plug-in that cannot be loaded, or that makes something
that is not a ``Backend``, is one line naming its entry point and its distribution.
``docs/plugins.md`` says how to write one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint

from stay._version import DISTRIBUTION
from stay.errors import StayError, UsageError
from stay.models._protocol import FEATURES, Backend
from stay.settings import Settings, checked_backend, registered_backends

Progress = Callable[[str], None]


def backends() -> Mapping[str, EntryPoint]:
    """Every registered backend's entry point by name, sorted, none loaded."""
    return registered_backends()


def distribution(point: EntryPoint) -> tuple[str, str | None]:
    """The distribution that declares ``point`` and its version; ``(DISTRIBUTION, None)`` for
    a built-in read from stay's own table (this stay, whatever its installed metadata says)."""
    if point.dist is not None:
        return point.dist.name, point.dist.version
    return DISTRIBUTION, None


def _where(point: EntryPoint) -> str:
    name, version = distribution(point)
    return f"backend {point.name!r} (entry point {point.value} of {name}{f' {version}' if version else ''})"


def make_backend(name: str, settings: Settings, *, progress: Progress | None = None) -> Backend:
    """Load the factory registered as ``name`` and make its backend from ``settings``."""
    point = backends().get(checked_backend(name))
    assert point is not None  # checked_backend found it
    try:
        factory = point.load()
    except Exception as exc:  # an ImportError, a missing attribute, the plug-in's own error at import
        raise UsageError(f"{_where(point)} cannot be loaded: {type(exc).__name__}: {_line(exc)}; reinstall "
                         "that package, or choose another --backend") from None
    if not callable(factory):
        raise UsageError(f"{_where(point)} is a {type(factory).__name__}, not a factory; it must name "
                         "make(settings, *, progress=None) -> stay.Backend")
    try:
        made = factory(settings, progress=progress)
    except StayError:
        raise  # the backend's own one line (a missing key, a bad URL)
    except Exception as exc:
        raise UsageError(f"{_where(point)} failed to make its backend: {type(exc).__name__}: {_line(exc)}") \
            from None
    return checked(made, point)


def checked(made: object, point: EntryPoint) -> Backend:
    """``made`` when it is a ``Backend`` whose features are known ones, else one line."""
    if not isinstance(made, Backend):
        lacks = [attr for attr in ("name", "complete", "screen", "prices", "features") if not hasattr(made, attr)]
        raise UsageError(f"{_where(point)} made a {type(made).__name__}, not a stay.Backend (it has no "
                         f"{', '.join(lacks)}); see docs/plugins.md")
    features = made.features
    unknown = sorted(str(f) for f in features - FEATURES) if isinstance(features, frozenset) else None
    if unknown is None or unknown:
        raise UsageError(f"{_where(point)} declares features {features!r}: they must be a frozenset drawn from "
                         f"{', '.join(sorted(FEATURES))}")
    return made


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or "(no message)"
