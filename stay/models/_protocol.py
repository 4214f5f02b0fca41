"""The backend contract (``ModelClient``, ``Backend``) a ``stay.backends`` plug-in meets; the registry
making one by name (a misbehaving plug-in is one line naming it); the input screen; and the call-scoped
hooks a backend reaches through what wraps it: the cost cap's ``hold_more``, the cache's ``Room``."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, runtime_checkable

from stay._secrets import redact
from stay._version import DISTRIBUTION
from stay.errors import AnswerError, ModelError, ModelUnavailable, StayError, UsageError
from stay.models._prices import PRICES, Price
from stay.requests import ModelAnswer, ModelRequest, SystemBlock
from stay.settings import BUILTIN_BACKENDS, Settings, checked_backend, registered_backends

if TYPE_CHECKING:
    import anthropic


FEATURES = frozenset({"caching", "batches", "thinking", "count_tokens", "screen"})
"""What a backend may declare; only ``screen`` changes what a run does (without it: ``--no-screen``)."""


@runtime_checkable
class ModelClient(Protocol):
    @property
    def name(self) -> str:
        """Shown in progress and recorded in the run log, e.g. 'offline' or 'anthropic'."""
        ...

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer: ...

    def screen(self, text: str) -> str | None:
        """Input moderation: a reason to reject ``text``, or None to let it through."""
        ...


@runtime_checkable
class Backend(ModelClient, Protocol):
    """A plug-in's backend; a model missing from ``prices`` is unpriced (cost "unknown", a cap refused);
    ``default_models`` is optional."""

    @property
    def prices(self) -> Mapping[str, Price]: ...

    @property
    def features(self) -> frozenset[str]: ...


def prices_of(backend: ModelClient) -> Mapping[str, Price]:
    found = getattr(backend, "prices", None)
    return found if isinstance(found, Mapping) else PRICES


def can_screen(backend: ModelClient) -> bool:
    """A plain ``ModelClient`` has ``screen``, so it can."""
    features = getattr(backend, "features", None)
    return features is None or "screen" in features


@runtime_checkable
class Rejecting(Protocol):
    """A backend that keeps answers, told when one failed the asker's check so it never serves it again."""

    def reject(self, request: ModelRequest, model: str, why: str) -> None: ...


SCREEN_STAGE = "moderation"

SCREEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"flagged": {"type": "boolean"},
                   "reason": {"type": "string", "description": "one sentence"}},
    "required": ["flagged", "reason"],
    "additionalProperties": False,
}
SCREEN_SYSTEM = (
    "You screen course briefs before a pipeline writes a course from them. Flag a brief only "
    "when the course it asks for would teach or promote serious harm (weapons, abuse, hate, "
    "self-harm, crime) when its fields are read together; an unusual or sensitive topic taught "
    "for legitimate learning is not flagged. Answer with the JSON schema: flagged, and a "
    "one-sentence reason."
)
SCREEN_ANSWER_TOKENS = 1_000
"""Room for the verdict; the screen's thinking room comes on top, so it cannot crowd it out."""


def screen_request(text: str) -> ModelRequest:
    return ModelRequest(
        stage=SCREEN_STAGE, role="analysis", artefact="the brief",
        system=(SystemBlock(text=SCREEN_SYSTEM),),
        user=f"The brief, as one message:\n\n{text}",
        output_schema=SCREEN_SCHEMA, output_name="Screen", max_tokens=SCREEN_ANSWER_TOKENS,
        inputs={"brief_text": text},
    )


def verdict(answer: ModelAnswer) -> str | None:
    flagged, reason = answer.data.get("flagged"), answer.data.get("reason")
    if not isinstance(flagged, bool) or not isinstance(reason, str):
        raise AnswerError(f"stage {SCREEN_STAGE} (the brief): the screen's reply is not a verdict "
                          f"(flagged={flagged!r}, reason={reason!r}); the brief was not screened, run the "
                          "command again", raw=str(answer.data))
    if not flagged:
        return None
    return " ".join(reason.split()) or "flagged, with no reason given"


@dataclass(frozen=True)
class Screening:
    """The reason to reject (or None) and the answer paid for now, whose usage the run counts."""

    reason: str | None
    request: ModelRequest
    answer: ModelAnswer | None = None
    skipped: str | None = None  # why nothing screened the brief (a replay with no recorded verdict)


class _Screens(Protocol):
    def screen(self, text: str) -> str | None: ...


def screening_of(backend: _Screens, text: str) -> Screening:
    rich = getattr(backend, "screening", None)
    if callable(rich):
        found = rich(text)
        assert isinstance(found, Screening)
        return found
    return Screening(backend.screen(text), screen_request(text))


T = TypeVar("T")

Progress = Callable[[str], None]


def backends() -> Mapping[str, EntryPoint]:
    return registered_backends()


def distribution(point: EntryPoint) -> tuple[str, str | None]:
    if point.dist is not None:
        return point.dist.name, point.dist.version
    return DISTRIBUTION, None


def _where(point: EntryPoint) -> str:
    name, version = distribution(point)
    return f"backend {point.name!r} (entry point {point.value} of {name}{f' {version}' if version else ''})"


def make_backend(name: str, settings: Settings, *, progress: Progress | None = None,
                 client: anthropic.Anthropic | None = None) -> Backend:
    """``client``: an SDK client made elsewhere (batch scoring's), for the anthropic backend alone."""
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
    extra = {"client": client} if client is not None and point.name == "anthropic" else {}
    try:
        made = checked(factory(settings, progress=progress, **extra), point)  # a property it reads may raise too
    except StayError:
        raise  # the backend's own one line (a missing key, a bad URL)
    except Exception as exc:
        raise UsageError(f"{_where(point)} failed to make its backend: {type(exc).__name__}: {_line(exc)}") \
            from None
    return made if point.name in BUILTIN_BACKENDS else cast(Backend, Plugin(made, _where(point)))


def checked(made: object, point: EntryPoint) -> Backend:
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
    """A plug-in's backend at stay's boundary: what it raises that is not a stay error, or a return of
    the wrong kind, is its failure, one line naming it. stay's own backends are not wrapped."""

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
            try:
                found = value(*args, **kwargs)
            except StayError:
                raise  # the backend's own words: a refusal, a cut-off answer, retries spent
            except Exception as exc:
                raise self._failed(exc, where) from None
            return self._awaited(found, where, attr) if inspect.isawaitable(found) else self._kind(found, where, attr)
        return call

    def _kind(self, found: T, where: str, attr: str) -> T:
        kinds = _RETURNS.get(attr, (object,))
        if isinstance(found, kinds):
            return found
        raise self._failed(TypeError(f"{attr}() returned a {type(found).__name__}, not a "
                                     f"{' or '.join(kind.__name__ for kind in kinds)}"), where)

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


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or "(no message)"


def backend_from(settings: Settings, *, progress: Callable[[str], None] | None = None,
                 client: anthropic.Anthropic | None = None) -> ModelClient:
    return make_backend(settings.chosen_backend, settings, progress=progress, client=client)


HoldMore = Callable[[dict[str, Any], ModelAnswer | None], bool | None]
"""Told (the parameters to be sent, the reply already paid or None); returns once held, or raises
``CostCapReached``; True when it counted the paid reply (the answer's usage then leaves it out)."""

HoldInstead = Callable[[dict[str, Any]], None]
"""Told the first request's parameters when they differ from those held for; holds them instead."""

_HOLD: ContextVar[tuple[HoldMore, HoldInstead | None] | None] = ContextVar("stay_hold_more", default=None)


@contextmanager
def holding(hold: HoldMore, instead: HoldInstead | None = None) -> Iterator[None]:
    """``hold`` is told of every further billed request of the call inside, ``instead`` of a roomier first one."""
    token = _HOLD.set((hold, instead))
    try:
        yield
    finally:
        _HOLD.reset(token)


def hold_more(params: dict[str, Any], paid: ModelAnswer | None) -> bool:
    """Before a further billed request: hold it, or stop here; True when ``paid`` was counted on its own."""
    hooks = _HOLD.get()
    return hooks is not None and bool(hooks[0](params, paid))


def hold_instead(params: dict[str, Any]) -> None:
    hooks = _HOLD.get()
    if hooks is None:
        return
    hold, instead = hooks
    if instead is None:
        hold(params, None)
    else:
        instead(params)


@dataclass(frozen=True)
class Room:
    known: int | None  # the answer room an earlier run found this request needs
    remember: Callable[[int], None]  # records it (its answer was cut off at less)


_ROOM: ContextVar[Room | None] = ContextVar("stay_answer_room", default=None)


@contextmanager
def sizing(room: Room) -> Iterator[None]:
    token = _ROOM.set(room)
    try:
        yield
    finally:
        _ROOM.reset(token)


def known_room() -> int | None:
    room = _ROOM.get()
    return None if room is None else room.known


def needs_room(answer_tokens: int) -> None:
    """Before a retry with more room: the current request needs ``answer_tokens``."""
    room = _ROOM.get()
    if room is not None:
        room.remember(answer_tokens)
