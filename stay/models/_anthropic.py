"""The Claude backend (anthropic SDK 2.x) and the Messages API on the wire: request parameters,
reading a response, the prefix gate, and our own retries (the SDK's sleep for any
``retry-after``, up to 49 days): jittered, capped, under a per-call deadline, with one-line errors.
A long answer streams, so the request timeout measures silence, never an answer's length."""

from __future__ import annotations

import datetime
import email.utils
import hashlib
import json
import random
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stay import _secrets
from stay._bounds import json_nesting
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
from stay.models._protocol import (
    DEFAULT_MODELS,
    OUTPUT_LIMIT,
    PRICES,
    SCREENING,
    THINKING,
    Price,
    Screening,
    Thinking,
    hold_instead,
    hold_more,
    known_room,
    min_cacheable_tokens,
    needs_room,
    screen_request,
    thinks_adaptively,
    verdict,
)
from stay.requests import ModelAnswer, ModelRequest, Role, Usage

if TYPE_CHECKING:  # the SDK takes seconds to import: only a run that talks to Claude pays for it
    import anthropic

    from stay.settings import Settings

Progress = Callable[[str], None]

DEFAULT_TIMEOUT = 300.0
RETRY_AFTER_CAP = 60.0
SLOWEST_TOKENS_PER_SECOND = 20.0
"""The slowest pace waited for when no ``call_deadline`` is set (``default_deadline``)."""


def default_deadline(max_tokens: int, timeout: float) -> float:
    """Time for a whole answer at the slowest pace: only a stall or a stream of pings reaches it."""
    return max(2 * timeout, max_tokens / SLOWEST_TOKENS_PER_SECOND)


MODEL_CHECK_TIMEOUT = 10.0
"""Seconds the up-front model check waits per id: a stalled gateway costs a run this once."""

_CHECKED: dict[tuple[str, str], int | None] = {}
"""(endpoint, model id) -> its ``max_tokens``, for each id the Models API confirmed (None: unsaid)."""


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


CONFIG_STATUSES = (400, 401, 403, 404)
"""Refused for what it asks (a mistyped model id, a rejected key): configuration, not the service."""


def _nothing(*_told: object) -> None:
    """No progress line to show, no prefix gate to tell."""


def _identified(message: Any, stream: Any) -> Any:
    """The SDK sets ``_request_id`` on a message it parsed whole, not on one a stream assembled."""
    if getattr(message, "_request_id", None) is None:
        message._request_id = getattr(stream, "request_id", None)
    return message


def _begun(stream: Any, started: Callable[[], None]) -> None:
    """Read ``stream`` up to its ``message_start`` (its prefixes are cached by then) and say so."""
    for event in iter(lambda: next(stream, None), None):
        if event.type == "message_start":
            started()
            return


def _counting(spent: Usage, answer: Callable[[], ModelAnswer]) -> ModelAnswer:
    """``answer()`` (or its error's billed answer) with ``spent`` added: one call, everything it paid."""
    try:
        found = answer()
    except (AnswerError, ModelError) as exc:
        if isinstance(exc.billed, ModelAnswer):
            exc.billed = exc.billed.model_copy(update={"usage": spent + exc.billed.usage})
        raise
    return found.model_copy(update={"usage": spent + found.usage})


class _Deadline:
    """One call's deadline, retries and waits included: each attempt's timeout is cut to the time left."""

    def __init__(self, backend: Retrying, max_tokens: int, where: str, timeout: float | None = None) -> None:
        self.clock, self.where, self.request_timeout = backend.clock, where, timeout or backend.timeout
        self.seconds = backend.call_deadline or default_deadline(max_tokens, self.request_timeout)
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
        """``call`` under the deadline: cancelled, and said in one line, once it passes."""
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


class Retrying:
    """The retry settings and wait rule the Claude and OpenAI-compatible backends share; ``sleep``,
    ``jitter``, ``clock`` (monotonic) and ``wall`` (HTTP-date ``retry-after``) are injected in tests."""

    def __init__(self, *, max_retries: int, timeout: float, retry_after_cap: float, call_deadline: float | None,
                 answer_tokens: int | None, progress: Progress | None, sleep: Callable[[float], None],
                 jitter: Callable[[], float], clock: Callable[[], float], wall: Callable[[], float]) -> None:
        if timeout <= 0 or max_retries < 0 or retry_after_cap < 0 or (call_deadline is not None
                                                                     and call_deadline <= 0):
            raise UsageError(f"{type(self).__name__} needs timeout > 0, max_retries >= 0, retry_after_cap >= 0 "
                             "and call_deadline > 0")
        self.max_retries, self.timeout, self.retry_after_cap = max_retries, timeout, retry_after_cap
        self.call_deadline, self.answer_tokens = call_deadline, answer_tokens
        self.progress: Progress = progress or _nothing
        self.sleep, self.jitter, self.clock, self.wall = sleep, jitter, clock, wall
        self._heard = False  # until the service has answered, a connection it closes unanswered is final

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

    def _retried(self, send: Callable[[Any], Any], where: str, clock: _Deadline,
                 classify: Callable[[Exception, str, int], _Failure]) -> Any:
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
                self.sleep(self._wait(classify(exc, where, attempt), where, attempt, clock))
        raise AssertionError("unreachable: the loop returns or raises")


class AnthropicBackend(Retrying):
    """Claude, sync and async; the client is made on first use (a replayed run needs no key)."""

    name = "anthropic"
    prices: Mapping[str, Price] = PRICES
    features = frozenset({"caching", "batches", "thinking", "count_tokens", "screen"})
    default_models: Mapping[Role, str] = DEFAULT_MODELS

    def __init__(self, client: anthropic.Anthropic | None = None,
                 async_client: anthropic.AsyncAnthropic | None = None, *, api_key: str | None = None,
                 auth_token: str | None = None, base_url: str | None = None,
                 screen_model: str = DEFAULT_MODELS["analysis"],
                 max_retries: int = 4, timeout: float = DEFAULT_TIMEOUT,
                 retry_after_cap: float = RETRY_AFTER_CAP, thinking: Mapping[Role, Thinking] | None = None,
                 answer_tokens: int | None = None, progress: Progress | None = None,
                 warm_prefixes: bool = True, sleep: Callable[[float], None] = time.sleep,
                 async_sleep: Callable[[float], Awaitable[None]] | None = None,
                 jitter: Callable[[], float] = random.random, call_deadline: float | None = None,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        super().__init__(max_retries=max_retries, timeout=timeout, retry_after_cap=retry_after_cap,
                         call_deadline=call_deadline, answer_tokens=answer_tokens, progress=progress, sleep=sleep,
                         jitter=jitter, clock=clock, wall=wall)
        self.thinking: Mapping[Role, Thinking] = THINKING if thinking is None else thinking
        self.gate = PrefixGate() if warm_prefixes else None
        self.async_sleep = async_sleep  # None: asyncio.sleep (asyncio is imported only by async callers)
        self._api_key = api_key.strip() if api_key else api_key  # a key pasted with its newline
        # a bearer token for a gateway (ANTHROPIC_AUTH_TOKEN), used only when there is no key
        self._auth_token = None if self._api_key else (auth_token.strip() if auth_token else None) or None
        self._base_url = base_url
        _secrets.keep([self._api_key, self._auth_token, *_secrets.url_secrets(base_url)])
        self.screen_model = screen_model  # the analysis role's
        self._client = None if client is None else self._configured(client)
        self._async_client = None if async_client is None else self._configured(async_client)

    def _configured(self, client: Any) -> Any:
        """The client with the SDK's retries off (ours apply) and our timeout."""
        import httpx2

        self._api_key = self._api_key or getattr(client, "api_key", None)
        self._auth_token = self._auth_token or getattr(client, "auth_token", None)
        # a client made elsewhere carries its own key, token and URL: known secrets from here on
        _secrets.keep([self._api_key, self._auth_token,
                       *_secrets.url_secrets(str(getattr(client, "base_url", "") or ""))])
        return client.with_options(max_retries=0,
                                   timeout=httpx2.Timeout(self.timeout, connect=min(self.timeout, 10.0)))

    @property
    def _credential(self) -> str:
        return "ANTHROPIC_AUTH_TOKEN" if self._auth_token and not self._api_key else "ANTHROPIC_API_KEY"

    def _made(self, kind: Any) -> Any:
        """A client with the key, or else a gateway's token; base_url None: the SDK reads ANTHROPIC_BASE_URL."""
        if not (self._api_key or self._auth_token):
            raise UsageError("the anthropic backend needs an API key (ANTHROPIC_API_KEY) or a gateway's bearer "
                             "token (ANTHROPIC_AUTH_TOKEN); set one, or build offline with --backend offline (a "
                             "--replay run needs neither)")
        return self._configured(kind(api_key=self._api_key, auth_token=self._auth_token, base_url=self._base_url))

    @property
    def client(self) -> anthropic.Anthropic:
        if self._client is None:
            import anthropic

            self._client = self._made(anthropic.Anthropic)
        client: anthropic.Anthropic = self._client
        return client

    @property
    def async_client(self) -> anthropic.AsyncAnthropic:
        if self._async_client is None:
            import anthropic

            self._async_client = self._made(anthropic.AsyncAnthropic)
        client: anthropic.AsyncAnthropic = self._async_client
        return client

    def check_models(self, models: Mapping[Role, str]) -> None:
        """Ask the Models API for each id before anything is paid: an unknown id or a rejected key
        is one line; anything else is left to the calls, so the check never stops a run that would work."""
        import anthropic

        by_id: dict[str, list[Role]] = {}
        for role, model in models.items():
            by_id.setdefault(model, []).append(role)
        client = self.client.with_options(timeout=min(self.timeout, MODEL_CHECK_TIMEOUT))
        for model, roles in by_id.items():
            key = (str(client.base_url), model)
            if key in _CHECKED:
                continue
            try:
                info = client.models.retrieve(model)
            except anthropic.NotFoundError as exc:
                if model not in str(exc):
                    continue  # a gateway without the Models API (its 404 names a route, not this id)
                names = " and ".join(f"STAY_MODEL_{role.upper()}" for role in roles)
                raise UsageError(f"{names}={model}: the Anthropic API knows no model '{model}' (404 from the "
                                 f"Models API); fix the id (the default is {DEFAULT_MODELS[roles[0]]}) and run the "
                                 "command again; nothing was paid or written") from None
            except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
                raise UsageError(f"{self._credential} was rejected ({exc.status_code}) when checking the model "
                                 f"'{model}'; check it; nothing was paid or written") from None
            except (anthropic.APITimeoutError, anthropic.APIConnectionError):
                return  # the endpoint is not answering: wait no longer here, the calls will say so
            except Exception:  # not a verdict on the id: the calls will say what it is
                continue
            limit = getattr(info, "max_tokens", None)
            _CHECKED[key] = limit if isinstance(limit, int) and limit > 0 else None

    def output_limit(self, model: str) -> int:
        said = _CHECKED.get((str((self._client or self._async_client or self.client).base_url), model))
        return said if said is not None else OUTPUT_LIMIT

    def _roomier(self, answer: int, budget: Budget, model: str) -> Budget | None:
        answer = min(answer, self.output_limit(model) - budget.thinking)
        return Budget(answer, budget.thinking) if answer > budget.answer else None

    def _first(self, request: ModelRequest, model: str, thinking: Thinking | None, where: str) -> Budget:
        """The configured room, or the room an earlier run's retry needed, held against the cap instead."""
        budget = budget_for(request, model, thinking, self.answer_tokens)
        known = known_room()
        more = None if known is None else self._roomier(known, budget, model)
        if more is None:
            return budget
        hold_instead(request_params(request, model, thinking, answer_tokens=more.answer))
        self.progress(f"  {where}: asking with {more.answer} tokens for the answer at once, the room its "
                      "retry was given when an earlier run's answer to it was cut off at max_tokens")
        return more

    def _retry(self, message: Any, request: ModelRequest, model: str, thinking: Thinking | None,
               budget: Budget, where: str) -> tuple[dict[str, Any], Budget, Usage] | None:
        """The one retry of a cut-off answer, held against the cost cap before it is sent; None: no more room."""
        cut_off = getattr(message, "stop_reason", None) == "max_tokens"
        more = self._roomier(2 * budget.answer, budget, model) if cut_off else None  # twice the room, up to the limit
        if more is None:
            return None
        spent = usage_of(message, where)  # the cut-off reply was billed too: counted as its own call,
        params = request_params(request, model, thinking, answer_tokens=more.answer)
        needs_room(more.answer)  # recorded before the cap may stop the run: a rerun starts there
        if hold_more(params, _billed(message, request, False, budget)):  # or, no gateway, with the retry's
            spent = Usage()
        self.progress(f"  {where}: the answer was cut off at max_tokens={budget.max_tokens}; asking once more "
                      f"with {more.answer} tokens for the answer (set STAY_ANSWER_TOKENS to start there)")
        return params, more, spent

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        return self._complete(request, model, self.thinking.get(request.role))

    def _complete(self, request: ModelRequest, model: str, thinking: Thinking | None) -> ModelAnswer:
        where, budget, params = self._prepared(request, model, thinking)
        with self.gate.hold(prefix_keys(params)) if self.gate is not None else nullcontext(_nothing) as started:
            message = self._call(params, where, started)
        retry = self._retry(message, request, model, thinking, budget, where)
        if retry is None:
            return answer_from(message, request, budget=budget)
        params, more, spent = retry
        message = self._call(params, where)  # the prefix is warm by now: the retry needs no gate
        return _counting(spent, lambda: answer_from(message, request, budget=more))

    def _prepared(self, request: ModelRequest, model: str,
                  thinking: Thinking | None) -> tuple[str, Budget, dict[str, Any]]:
        where = f"stage {request.stage} ({request.artefact})"
        budget = self._first(request, model, thinking, where)
        return where, budget, request_params(request, model, thinking, answer_tokens=budget.answer)

    def _call(self, params: dict[str, Any], where: str, started: Callable[[], None] = _nothing) -> Any:
        """One call with its retries; ``started`` is told when a streamed response begins (the gate)."""
        streamed = streams(params["max_tokens"], self.timeout)
        clock = _Deadline(self, params["max_tokens"], where)

        def send(timeout: Any) -> Any:
            if not streamed:
                return self.client.messages.create(**params, timeout=timeout)
            with self.client.messages.stream(**params, timeout=timeout) as stream, clock.watch(stream.close):
                _begun(stream, started)
                return _identified(stream.get_final_message(), stream)
        return self._retried(send, where, clock, self._classify)

    async def acomplete(self, request: ModelRequest, model: str) -> ModelAnswer:
        thinking = self.thinking.get(request.role)
        where, budget, params = self._prepared(request, model, thinking)
        async with self.gate.ahold(prefix_keys(params)) if self.gate is not None else nullcontext(_nothing) as started:
            message = await self._acall(params, where, started)
        retry = self._retry(message, request, model, thinking, budget, where)
        if retry is None:
            return answer_from(message, request, budget=budget)
        params, more, spent = retry
        message = await self._acall(params, where)
        return _counting(spent, lambda: answer_from(message, request, budget=more))

    async def _acall(self, params: dict[str, Any], where: str, started: Callable[[], None] = _nothing) -> Any:
        import asyncio  # imported already by whoever runs this coroutine

        streamed = streams(params["max_tokens"], self.timeout)
        clock = _Deadline(self, params["max_tokens"], where)
        for attempt in range(self.max_retries + 1):
            try:
                client = self.async_client
                attempted = self._attempt(client, params, streamed, clock.timeout(attempt), started)
                message = await clock.awaited(attempted, attempt)
                self._heard = True
                return message
            except StayError:
                raise
            except Exception as exc:
                wait = self._wait(self._classify(exc, where, attempt), where, attempt, clock)
                await (self.async_sleep or asyncio.sleep)(wait)
        raise AssertionError("unreachable: the loop returns or raises")

    @staticmethod
    async def _attempt(client: Any, params: dict[str, Any], streamed: bool, timeout: Any,
                       started: Callable[[], None]) -> Any:
        if streamed:
            async with client.messages.stream(**params, timeout=timeout) as stream:
                async for event in stream:  # up to message_start, as ``_begun``; the rest is read below
                    if event.type == "message_start":
                        started()
                        break
                return _identified(await stream.get_final_message(), stream)
        return await client.messages.create(**params, timeout=timeout)

    def _classify(self, exc: Exception, where: str, attempt: int) -> _Failure:
        import anthropic
        import httpx2

        tries = f"after {attempt + 1} attempt{'s' if attempt else ''}"

        def clean(text: object) -> str:
            return one_line(redact(str(text), [self._api_key, self._auth_token]))

        url = str(getattr(self._client or self._async_client, "base_url", self._base_url)).rstrip("/")
        down = unreachable(exc, where, url, "ANTHROPIC_BASE_URL", "the Anthropic API at ", answered=self._heard)
        if down is not None:
            return _Failure(False, down)
        if isinstance(exc, (anthropic.APITimeoutError, httpx2.TimeoutException)):
            return _Failure(True, ModelUnavailable(
                f"{where}: no answer within {self.timeout:g} s, {tries} (the service is not answering)",
                fix=RERUN), timed_out=True)
        if isinstance(exc, (anthropic.APIConnectionError, httpx2.TransportError)):
            cause = exc.__cause__ if isinstance(exc, anthropic.APIConnectionError) and exc.__cause__ else exc
            return _Failure(True, ModelUnavailable(
                f"{where}: the connection to the Anthropic API failed ({type(cause).__name__}: {clean(cause)}) "
                f"{tries}", fix=f"check the network or ANTHROPIC_BASE_URL, then {RERUN}"))
        if isinstance(exc, anthropic.APIStatusError):
            status, headers, body = exc.status_code, exc.response.headers, exc.body
            detail = clean(getattr(exc, "message", exc))
            said = request_id_of(exc.request_id)
            detail += f"; request-id {said}" if said else ""  # what the provider's support asks for
            if status == 401:
                return _Failure(False, _Rejected(f"{where}: {self._credential} was rejected (401); check it", 401))
            if spend_limited(body):
                return _Failure(False, ModelError(
                    f"{where}: the API refused the call: a spend limit or the credit balance is reached (HTTP "
                    f"{status}: {detail}); not retried, since waiting will not lift it: raise the limit in the "
                    "Claude Console (Billing), or rerun once it resets (finished files are kept, nothing is paid "
                    "twice)"))
            if retryable_status(status, headers, body):
                what = {429: "rate limited (429)", 529: "overloaded (529)"}.get(
                    status, f"unavailable (HTTP {status}: {detail})")
                return _Failure(True, ModelUnavailable(f"{where}: the API is {what} {tries}", fix=RERUN),
                                wait_hint=retry_after(headers, now=self.wall))
            return _Failure(False, _Rejected(f"{where}: the API answered HTTP {status}: {detail}", status))
        if isinstance(exc, (anthropic.APIResponseValidationError, ValueError, AssertionError, RuntimeError,
                            KeyError, TypeError, AttributeError)):
            # the SDK could not read the body: not JSON, an HTML page, a stream with no message
            return _Failure(False, _malformed(where, f"it could not be read as a message ({type(exc).__name__}: "
                                                     f"{clean(exc) or 'no message'})"))
        if isinstance(exc, anthropic.APIError):
            return _Failure(False, ModelError(f"{where}: {type(exc).__name__}: {clean(exc)}"))
        raise exc

    def screening(self, text: str) -> Screening:
        request = screen_request(text)
        try:
            answer = self._complete(request, self.screen_model, SCREENING)
        except _Rejected as exc:
            if exc.status not in CONFIG_STATUSES:
                raise
            # a configuration error, not the service being unreachable: never fail open on it
            fix = (f"check {self._credential}" if exc.status in (401, 403) else
                   f"check STAY_MODEL_ANALYSIS={self.screen_model} (the screen's model) names a model "
                   "this key can use")
            raise UsageError(f"{exc}; the brief was not screened and nothing was written: {fix}") from None
        except RefusalError as exc:  # a refusal to read the brief is a verdict, not a failure
            found = re.search(r"refused to answer \((.*)\); ", str(exc))
            why = f" ({found.group(1)})" if found else ""
            billed = exc.billed if isinstance(exc.billed, ModelAnswer) else None  # a refusal is paid for
            return Screening(f"the screening model refused to read the brief{why}", request, billed)
        return Screening(verdict(answer), request, answer)

    def screen(self, text: str) -> str | None:
        return self.screening(text).reason


def make(settings: Settings, *, progress: Progress | None = None,
         client: anthropic.Anthropic | None = None) -> AnthropicBackend:
    return AnthropicBackend(client, api_key=settings.api_key, auth_token=settings.auth_token,
                            base_url=settings.base_url, progress=progress,
                            screen_model=settings.model("analysis"), timeout=settings.request_timeout,
                            max_retries=settings.max_retries, retry_after_cap=settings.retry_after_cap,
                            call_deadline=settings.call_deadline,
                            answer_tokens=settings.answer_tokens)


SDK_NONSTREAMING_TOKENS = 21_333
"""Above this the SDK refuses a non-streaming request (``_calculate_nonstreaming_timeout``)."""

_SDK_TOKENS_PER_SECOND = 128_000 / 3_600


def streams(max_tokens: int, timeout: float) -> bool:
    """The SDK would refuse it non-streaming, or its answer could outlast the request timeout."""
    return max_tokens > min(SDK_NONSTREAMING_TOKENS, timeout * _SDK_TOKENS_PER_SECOND)


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


def request_params(request: ModelRequest, model: str, thinking: Thinking | None = None, *,
                   answer_tokens: int | None = None) -> dict[str, Any]:
    import anthropic

    system = []
    for block in request.system:
        if not block.text:
            continue  # the API refuses an empty text block
        entry: dict[str, Any] = {"type": "text", "text": block.text}
        if block.cache:
            entry["cache_control"] = {"type": "ephemeral"}
        system.append(entry)
    output_config: dict[str, Any] = {"format": {"type": "json_schema",
                                                "schema": anthropic.transform_schema(request.output_schema)}}
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": budget_for(request, model, thinking, answer_tokens).max_tokens,
        "system": system,
        "messages": [{"role": "user", "content": _user_content(request)}],
        "output_config": output_config,
    }
    if thinking is not None and thinks_adaptively(model):
        params["thinking"] = {"type": "adaptive"}
        output_config["effort"] = thinking.effort
    return params


def _user_content(request: ModelRequest) -> str | list[dict[str, Any]]:
    if not request.shared:
        return request.user
    return [{"type": "text", "text": request.shared, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": request.user}]


_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
MAX_ANSWER_DEPTH = 64
"""Deeper JSON is refused before parsing: a 100,000-deep answer would exhaust the recursion."""


def _malformed(where: str, what: str) -> ModelError:
    return ModelError(f"{where}: the API's response is malformed: {what}; nothing was written, run the "
                      "command again (if it persists, check ANTHROPIC_BASE_URL and any proxy in between)")


def usage_of(message: Any, where: str) -> Usage:
    usage = getattr(message, "usage", None)
    if usage is None:
        raise _malformed(where, "it has no usage")
    counts: dict[str, int] = {}
    for name in _TOKEN_FIELDS:
        value = getattr(usage, name, None)
        if value is None and name.startswith("cache_"):
            value = 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _malformed(where, f"usage.{name} is {value!r}, not a count of tokens")
        counts[name] = value
    details = getattr(usage, "output_tokens_details", None)
    thinking = getattr(details, "thinking_tokens", 0) or 0
    if isinstance(thinking, bool) or not isinstance(thinking, int) or not 0 <= thinking <= counts["output_tokens"]:
        raise _malformed(where, f"usage.output_tokens_details.thinking_tokens is {thinking!r}")
    return Usage(**counts, thinking_tokens=thinking)


def answer_from(message: Any, request: ModelRequest, *, budget: Budget | None = None,
                batch: bool = False) -> ModelAnswer:
    """A response as an answer, or the error it means; secrets are cut out before anything is kept."""
    try:
        return _answer_from(message, request, budget=budget, batch=batch)
    except (AnswerError, ModelError) as exc:
        # a reply read far enough to have its usage was billed, whatever it said: the error carries the cost
        billed = _billed(message, request, batch, budget)
        # a response's text reaches the message: an API or proxy echoing a secret must not have it printed or kept
        raw = getattr(exc, "raw", None)
        if _secrets.redact(str(exc)) == str(exc) and (raw is None or _secrets.redact(raw) == raw):
            exc.billed = billed
            raise
        clean: AnswerError | ModelError = (
            type(exc)(_secrets.redact(str(exc)), raw=None if raw is None else _secrets.redact(raw))
            if isinstance(exc, AnswerError) else type(exc)(_secrets.redact(str(exc))))
        clean.billed = billed
        raise clean from None


def _billed(message: Any, request: ModelRequest, batch: bool, budget: Budget | None) -> ModelAnswer | None:
    """A failed reply as an answer with no data, for counting."""
    try:
        usage = usage_of(message, f"stage {request.stage} ({request.artefact})")
    except ModelError:
        return None
    return ModelAnswer(data={}, model=_model_of(message), usage=usage, batch=batch, **_tier_of(message),
                       **_reply_of(message, budget))


def _model_of(message: Any) -> str:
    model = getattr(message, "model", None)
    return _secrets.redact(model) if isinstance(model, str) and model else "unknown"


def _tier_of(message: Any) -> dict[str, str | None]:
    """Both change the price."""
    usage = getattr(message, "usage", None)
    found: dict[str, str | None] = {}
    for name in ("service_tier", "inference_geo"):
        value = getattr(usage, name, None)
        found[name] = value if isinstance(value, str) and value else None
    return found


def _answer_from(message: Any, request: ModelRequest, *, budget: Budget | None, batch: bool) -> ModelAnswer:
    where = f"stage {request.stage} ({request.artefact})"
    if isinstance(message, (str, bytes, list, dict)) or message is None:
        kinds: dict[type, str] = {str: "text (an HTML page or a proxy's error?)", bytes: "bytes",
                                  list: "a JSON array", dict: "a JSON object that is not a message"}
        kind = kinds.get(type(message), "empty")
        raise _malformed(where, f"it is {kind}, not a message")
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise _malformed(where, f"content is {content!r}, not a list of blocks")
    usage = usage_of(message, where)
    sent, budget = budget, budget or Budget(request.max_tokens, 0)
    stop = getattr(message, "stop_reason", None)
    if stop == "max_tokens":
        thought = f"; {usage.thinking_tokens} went to thinking" if usage.thinking_tokens else ""
        raise TruncationError(
            f"{where}: the answer was cut off at max_tokens={budget.max_tokens} ({budget.answer} for the "
            f"answer, {budget.thinking} for thinking{thought}); it is incomplete, not malformed: split the "
            f"artefact, or give answers more room: STAY_ANSWER_TOKENS={2 * budget.answer} (or --answer-tokens "
            f"{2 * budget.answer}; the default is each stage's own, stay.models.MAX_TOKENS), then rerun")
    if stop == "model_context_window_exceeded":
        raise TruncationError(
            f"{where}: the request and its answer filled {getattr(message, 'model', 'the model')}'s context "
            f"window after {usage.output_tokens} output tokens (stop_reason model_context_window_exceeded); "
            "the inputs are too long for one call: split the artefact or shorten its inputs")
    if stop == "refusal":
        details = getattr(message, "stop_details", None)
        category = getattr(details, "category", None) or "uncategorised"
        explanation = getattr(details, "explanation", None) or "no explanation given"
        raise RefusalError(f"{where}: the model refused to answer ({category}: {explanation}); "
                           "revise the brief or the inputs of this stage")
    text = "".join(getattr(block, "text", "") or "" for block in content
                   if getattr(block, "type", None) == "text")
    if json_nesting(text) > MAX_ANSWER_DEPTH:
        raise ModelError(f"{where}: the answer nests deeper than {MAX_ANSWER_DEPTH} levels; no artefact "
                         "is that deep, so it was not parsed: run the command again")
    # by value only: a lesson may well show what an Anthropic key looks like
    return ModelAnswer(data=_secrets.redact_data(json_object(text, where)), model=_model_of(message), usage=usage,
                       batch=batch, **_tier_of(message), **_reply_of(message, sent))


def json_object(text: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnswerError(f"{where}: the answer is not JSON ({exc.msg} at character {exc.pos})",
                          raw=text) from None
    if not isinstance(data, dict):
        raise AnswerError(f"{where}: the answer is JSON but not an object", raw=text)
    return data


def _reply_of(message: Any, budget: Budget | None) -> dict[str, Any]:
    """For the trace: ``max_tokens`` sent, the response's ids and stop reason."""
    found: dict[str, Any] = {"max_tokens": None if budget is None else budget.max_tokens}
    for field, name in (("id", "response_id"), ("stop_reason", "stop_reason")):
        value = getattr(message, field, None)
        found[name] = _secrets.redact(value) if isinstance(value, str) and value else None
    found["request_id"] = request_id_of(getattr(message, "_request_id", None))
    return found


_REQUEST_ID = re.compile(r"[A-Za-z0-9_\-]{1,128}")


def request_id_of(value: object) -> str | None:
    """Headers are untrusted: only an id's shape is kept."""
    return value if isinstance(value, str) and _REQUEST_ID.fullmatch(value) else None


_KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """API error text without secrets nor anything shaped like an Anthropic key: it is printed and logged."""
    return _KEY_SHAPE.sub(_secrets.REDACTED, _secrets.redact(text, secrets))


def one_line(text: object, limit: int = 200) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


RERUN = "rerun to continue (finished files are kept, nothing is paid twice)"


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
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            seconds = float(raw) * scale
        except ValueError:
            continue
        if seconds >= 0 and seconds == seconds and seconds != float("inf"):
            return seconds
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
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


CACHE_TTL = 300.0  # a 5-minute cache entry's life after its last use
CHARS_PER_TOKEN = 4  # no tokenizer runs here
_SCOPE = ("tools", "tool_choice", "thinking")


def cache_scope(params: Mapping[str, Any]) -> str:
    """What invalidates the API's cache besides the prefix's text (the prompt-caching docs)."""
    config = params.get("output_config") or {}
    scope = {"model": params.get("model"), **{name: params.get(name) for name in _SCOPE},
             "format": config.get("format"), "effort": config.get("effort")}
    return json.dumps(scope, sort_keys=True, default=str)


def prefix_keys(params: Mapping[str, Any], *, min_tokens: int | None = None) -> list[str]:
    """A key per ``cache_control`` breakpoint long enough to be cached, shortest first."""
    floor = (min_cacheable_tokens(str(params.get("model"))) if min_tokens is None else min_tokens) * CHARS_PER_TOKEN
    system = params.get("system") or []
    blocks: list[Any] = [{"text": system}] if isinstance(system, str) else list(system)
    for message in params.get("messages") or []:
        content = message.get("content")
        blocks += [{"text": content}] if isinstance(content, str) else list(content or [])
    keys, digest, chars = [], hashlib.sha256(cache_scope(params).encode()), 0
    for block in blocks:
        text = block.get("text", "") if isinstance(block, Mapping) else ""
        digest.update(json.dumps(text).encode())
        chars += len(text)
        if isinstance(block, Mapping) and block.get("cache_control") and chars >= floor:
            keys.append(digest.copy().hexdigest())
    return keys


class PrefixGate:
    """Writes each cached prompt prefix once, however many calls are in flight: the API serves a
    prefix only once the request writing it has begun its response, so later ones wait for that."""

    def __init__(self, *, ttl: float = CACHE_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._changed = threading.Condition()
        self._writing: set[str] = set()
        self._fresh_until: dict[str, float] = {}
        self._ungated_until: dict[str, float] = {}
        self._async_waiters: list[tuple[Any, Any]] = []  # (event loop, asyncio.Event) per coroutine
        self.waits = 0  # requests held for another's cache write (for tests)

    def _fresh(self, key: str) -> bool:
        return self._fresh_until.get(key, float("-inf")) > self.clock()

    def _claim(self, keys: Sequence[str]) -> list[str] | None:
        """Under the lock: None while another request writes one of ``keys``; else the keys this one writes."""
        if any(key in self._writing for key in keys):
            return None
        now = self.clock()
        mine = [key for key in keys
                if not self._fresh(key) and self._ungated_until.get(key, float("-inf")) <= now]
        self._writing.update(mine)
        return mine

    def _release(self, mine: Sequence[str], keys: Sequence[str], until: dict[str, float]) -> None:
        """``mine`` written (or failed): ``keys`` marked in ``until`` for the cache's lifetime, every waiter woken."""
        with self._changed:
            self._writing.difference_update(mine)
            until.update(dict.fromkeys(keys, self.clock() + self.ttl))
            self._changed.notify_all()
            for loop, event in self._async_waiters:
                loop.call_soon_threadsafe(event.set)
            self._async_waiters.clear()

    @contextmanager
    def hold(self, keys: Sequence[str]) -> Iterator[Callable[[], None]]:
        """Wait while another request writes one of ``keys``; yields ``started``. A failed write leaves
        its prefixes ungated, so a failing service fails the waiters together, not one after another."""
        with self._changed:
            waited = False
            while (mine := self._claim(keys)) is None:
                waited = True
                self._changed.wait()
            self.waits += waited
        with self._holding(keys, mine) as started:
            yield started

    @asynccontextmanager
    async def ahold(self, keys: Sequence[str]) -> AsyncIterator[Callable[[], None]]:
        """``hold`` on an ``asyncio.Event``, never blocking the event loop."""
        import asyncio

        waited = False
        while True:
            with self._changed:
                mine = self._claim(keys)
                if mine is not None:
                    self.waits += waited
                    break
                event = asyncio.Event()
                self._async_waiters.append((asyncio.get_running_loop(), event))
            waited = True
            await event.wait()
        with self._holding(keys, mine) as started:
            yield started

    @contextmanager
    def _holding(self, keys: Sequence[str], mine: list[str]) -> Iterator[Callable[[], None]]:
        begun = False

        def started() -> None:
            nonlocal begun
            begun = True
            self._release(mine, keys, self._fresh_until)

        answered = False
        try:
            yield started
            answered = True
        finally:
            if answered or begun:
                self._release(mine, keys, self._fresh_until)  # an answer is a use: it refreshes the entries too
            else:  # a write that failed before its response began: its prefixes go ungated
                self._release(mine, mine, self._ungated_until)
