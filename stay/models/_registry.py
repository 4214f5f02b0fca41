"""Backends as plug-ins: factories under the ``stay.backends`` entry points, ``make(settings, *,
progress=None) -> Backend``, stay's own included; only the chosen one's module is imported. A
plug-in that cannot load or misbehaves is one line naming it, never "a bug in stay"."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any, TypeVar, cast

from stay._secrets import redact
from stay._version import DISTRIBUTION
from stay.errors import ModelError, ModelUnavailable, StayError, UsageError
from stay.models._protocol import FEATURES, Backend, ModelClient, Screening
from stay.requests import ModelAnswer, ModelRequest
from stay.settings import BUILTIN_BACKENDS, Settings, checked_backend, registered_backends

if TYPE_CHECKING:
    import anthropic


T = TypeVar("T")

Progress = Callable[[str], None]


def backends() -> Mapping[str, EntryPoint]:
    """Every registered backend's entry point by name, sorted, none loaded."""
    return registered_backends()


def distribution(point: EntryPoint) -> tuple[str, str | None]:
    """The distribution declaring ``point`` and its version; a built-in from stay's table: this stay's."""
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
        made = checked(factory(settings, progress=progress), point)  # a property it reads may raise too
    except StayError:
        raise  # the backend's own one line (a missing key, a bad URL)
    except Exception as exc:
        raise UsageError(f"{_where(point)} failed to make its backend: {type(exc).__name__}: {_line(exc)}") \
            from None
    return made if point.name in BUILTIN_BACKENDS else cast(Backend, Plugin(made, _where(point)))


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


class Plugin:
    """A plug-in's backend at stay's boundary: what it raises that is not a stay error is its
    failure, one line naming it: ``ModelUnavailable`` for a ``ConnectionError`` or
    ``TimeoutError``, else ``ModelError``. stay's own backends are not wrapped."""

    def __init__(self, made: object, where: str) -> None:
        self._made, self._where = made, where

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # its private parts, and ours before __init__ ran (a copy): not the protocol
            raise AttributeError(attr)
        try:
            value = getattr(self._made, attr)
        except AttributeError:
            raise  # an optional member it lacks: ``getattr(backend, name, default)`` reads on
        except Exception as exc:
            raise self._failed(exc) from None
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            asked = args[0] if args and isinstance(args[0], ModelRequest) else None
            where = f"stage {asked.stage} ({asked.artefact}): " if asked is not None else ""
            found = self._guarded(lambda: value(*args, **kwargs), where)
            return self._awaited(found, where, attr) if inspect.isawaitable(found) else self._kind(found, where, attr)
        return call

    def _kind(self, found: T, where: str, attr: str) -> T:
        """``found`` when it is what the protocol says ``attr`` returns, else that plug-in's failure."""
        kinds = _RETURNS.get(attr, (object,))
        if isinstance(found, kinds):
            return found
        raise self._failed(TypeError(f"{attr}() returned a {type(found).__name__}, not a "
                                     f"{' or '.join(kind.__name__ for kind in kinds)}"), where)

    def _guarded(self, run: Callable[[], T], where: str = "") -> T:
        try:
            return run()
        except StayError:
            raise  # the backend's own words: a refusal, a cut-off answer, retries spent
        except Exception as exc:
            raise self._failed(exc, where) from None

    async def _awaited(self, found: Awaitable[T], where: str, attr: str) -> T:
        try:
            return self._kind(await found, where, attr)
        except StayError:
            raise
        except Exception as exc:
            raise self._failed(exc, where) from None

    def _failed(self, exc: Exception, where: str = "") -> StayError:
        kind = ModelUnavailable if isinstance(exc, (ConnectionError, TimeoutError)) else ModelError
        return kind(f"{where}{self._where} failed: {type(exc).__name__}: {redact(_line(exc))} (an error of "
                    "that plug-in, not of stay: see its documentation, or choose another --backend)")


_RETURNS: dict[str, tuple[type, ...]] = {"complete": (ModelAnswer,), "acomplete": (ModelAnswer,),
                                         "screen": (str, type(None)), "screening": (Screening,)}
"""What the protocol's calls return, held at the boundary: anything else would fail inside stay."""


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or "(no message)"


def backend_from(settings: Settings, *, progress: Callable[[str], None] | None = None,
                 client: anthropic.Anthropic | None = None) -> ModelClient:
    """The backend ``settings`` choose, made by its registered factory; ``client``: an SDK client
    made elsewhere (batch scoring's), for Claude alone."""
    if client is not None and settings.chosen_backend == "anthropic":
        from stay.models._anthropic import make

        return make(settings, progress=progress, client=client)
    return make_backend(settings.chosen_backend, settings, progress=progress)
