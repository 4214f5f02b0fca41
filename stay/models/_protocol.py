"""The backend contract (``ModelClient``, ``Backend``) and its types: prices (every rate read from a
published list, ``docs/models.md`` names each source; a model missing is unpriced, never a partial sum)
and thinking per role; the registry; the input screen; the call-scoped hooks a backend reaches through
what wraps it (the cost cap's ``hold_more``, the cache's ``Room``); and ``HTTPBackend``, the loop."""

from __future__ import annotations

import datetime
import email.utils
import importlib
import inspect
import json
import random
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, TypeVar, cast, runtime_checkable

from stay import _secrets
from stay._bounds import json_nesting
from stay._display import one_line
from stay._version import DISTRIBUTION
from stay.errors import (
    AnswerError,
    ModelError,
    ModelUnavailable,
    RefusalError,
    StayError,
    TruncationError,
    Unreachable,
    UsageError,
)
from stay.requests import ModelAnswer, ModelRequest, Role, SystemBlock, Usage
from stay.settings import BUILTIN_BACKENDS, Settings, checked_backend, registered_backends
from stay.settings import DEFAULT_MODELS as DEFAULT_MODELS  # which model plays a role is a setting

BATCH_DISCOUNT = 0.5  # 50% off input and output (every model's page)
BATCH_CACHE_TTL = "1h"  # a batch request's breakpoints: a batch can outlive 5 minutes
ONE_HOUR_WRITE = 2.0  # a 1-hour cache write costs twice the base input price (the pricing page)


@dataclass(frozen=True)
class Rates:
    """US dollars per million tokens of each kind; ``cache_write`` is a 5-minute one."""

    input: float
    output: float
    cache_write: float
    cache_read: float


@dataclass(frozen=True)
class Price:
    """A model's rates; ``long`` applies to every token of a request whose prompt is over
    ``long_above`` tokens. ``source`` is where the rates were read (or "unverified"), ``checked`` when."""

    rates: Rates
    source: str
    checked: str
    long: Rates | None = None
    long_above: int = 0

    def rates_for(self, usage: Usage) -> Rates:
        if self.long is not None and usage.total_input_tokens > self.long_above:
            return self.long
        return self.rates


CHECKED = "2026-12-01"  # the day every row below was read from its source
_priced = partial(Price, checked=CHECKED)  # stay's own rows: each read on CHECKED

_PRICING_PAGE = "https://platform.claude.com/docs/en/about-claude/pricing (Model pricing table)"


def _model_page(slug: str) -> str:
    return f"https://platform.claude.com/docs/en/models/{slug}/overview (Specifications > Pricing)"


_OPUS_45_TO_5 = Rates(input=5.0, output=25.0, cache_write=6.25, cache_read=0.50)
_FABLE_5 = Rates(input=10.0, output=50.0, cache_write=12.50, cache_read=1.00)
_FABLE_51 = Rates(input=10.0, output=50.0, cache_write=12.50, cache_read=0.25)
_SONNET_4X = Rates(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30)
_HAIKU_45 = Rates(input=1.0, output=5.0, cache_write=1.25, cache_read=0.10)
_HAIKU_55_SOURCE = (_model_page("haiku-5-5") + " for input, output and cache writes by prompt length; cache "
                    "reads ($0.01, $0.05) unverified: no official page read showed them, taken from the "
                    "kurofune/claudit v1.9.2 price refresh of 2026-10-24")
_SONNET_4X_SOURCE = (_PRICING_PAGE + "; unverified: the stored copy of the page ends before the Sonnet 4.x "
                     "rows, the rates are the earlier revision's")
_HAIKU_45_SOURCE = (_PRICING_PAGE + "; input and output as the model pages' comparison tables show them "
                    "($1 / $5); cache rates unverified (the earlier revision's Haiku 4.5 row)")

PRICES: Mapping[str, Price] = {
    # the current generation (the SDK's types/model.py lists these first)
    "claude-opus-5-5": _priced(Rates(input=4.0, output=20.0, cache_write=5.0, cache_read=0.20),
                               _model_page("opus-5-5")),
    # Sonnet 5.5's cache reads: the official model page shows $0.20 / MTok; two third-party
    # price refreshes (kurofune/claudit v1.9.2, TheKrush/PromptFuel v1.0.23) report a cut to
    # $0.10 on 2026-10-07 that no official page read shows. The official figure is kept.
    "claude-sonnet-5-5": _priced(Rates(input=2.0, output=10.0, cache_write=2.50, cache_read=0.20),
                               _model_page("sonnet-5-5") + " (cache reads $0.20, not the $0.10 third parties "
                               "report)"),
    "claude-haiku-5-5": _priced(Rates(input=0.10, output=0.50, cache_write=0.125, cache_read=0.01), _HAIKU_55_SOURCE,
                              long=Rates(input=0.50, output=2.50, cache_write=0.625, cache_read=0.05),
                              long_above=100_000),
    "claude-fable-5-1": _priced(_FABLE_51, _PRICING_PAGE),
    "claude-mythos-5-1": _priced(_FABLE_51, _PRICING_PAGE),
    "claude-fable-5": _priced(_FABLE_5, _PRICING_PAGE),
    "claude-mythos-5": _priced(_FABLE_5, _PRICING_PAGE),
    "claude-opus-5": _priced(_OPUS_45_TO_5, _PRICING_PAGE + "; " + _model_page("opus-5")),
    "claude-sonnet-5": _priced(Rates(input=2.0, output=10.0, cache_write=2.50, cache_read=0.20),
                               _model_page("sonnet-5")),
    **dict.fromkeys(("claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-opus-4-5",
                     "claude-opus-4-5-20251101"), _priced(_OPUS_45_TO_5, _PRICING_PAGE)),
    "claude-sonnet-4-6": _priced(_SONNET_4X, _SONNET_4X_SOURCE),
    "claude-sonnet-4-5": _priced(_SONNET_4X, _SONNET_4X_SOURCE + " (prompts up to 200K tokens, the standard "
                                                               "context window)"),
    "claude-sonnet-4-5-20250929": _priced(_SONNET_4X, _SONNET_4X_SOURCE),
    **dict.fromkeys(("claude-haiku-4-5", "claude-haiku-4-5-20251001"), _priced(_HAIKU_45, _HAIKU_45_SOURCE)),
    # OpenAI (the openai backend's default): its model page's Pricing, Text tokens; the cache
    # write rate is for 30-minute retention, the default; above 272K input tokens the whole
    # request pays twice the input and cache rates and 1.5x the output rate
    "gpt-6.2-sol": _priced(Rates(input=2.0, output=10.0, cache_write=2.50, cache_read=0.10),
                         "https://developers.openai.com/api/docs/models/gpt-6.2-sol (Pricing > Text tokens)",
                         long=Rates(input=4.0, output=15.0, cache_write=5.0, cache_read=0.20), long_above=272_000),
    # the offline backend: no network, no bill
    "offline": _priced(Rates(input=0.0, output=0.0, cache_write=0.0, cache_read=0.0), "no API call is made"),
}
"""Model id -> price. Deliberately unpriced: claude-fable-5-2 and claude-mythos-5-2 (no
Anthropic page found; third parties give Fable 5.2 $8 / $40) and claude-mythos-preview."""

US_INFERENCE = 1.1
"""US-only inference costs 1.1x on every token class (AWS's Claude data-residency page, checked
2026-12-01; the Claude API's own page did not show it); global is the table's price."""

_GEO = {None: 1.0, "global": 1.0, "us": US_INFERENCE}
_TIERS = (None, "standard", "batch")
"""Tiers the table prices; Priority Tier has no per-token price: its cost is unknown, never a guess."""


def cost(model: str, usage: Usage, *, batch: bool = False, service_tier: str | None = None,
         inference_geo: str | None = None, prices: Mapping[str, Price] | None = None) -> float | None:
    """US dollars for one call's usage, or None when the model, tier or geography has no price."""
    price = (PRICES if prices is None else prices).get(model)
    if price is None or service_tier not in _TIERS or inference_geo not in _GEO:
        return None
    rates = price.rates_for(usage)
    write = rates.input * ONE_HOUR_WRITE if batch else rates.cache_write  # a batch writes 1-hour entries
    dollars = (usage.input_tokens * rates.input
               + usage.cache_creation_input_tokens * write
               + usage.cache_read_input_tokens * rates.cache_read
               + usage.output_tokens * rates.output) / 1_000_000 * _GEO[inference_geo]
    return dollars * BATCH_DISCOUNT if batch or service_tier == "batch" else dollars


def answer_cost(answer: ModelAnswer, prices: Mapping[str, Price] | None = None) -> float | None:
    """As its response said it was served."""
    return cost(answer.model, answer.usage, batch=answer.batch, service_tier=answer.service_tier,
                inference_geo=answer.inference_geo, prices=prices)


def price_label(answer: ModelAnswer) -> str:
    """An unpriced answer's name: its model, and the tier or geography the table does not price."""
    extra = []
    if answer.service_tier not in _TIERS:
        extra.append(f"{answer.service_tier} tier")
    if answer.inference_geo not in _GEO:
        extra.append(f"inference_geo {answer.inference_geo}")
    return answer.model + (f" ({', '.join(extra)})" if extra else "")


def describe_cost(dollars: float | None, unpriced: frozenset[str] | set[str] = frozenset()) -> str:
    if dollars is None or unpriced:
        names = ", ".join(sorted(unpriced)) or "a model"
        return f"cost unknown (no price on file for {names})"
    return f"${dollars:.4f}"


Effort = Literal["low", "medium", "high", "xhigh", "max"]


@dataclass(frozen=True)
class Thinking:
    """Adaptive thinking at an ``output_config.effort`` level, with ``room`` tokens reserved: thinking
    counts toward ``max_tokens``, so a request asks for the answer's room plus this."""

    effort: Effort
    room: int


THINKING: Mapping[Role, Thinking] = {
    # Every later stage inherits the plan's mistakes: think hard, and leave room to.
    "planning": Thinking(effort="high", room=16_000),
    # Reading one brief into an audience: moderate reasoning.
    "analysis": Thinking(effort="medium", room=8_000),
    # Writes from a detailed plan that already did the reasoning; runs once per lesson
    # per artefact, so thinking is paid 3x per lesson. Medium, not low: effort also
    # shapes the prose, and a lesson must fill its minutes.
    "writing": Thinking(effort="medium", room=8_000),
    # One verdict per item, many items: low effort keeps judging cheap.
    "judging": Thinking(effort="low", room=4_000),
}
"""Set per role rather than left to each model's default (which differ between models)."""

OUTPUT_LIMIT = 64_000
"""The ``max_tokens`` assumed when the Models API has not said: the documented limit of the
4.5 models, and no later one publishes less. It bounds the cut-off retry."""

SCREENING = Thinking(effort="low", room=2_000)  # the input screen: a classification of one brief

_ADAPTIVE = ("claude-opus-5", "claude-sonnet-5", "claude-haiku-5", "claude-fable-", "claude-mythos-",
             "claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-4-6")


def thinks_adaptively(model: str) -> bool:
    """4.6 and later; others get their defaults."""
    return model.startswith(_ADAPTIVE)


MIN_CACHEABLE_TOKENS: Mapping[str, int] = {
    # Published by Anthropic (prompt-caching docs, "minimum cacheable prompt length"), per
    # model-id prefix; the longest matching prefix wins. 512 for the 5.5 Sonnet and Haiku and
    # for Opus 5 (issue 23's audit of the docs), and for Fable 5 and Mythos 5.
    "claude-sonnet-5-5": 512, "claude-haiku-5-5": 512, "claude-opus-5": 512,
    "claude-fable-5": 512, "claude-mythos-5": 512,
    "claude-sonnet-5": 1_024, "claude-opus-4-8": 1_024, "claude-sonnet-4": 1_024, "claude-opus-4": 1_024,
    "claude-opus-4-7": 2_048,
    "claude-opus-4-6": 4_096, "claude-opus-4-5": 4_096, "claude-haiku-4-5": 4_096,
}
"""The smallest prefix each model caches (a shorter one is neither written nor read).
``claude-opus-5`` covers Opus 5.5 too, which publishes none: a wrong guess costs one write."""

UNPUBLISHED_MIN_CACHEABLE = 1_024  # a model the table does not know: the floor before 5.5


def min_cacheable_tokens(model: str) -> int:
    known = [prefix for prefix in MIN_CACHEABLE_TOKENS if model.startswith(prefix)]
    return MIN_CACHEABLE_TOKENS[max(known, key=len)] if known else UNPUBLISHED_MIN_CACHEABLE


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


def screening_of(backend: ModelClient, text: str) -> Screening:
    rich = getattr(backend, "screening", None)
    if callable(rich):
        found = rich(text)
        assert isinstance(found, Screening)
        return found
    return Screening(backend.screen(text), screen_request(text))


T = TypeVar("T")

Progress = Callable[[str], None]


backends = registered_backends


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
    return one_line(exc) or "(no message)"


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
def _bound(var: ContextVar[T | None], value: T) -> Iterator[None]:
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def holding(hold: HoldMore, instead: HoldInstead | None = None) -> AbstractContextManager[None]:
    """``hold`` is told of every further billed request of the call inside, ``instead`` of a roomier first one."""
    return _bound(_HOLD, (hold, instead))


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


def sizing(room: Room) -> AbstractContextManager[None]:
    return _bound(_ROOM, room)


DEFAULT_TIMEOUT = 300.0
RETRY_AFTER_CAP = 60.0
SLOWEST_TOKENS_PER_SECOND = 20.0
"""The slowest pace waited for when no ``call_deadline`` is set: only a stall or a stream of pings reaches it."""
RERUN = "rerun to continue (finished files are kept, nothing is paid twice)"
CUT_OFF = frozenset({"max_tokens", "length"})  # the stop reasons of an answer cut off at its room
CONFIG_STATUSES = (400, 401, 403, 404)
"""Refused for what it asks (a mistyped model id, a rejected key): configuration, not the service."""


@dataclass(frozen=True)
class Budget:
    answer: int
    thinking: int

    @property
    def max_tokens(self) -> int:
        return self.answer + self.thinking


def budget_for(request: ModelRequest, model: str, thinking: Thinking | None,
               answer_tokens: int | None = None) -> Budget:
    room = thinking.room if thinking is not None and thinks_adaptively(model) else 0
    return Budget(answer=answer_tokens or request.max_tokens, thinking=room)


@dataclass(frozen=True)
class _Failure:
    retryable: bool
    error: StayError  # raised when the failure is final (not retryable, or the retries are spent)
    wait_hint: float | None = None
    timed_out: bool = False


class _Rejected(ModelError):
    """A 4xx no retry changes, with its status: the screen tells configuration errors from bad replies."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _nothing(*_told: object) -> None:
    """No progress line to show, no prefix gate to tell."""


@contextmanager
def paying(spent: Usage) -> Iterator[None]:
    """An error's billed answer counts ``spent`` too: one call, everything it paid."""
    try:
        yield
    except (AnswerError, ModelError) as exc:
        if isinstance(exc.billed, ModelAnswer):
            exc.billed = plus(spent, exc.billed)
        raise


def plus(spent: Usage, answer: ModelAnswer) -> ModelAnswer:
    return answer.model_copy(update={"usage": spent + answer.usage})


@contextmanager
def billed_as(billed: ModelAnswer | None) -> Iterator[None]:
    """An error reading a reply carries what the reply cost; its text, which reaches the message, is cut
    of secrets: an API or proxy echoing one must not have it printed or kept."""
    try:
        yield
    except (AnswerError, ModelError) as exc:
        raw = getattr(exc, "raw", None)
        if _secrets.redact(str(exc)) == str(exc) and (raw is None or _secrets.redact(raw) == raw):
            exc.billed = billed
            raise
        clean: AnswerError | ModelError = (
            type(exc)(_secrets.redact(str(exc)), raw=None if raw is None else _secrets.redact(raw))
            if isinstance(exc, AnswerError) else type(exc)(_secrets.redact(str(exc))))
        clean.billed = billed
        raise clean from None


def model_of(reply: Any) -> str:
    """The id a reply names, cut of secrets."""
    model = getattr(reply, "model", None)
    return _secrets.redact(model) if isinstance(model, str) and model else "unknown"


class _Deadline:
    """One call's deadline, retries and waits included: each attempt's timeout is cut to the time left."""

    def __init__(self, backend: HTTPBackend, max_tokens: int, where: str, timeout: float | None = None) -> None:
        self.clock, self.where, self.request_timeout = backend.clock, where, timeout or backend.timeout
        self.seconds = backend.call_deadline or max(2 * self.request_timeout, max_tokens / SLOWEST_TOKENS_PER_SECOND)
        self.ends = self.clock() + self.seconds
        self.cut = False  # the last attempt's request timeout was cut to the time left
        self.fired = False  # the watchdog ended an attempt (``watch``)

    def left(self) -> float:
        return self.ends - self.clock()

    def timeout(self, attempt: int) -> Any:
        import httpx2

        self.check(attempt)
        seconds = min(self.request_timeout, self.left())
        self.cut = seconds < self.request_timeout
        return httpx2.Timeout(seconds, connect=min(seconds, 10.0))

    @contextmanager
    def watch(self, close: Callable[[], None]) -> Iterator[None]:
        """Close a stream once the deadline passes: the SDK drops ``ping`` events, each of which
        resets the read timeout, so nothing else ends a stream that only pings."""
        def fire() -> None:
            self.fired = True
            close()

        timer = threading.Timer(max(self.left(), 0.0), fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    async def awaited(self, call: Awaitable[Any], attempt: int) -> Any:
        import asyncio

        try:
            return await asyncio.wait_for(call, timeout=max(self.left(), 0.0))
        except TimeoutError:
            self.check(attempt, ended=True)
            raise

    def check(self, attempt: int, wait: float = 0.0, *, ended: bool = False) -> None:
        """Raise once the deadline has passed (or ``ended`` says so), or would pass during ``wait``."""
        if not ended and self.left() > wait:
            return
        tries = f"{attempt + 1} attempt{'s' if attempt else ''}"
        raise ModelUnavailable(
            f"{self.where}: no complete answer within {self.seconds:g} s (the call's deadline, after {tries}; "
            "the service stalled or sent only pings)", fix=f"{RERUN}, or raise STAY_CALL_DEADLINE")


class Retrying(TypedDict, total=False):
    """``HTTPBackend``'s keywords, which each backend passes on: typed, so a caller's misspelt one is
    mypy's error, not only a TypeError at run time."""

    max_retries: int
    timeout: float
    retry_after_cap: float
    call_deadline: float | None
    answer_tokens: int | None
    progress: Progress | None
    sleep: Callable[[float], None]
    jitter: Callable[[], float]
    clock: Callable[[], float]
    wall: Callable[[], float]


def retrying(settings: Settings, progress: Progress | None) -> Retrying:
    """The settings every ``HTTPBackend`` takes, for a backend's ``make``."""
    return Retrying(progress=progress, timeout=settings.request_timeout, max_retries=settings.max_retries,
                    retry_after_cap=settings.retry_after_cap, call_deadline=settings.call_deadline,
                    answer_tokens=settings.answer_tokens)


class HTTPBackend:
    """One backend over HTTP, whatever its wire (the Messages API, Chat Completions): it owns the request
    loop and its policy; a subclass supplies ``_ask``, ``_held``, ``_refused`` and the words its errors use.
    Our own retries, not the SDK's (which sleep for any ``retry-after``, up to 49 days): jittered, capped,
    under a per-call deadline. ``sleep``, ``jitter``, ``clock`` and ``wall`` are injected in tests."""

    name: str
    sdk = "anthropic"  # the module whose errors ``_classify`` reads
    service = "the API"  # the words of its errors: "the API is rate limited (429)"
    url_setting = "ANTHROPIC_BASE_URL"
    room_field = "max_tokens"
    request_id_header = "request-id"
    error_only = False  # its SDK hands over the body's "error" object alone
    screen_thinking: Thinking | None = None

    def __init__(self, *, max_retries: int = 4, timeout: float = DEFAULT_TIMEOUT,
                 retry_after_cap: float = RETRY_AFTER_CAP, call_deadline: float | None = None,
                 answer_tokens: int | None = None, progress: Progress | None = None,
                 thinking: Mapping[Role, Thinking] | None = None, sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = random.random, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        if timeout <= 0 or max_retries < 0 or retry_after_cap < 0 or (call_deadline is not None
                                                                     and call_deadline <= 0):
            raise UsageError(f"{type(self).__name__} needs timeout > 0, max_retries >= 0, retry_after_cap >= 0 "
                             "and call_deadline > 0")
        self.max_retries, self.timeout, self.retry_after_cap = max_retries, timeout, retry_after_cap
        self.call_deadline, self.answer_tokens = call_deadline, answer_tokens
        self.thinking: Mapping[Role, Thinking] = thinking or {}
        self.progress: Progress = progress or _nothing
        self.sleep, self.jitter, self.clock, self.wall = sleep, jitter, clock, wall
        self._api_key: str | None = None
        self._auth_token: str | None = None
        self._heard = False  # until the service has answered, a connection it closes unanswered is final

    # the wire format's part
    @property
    def credential(self) -> str:
        raise NotImplementedError

    @property
    def endpoint(self) -> str:
        raise NotImplementedError

    @property
    def service_name(self) -> str:
        """Who a connection failed to reach."""
        return self.endpoint

    def _ask(self, request: ModelRequest, model: str, thinking: Thinking | None, budget: Budget, where: str,
             first: bool) -> ModelAnswer:
        """One answer at ``budget``, or the error it means, with its ``billed`` answer."""
        raise NotImplementedError

    def _held(self, request: ModelRequest, model: str, thinking: Thinking | None, budget: Budget) -> dict[str, Any]:
        """The request as Messages API parameters, which the cost cap prices."""
        raise NotImplementedError

    def _refused(self, status: int, detail: str, body: Any, where: str, model: str) -> StayError | None:
        """The final error of a status no wait changes, or None."""
        return None

    def output_limit(self, model: str) -> int:
        return OUTPUT_LIMIT

    def model_for(self, role: Role, model: str) -> str:
        return model

    # the policy
    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        return self._complete(request, self.model_for(request.role, model), self.thinking.get(request.role))

    def _complete(self, request: ModelRequest, model: str, thinking: Thinking | None) -> ModelAnswer:
        where = f"stage {request.stage} ({request.artefact})"
        budget = self._first(request, model, thinking, where)
        try:
            return self._ask(request, model, thinking, budget, where, True)
        except TruncationError as cut:
            more, spent = self._more(cut, request, model, thinking, budget, where)
        with paying(spent):
            return plus(spent, self._ask(request, model, thinking, more, where, False))

    def _roomier(self, answer: int, budget: Budget, model: str) -> Budget | None:
        answer = min(answer, self.output_limit(model) - budget.thinking)
        return Budget(answer, budget.thinking) if answer > budget.answer else None

    def _first(self, request: ModelRequest, model: str, thinking: Thinking | None, where: str) -> Budget:
        """The configured room, or the room an earlier run's retry needed, held against the cap instead."""
        budget = budget_for(request, model, thinking, self.answer_tokens)
        room = _ROOM.get()
        more = None if room is None or room.known is None else self._roomier(room.known, budget, model)
        if more is None:
            return budget
        hold_instead(self._held(request, model, thinking, more))
        self.progress(f"  {where}: asking with {more.answer} tokens for the answer at once, the room its "
                      f"retry was given when an earlier run's answer to it was cut off at {self.room_field}")
        return more

    def _more(self, cut: TruncationError, request: ModelRequest, model: str, thinking: Thinking | None,
              budget: Budget, where: str) -> tuple[Budget, Usage]:
        """The one retry of a cut-off answer (twice the room, up to the limit), held against the cost cap
        before it is sent, and what the cut-off reply cost; re-raises ``cut`` when there is no more room."""
        paid = cut.billed if isinstance(cut.billed, ModelAnswer) else None
        more = self._roomier(2 * budget.answer, budget, model) if paid and paid.stop_reason in CUT_OFF else None
        if paid is None or more is None:
            raise cut
        if (room := _ROOM.get()) is not None:  # recorded before the cap may stop the run: a rerun starts there
            room.remember(more.answer)
        # counted as its own call by a cap that holds it, else with the retry's answer
        spent = Usage() if hold_more(self._held(request, model, thinking, more), paid) else paid.usage
        self.progress(f"  {where}: the answer was cut off at {self.room_field}={budget.max_tokens}; asking once "
                      f"more with {more.answer} tokens for the answer (set STAY_ANSWER_TOKENS to start there)")
        return more, spent

    def _wait(self, failure: _Failure, where: str, attempt: int, clock: _Deadline) -> float:
        """The wait before the next attempt, or the error that ends the call."""
        if not failure.retryable:
            raise failure.error from None
        # a stall whose timeout the deadline cut short ends here, not as "no answer within 300 s"
        clock.check(attempt, ended=failure.timed_out and clock.cut)
        if attempt == self.max_retries:
            raise failure.error from None
        hint = failure.wait_hint
        if hint is not None and hint > self.retry_after_cap:
            # retrying sooner than the service allows only earns another 429
            raise ModelUnavailable(
                f"{where}: the API asks to wait {hint:g} s (retry-after, above the {self.retry_after_cap:g} s "
                "this run waits)", fix="rerun after that (finished files are kept, nothing is paid twice), or "
                "raise STAY_RETRY_AFTER_CAP") from None
        wait = backoff(attempt, self.jitter()) if hint is None else jittered(hint, self.jitter())
        clock.check(attempt, wait)
        if failure.timed_out:
            self.progress(f"  {where}: no answer within {self.timeout:g} s (the request timeout); "
                          f"retrying ({attempt + 1} of {self.max_retries})")
        return wait

    def _retried(self, send: Callable[[Any], Any], where: str, clock: _Deadline, model: str = "") -> Any:
        """``send(timeout)`` with its retries, under ``clock``."""
        for attempt in range(self.max_retries + 1):
            try:
                found = send(clock.timeout(attempt))
                self._heard = True
                return found
            except StayError:
                raise
            except Exception as exc:
                clock.check(attempt, ended=clock.fired)  # the watchdog closed the stream: that is why
                self.sleep(self._wait(self._classify(exc, where, attempt, model), where, attempt, clock))
        raise AssertionError("unreachable: the loop returns or raises")

    def _classify(self, exc: Exception, where: str, attempt: int, model: str = "") -> _Failure:
        import httpx2

        sdk = importlib.import_module(self.sdk)
        tries = f"after {attempt + 1} attempt{'s' if attempt else ''}"

        def clean(text: object) -> str:
            return one_line(redact(str(text), [self._api_key, self._auth_token]))

        down = unreachable(exc, where, self.endpoint, self.url_setting, answered=self._heard,
                           service="" if self.service_name == self.endpoint else f"{self.service_name} at ")
        if down is not None:
            return _Failure(False, down)
        if isinstance(exc, (sdk.APITimeoutError, httpx2.TimeoutException)):
            return _Failure(True, ModelUnavailable(
                f"{where}: no answer within {self.timeout:g} s, {tries} (the service is not answering)",
                fix=RERUN), timed_out=True)
        if isinstance(exc, (sdk.APIConnectionError, httpx2.TransportError)):
            cause = exc.__cause__ if isinstance(exc, sdk.APIConnectionError) and exc.__cause__ else exc
            return _Failure(True, ModelUnavailable(
                f"{where}: the connection to {self.service_name} failed ({type(cause).__name__}: {clean(cause)}) "
                f"{tries}", fix=f"check the network or {self.url_setting}, then {RERUN}"))
        if isinstance(exc, sdk.APIStatusError):
            status, headers = exc.status_code, exc.response.headers
            detail = clean(getattr(exc, "message", exc))
            said = request_id_of(getattr(exc, "request_id", None))
            detail += f"; {self.request_id_header} {said}" if said else ""  # what the provider's support asks for
            body = {"error": exc.body if isinstance(exc.body, Mapping) else {}} if self.error_only else exc.body
            refused = self._refused(status, detail, body, where, model)
            if refused is not None:
                return _Failure(False, refused)
            if retryable_status(status, headers, body):
                what = {429: "rate limited (429)", 529: "overloaded (529)"}.get(
                    status, f"unavailable (HTTP {status}: {detail})")
                return _Failure(True, ModelUnavailable(f"{where}: {self.service} is {what} {tries}", fix=RERUN),
                                wait_hint=retry_after(headers, now=self.wall))
            return _Failure(False, _Rejected(f"{where}: {self.service} answered HTTP {status}: {detail}", status))
        if isinstance(exc, (sdk.APIResponseValidationError, ValueError, AssertionError, RuntimeError,
                            KeyError, TypeError, AttributeError)):
            # the SDK could not read the body: not JSON, an HTML page, a stream with no message
            return _Failure(False, malformed(where, f"it could not be read as a message ({type(exc).__name__}: "
                                                    f"{clean(exc) or 'no message'})", self.service, self.url_setting))
        if isinstance(exc, sdk.APIError):
            return _Failure(False, ModelError(f"{where}: {type(exc).__name__}: {clean(exc)}"))
        raise exc

    def screening(self, text: str) -> Screening:
        request = screen_request(text)
        try:
            answer = self._complete(request, self._screened_by(), self.screen_thinking)
        except _Rejected as exc:
            if exc.status not in CONFIG_STATUSES:
                raise
            # a configuration error, not the service being unreachable: never fail open on it
            fix = (f"check {self.credential}" if exc.status in (401, 403) else
                   f"check STAY_MODEL_ANALYSIS={self._screened_by()} (the screen's model) names a model "
                   "this key can use")
            raise UsageError(f"{exc}; the brief was not screened and nothing was written: {fix}") from None
        except RefusalError as exc:  # a refusal to read the brief is a verdict, not a failure
            found = re.search(r"refused to answer \((.*)\); ", str(exc))
            why = f" ({found.group(1)})" if found else ""
            billed = exc.billed if isinstance(exc.billed, ModelAnswer) else None  # a refusal is paid for
            return Screening(f"the screening model refused to read the brief{why}", request, billed)
        return Screening(verdict(answer), request, answer)

    def _screened_by(self) -> str:
        raise NotImplementedError

    def screen(self, text: str) -> str | None:
        return self.screening(text).reason


_REQUEST_ID = re.compile(r"[A-Za-z0-9_\-]{1,128}")


def request_id_of(value: object) -> str | None:
    """Headers are untrusted: only an id's shape is kept."""
    return value if isinstance(value, str) and _REQUEST_ID.fullmatch(value) else None


_KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """API error text without secrets nor anything shaped like an Anthropic key: it is printed and logged."""
    return _KEY_SHAPE.sub(_secrets.REDACTED, _secrets.redact(text, secrets))


def malformed(where: str, what: str, service: str = "the API", setting: str = "ANTHROPIC_BASE_URL") -> ModelError:
    return ModelError(f"{where}: {service}'s response is malformed: {what}; nothing was written, run the "
                      f"command again (if it persists, check {setting} and any proxy in between)")


MAX_ANSWER_DEPTH = 64
"""Deeper JSON is refused before parsing: a 100,000-deep answer would exhaust the recursion."""


def json_object(text: str, where: str) -> dict[str, Any]:
    if json_nesting(text) > MAX_ANSWER_DEPTH:
        raise ModelError(f"{where}: the answer nests deeper than {MAX_ANSWER_DEPTH} levels; no artefact "
                         "is that deep, so it was not parsed: run the command again")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnswerError(f"{where}: the answer is not JSON ({exc.msg} at character {exc.pos})",
                          raw=text) from None
    if not isinstance(data, dict):
        raise AnswerError(f"{where}: the answer is JSON but not an object", raw=text)
    return data


def unreachable(exc: BaseException, where: str, url: str, setting: str, service: str = "", *,
                answered: bool) -> Unreachable | None:
    """The final error when the service cannot be reached and has not answered yet this run; None: retry."""
    import socket

    import httpx2

    chain: list[BaseException] = []
    while exc is not None and exc not in chain and len(chain) < 10:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]  # None ends the chain
    root = chain[-1]
    if answered:  # it was there this run: a drop or a restart, which the retries are for
        return None
    if any(isinstance(link, (httpx2.ConnectError, httpx2.ConnectTimeout)) for link in chain):
        why = ("the connection was refused: nothing listens there" if isinstance(root, ConnectionRefusedError) else
               "no such host" if isinstance(root, socket.gaierror) else
               "no connection within the connect timeout" if isinstance(root, (TimeoutError, httpx2.ConnectTimeout))
               else f"{type(root).__name__}: {one_line(redact(str(root)), 120)}")
    elif any(isinstance(link, (httpx2.NetworkError, httpx2.RemoteProtocolError)) for link in chain):
        why = (f"it closed the connection with no answer ({type(root).__name__}: {one_line(redact(str(root)), 120)}):"
               " is that an HTTP server of the API?")
    else:
        return None
    proxy = _proxy_for(url)
    through = f" through the proxy {_secrets.shown_url(proxy)}" if proxy else ""
    return Unreachable(f"{where}: cannot reach {service}{_secrets.shown_url(url)}{through} ({why}), not retried",
                       fix=f"check that {'the server and the proxy are' if proxy else 'the server is'} running and "
                           f"{setting} names it, then {RERUN}")


def _proxy_for(url: str) -> str | None:
    """The proxy (``HTTPS_PROXY``..., ``NO_PROXY`` heeded) the SDK goes through to ``url``."""
    import urllib.request
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return None
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    return None if not proxy or urllib.request.proxy_bypass(host) else proxy


_RETRYABLE_ERROR_TYPES = ("overloaded_error", "rate_limit_error", "api_error", "timeout_error")
_SPEND_LIMIT_CODES = ("enforced_spend_limit_reached",)
_SPEND_LIMIT_WORDS = ("spend limit", "usage limit", "credit balance")


def spend_limited(body: Any) -> bool:
    """A spend limit, by its code or its message (a proxy may drop the details): waiting will not lift it."""
    error = body.get("error") if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        return False
    details = error.get("details")
    if isinstance(details, Mapping) and details.get("error_code") in _SPEND_LIMIT_CODES:
        return True
    text = error.get("message")
    return isinstance(text, str) and any(word in text.lower() for word in _SPEND_LIMIT_WORDS)


def retryable_status(status: int, headers: Mapping[str, str] | None, body: Any) -> bool:
    """The SDK's retry rule (408, 409, 429, 5xx, ``x-should-retry``, an error event's type), never a spend limit."""
    if spend_limited(body):
        return False
    should = (headers or {}).get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    if status in (408, 409, 429) or status >= 500:
        return True
    error = body.get("error") if isinstance(body, Mapping) else None
    return isinstance(error, Mapping) and error.get("type") in _RETRYABLE_ERROR_TYPES


def retry_after(headers: Mapping[str, str] | None, now: Callable[[], float] = time.time) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, ``retry-after`` seconds, then HTTP-date."""
    headers = headers or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(headers[name]) * scale
        except (KeyError, ValueError):
            continue
        if 0 <= seconds < float("inf"):  # not NaN either
            return seconds
    try:
        when = email.utils.parsedate_to_datetime(headers["retry-after"])
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; "-0000" parses as naive
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - now())


BACKOFF_FIRST = 0.5
BACKOFF_MOST = 8.0
RETRY_AFTER_SPREAD = 0.25
"""A retry-after wait is lengthened by up to this share, so calls told the same wait do not all come back at once."""


def backoff(attempt: int, jitter: float) -> float:
    """Equal jitter: calls that failed together spread over half a step."""
    step = min(BACKOFF_FIRST * 2.0 ** attempt, BACKOFF_MOST)
    return step * (0.5 + 0.5 * jitter)


def jittered(hint: float, jitter: float) -> float:
    return hint + jitter * max(RETRY_AFTER_SPREAD * hint, BACKOFF_FIRST)
