"""The Claude backend: the official anthropic SDK (2.x), with our own retries, a request
timeout, streaming where a call could be long, the prefix gate, and one-line errors.

Retries are ours, not the SDK's (its client runs with ``max_retries=0``): the SDK
sleeps for whatever ``retry-after`` says, up to 49 days. Here every wait is jittered
(concurrent calls that failed together must not retry together), a ``retry-after``
(seconds or an HTTP-date) is waited in full, and one above ``retry_after_cap`` (60 s)
ends the call at once in one line rather than retrying before the service allows; a
spend limit is never retried. Every request has a timeout (300 s by default); a
request whose answer could take longer than that streams, so the timeout measures
silence on the connection, never the length of an answer. Every call, its retries
included, has a deadline (``call_deadline``), so a stalled stream or one that only
sends ``ping`` events ends too. The service being unavailable after the retries (429,
529, 5xx, a connection error, a timeout, the deadline) is ``ModelUnavailable``: nothing
is lost, rerun to continue. API error text never carries the key.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the SDK takes seconds to import: only a run that talks to Claude pays for it
    import anthropic

    from stay.settings import Settings

from stay import _secrets
from stay.errors import AnswerError, ModelError, ModelUnavailable, RefusalError, StayError, UsageError
from stay.models._hold import hold_instead, hold_more
from stay.models._prefix_gate import PrefixGate, prefix_keys
from stay.models._prices import PRICES, Price
from stay.models._roles import DEFAULT_MODELS, OUTPUT_LIMIT, SCREENING, THINKING, Thinking
from stay.models._room import known_room, needs_room
from stay.models._screen import Screening, screen_request, verdict
from stay.models._wire import (
    RERUN,
    Budget,
    _billed,
    answer_from,
    backoff,
    budget_for,
    jittered,
    one_line,
    redact,
    request_id_of,
    request_params,
    retry_after,
    retryable_status,
    spend_limited,
    streams,
    unreachable,
    usage_of,
)
from stay.requests import ModelAnswer, ModelRequest, Role, Usage

Progress = Callable[[str], None]

DEFAULT_TIMEOUT = 300.0
RETRY_AFTER_CAP = 60.0
SLOWEST_TOKENS_PER_SECOND = 20.0
"""The slowest answer a call waits for, when no ``call_deadline`` is set: a call may take
``max_tokens`` at this rate (and never less than two request timeouts) before it ends."""


def default_deadline(max_tokens: int, timeout: float) -> float:
    """A call's deadline when none is set: generous enough for a whole answer at the
    slowest rate stay waits for, so only a stall or a stream of pings can reach it."""
    return max(2 * timeout, max_tokens / SLOWEST_TOKENS_PER_SECOND)


MODEL_CHECK_TIMEOUT = 10.0
"""Seconds the up-front model check may wait per id: a stalled gateway costs a run this
much once, then the calls' own timeout and retries take over."""

_CHECKED: dict[tuple[str, str], int | None] = {}
"""(endpoint, model id) -> its largest ``max_tokens``, for each id the Models API
confirmed in this process (None when it did not say)."""


@dataclass(frozen=True)
class _Failure:
    retryable: bool
    error: StayError
    """Raised when the failure is final (not retryable, or the retries are spent)."""
    wait_hint: float | None = None
    timed_out: bool = False


class _Rejected(ModelError):
    """The API refused the request itself (a 4xx that no retry changes), with its status,
    so the screen can tell a configuration error (400, 401, 403, 404) from a bad reply."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


CONFIG_STATUSES = (400, 401, 403, 404)
"""A request refused for what it asks (a mistyped model id, a rejected key): an error in
the configuration, never the service being unreachable."""


def _quiet(_line: str) -> None:
    pass


def _nothing() -> None:
    """No prefix gate to tell."""


def _identified(message: Any, stream: Any) -> Any:
    """The streamed message with the ``request-id`` its stream's response carried: the SDK
    sets ``_request_id`` on a message it parsed whole, not on one a stream assembled."""
    if getattr(message, "_request_id", None) is None:
        message._request_id = getattr(stream, "request_id", None)
    return message


def _begun(stream: Any, started: Callable[[], None]) -> None:
    """Read ``stream`` up to its ``message_start`` (the response has begun: its prefixes
    are in the cache) and say so; ``get_final_message`` reads the rest."""
    for event in iter(lambda: next(stream, None), None):
        if event.type == "message_start":
            started()
            return


def _counting(spent: Usage, answer: Callable[[], ModelAnswer]) -> ModelAnswer:
    """``answer()`` with ``spent`` (an earlier reply of the same call, billed) added to its
    usage, or to the usage its error says was billed: one call, everything it paid."""
    try:
        found = answer()
    except (AnswerError, ModelError) as exc:
        if isinstance(exc.billed, ModelAnswer):
            exc.billed = exc.billed.model_copy(update={"usage": spent + exc.billed.usage})
        raise
    return found.model_copy(update={"usage": spent + found.usage})


class _Deadline:
    """One call's deadline, its retries and waits included: each attempt's request
    timeout is cut to the time left, and the call ends in one line once it has passed."""

    def __init__(self, backend: AnthropicBackend, max_tokens: int, where: str) -> None:
        self.backend, self.where = backend, where
        self.seconds = backend.call_deadline or default_deadline(max_tokens, backend.timeout)
        self.ends = backend.clock() + self.seconds
        self.cut = False
        """Whether the last attempt's request timeout was cut to the time left."""
        self.fired = False
        """Whether the watchdog ended an attempt (``watch``)."""

    def left(self) -> float:
        return self.ends - self.backend.clock()

    def timeout(self, attempt: int) -> Any:
        import httpx2

        self.check(attempt)
        seconds = min(self.backend.timeout, self.left())
        self.cut = seconds < self.backend.timeout
        return httpx2.Timeout(seconds, connect=min(seconds, 10.0))

    @contextmanager
    def watch(self, close: Callable[[], None]) -> Iterator[None]:
        """Close a stream once the deadline passes. The SDK drops ``ping`` events before
        any caller sees them, and a ping resets the read timeout, so nothing else ends a
        stream that only pings: closing it makes its next read fail."""
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


class AnthropicBackend:
    """Answers stage requests with Claude. Sync (``complete``) and async (``acomplete``).

    ``client`` may be given (tests pass one over ``httpx2.MockTransport``); otherwise it
    is made on first use from ``api_key`` or ``ANTHROPIC_API_KEY``, so a replayed run,
    which never calls, needs no key. Settings, with their defaults: ``timeout`` 300 s per
    request, ``max_retries`` 4, ``retry_after_cap`` 60 s, ``call_deadline`` (default
    ``default_deadline``: a whole call, its retries and waits included), ``thinking`` per role
    (``stay.models.THINKING``), ``answer_tokens`` (default: each request's
    ``max_tokens``, i.e. ``stay.models.MAX_TOKENS``), ``warm_prefixes`` (the prefix gate).
    ``sleep``, ``jitter``, ``clock`` (monotonic, for the deadline) and ``wall`` (the
    wall clock an HTTP-date ``retry-after`` is read against) are injectable so tests
    never really wait.
    """

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
        if timeout <= 0 or max_retries < 0 or retry_after_cap < 0 or (call_deadline is not None
                                                                     and call_deadline <= 0):
            raise UsageError("AnthropicBackend needs timeout > 0, max_retries >= 0, retry_after_cap >= 0 "
                             "and call_deadline > 0")
        self.max_retries = max_retries
        self.timeout = timeout
        self.retry_after_cap = retry_after_cap
        self.thinking: Mapping[Role, Thinking] = THINKING if thinking is None else thinking
        self.answer_tokens = answer_tokens
        self.progress = progress or _quiet
        self.gate = PrefixGate() if warm_prefixes else None
        self.sleep, self.jitter = sleep, jitter
        self.call_deadline = call_deadline
        self.clock, self.wall = clock, wall
        self.async_sleep = async_sleep  # asyncio.sleep when None: asyncio is imported only by async callers
        self._heard = False
        """Whether the service has answered a call: until it has, a connection it closes unanswered is final."""
        self._api_key = api_key.strip() if api_key else api_key  # a key pasted with its newline
        # a bearer token for a gateway (ANTHROPIC_AUTH_TOKEN), used only when there is no key
        self._auth_token = None if self._api_key else (auth_token.strip() if auth_token else None) or None
        self._base_url = base_url
        _secrets.keep([self._api_key, self._auth_token, *_secrets.url_secrets(base_url)])
        self.screen_model = screen_model
        """The model that screens briefs (the analysis role's)."""
        self._client = None if client is None else self._configured(client)
        self._async_client = None if async_client is None else self._configured(async_client)

    # -- clients ---------------------------------------------------------------------------

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
        """The setting the client authenticates with, to name in an error."""
        return "ANTHROPIC_AUTH_TOKEN" if self._auth_token and not self._api_key else "ANTHROPIC_API_KEY"

    def _credentials(self) -> tuple[str | None, str | None]:
        """``(api_key, auth_token)``: the key, or else a gateway's token (``Authorization: Bearer``)."""
        if self._api_key or self._auth_token:
            return self._api_key, self._auth_token
        raise UsageError("the anthropic backend needs an API key (ANTHROPIC_API_KEY) or a gateway's bearer token "
                         "(ANTHROPIC_AUTH_TOKEN); set one, or build offline with --backend offline (a --replay "
                         "run needs neither)")

    @property
    def client(self) -> anthropic.Anthropic:
        if self._client is None:
            import anthropic

            # base_url is left to the SDK, which reads ANTHROPIC_BASE_URL when it is set
            key, token = self._credentials()
            self._client = self._configured(anthropic.Anthropic(
                api_key=key, auth_token=token, base_url=self._base_url))
        client: anthropic.Anthropic = self._client
        return client

    @property
    def async_client(self) -> anthropic.AsyncAnthropic:
        if self._async_client is None:
            import anthropic

            key, token = self._credentials()
            self._async_client = self._configured(anthropic.AsyncAnthropic(
                api_key=key, auth_token=token, base_url=self._base_url))
        client: anthropic.AsyncAnthropic = self._async_client
        return client

    # -- model ids -------------------------------------------------------------------------

    def check_models(self, models: Mapping[Role, str]) -> None:
        """Each distinct model id, asked of the Models API (``models.retrieve``) before
        anything is paid: an id it does not know (a 404 that names the id) is one line
        naming the settings that chose it; a rejected credential (401, 403) is one line
        too. Asked once a process per endpoint and id; the answer's ``max_tokens`` is kept
        (``output_limit``). Any other outcome (no connection, a 5xx, a gateway without the
        Models API) is left to the calls, which retry and say it themselves: the check must
        never stop a run that would work."""
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
        """The most ``max_tokens`` ``model`` takes: what the Models API said, else ``OUTPUT_LIMIT``."""
        said = _CHECKED.get((str((self._client or self._async_client or self.client).base_url), model))
        return said if said is not None else OUTPUT_LIMIT

    def _roomier(self, answer: int, budget: Budget, model: str) -> Budget | None:
        """``budget`` with ``answer`` tokens of room for the answer, up to the model's limit;
        None when that is no more room than it has."""
        answer = min(answer, self.output_limit(model) - budget.thinking)
        return Budget(answer, budget.thinking) if answer > budget.answer else None

    def _more_room(self, message: Any, budget: Budget, model: str) -> Budget | None:
        """For an answer cut off at ``max_tokens``: the budget of the one retry, with the
        answer's room doubled up to the model's limit; None when there is no more room."""
        if getattr(message, "stop_reason", None) != "max_tokens":
            return None
        return self._roomier(2 * budget.answer, budget, model)

    def _first(self, request: ModelRequest, model: str, thinking: Thinking | None, where: str) -> Budget:
        """The first request's budget: the configured answer room, or, when an earlier run's
        answer to this request was cut off, the room its retry was given (``known_room``),
        up to the model's limit as that retry's was. A room larger than the configured one
        is held against the cost cap before it is sent, in place of the configured room's
        worst case (``hold_instead``)."""
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
        """The one retry of a cut-off answer (its parameters, budget, and the cut-off reply's
        usage, billed), held against the cost cap before it is sent (``hold_more``: a retry
        that would pass the cap is never sent); None when there is no more room."""
        more = self._more_room(message, budget, model)
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

    # -- requests --------------------------------------------------------------------------

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        return self._complete(request, model, self.thinking.get(request.role))

    def _complete(self, request: ModelRequest, model: str, thinking: Thinking | None) -> ModelAnswer:
        where = f"stage {request.stage} ({request.artefact})"
        budget = self._first(request, model, thinking, where)
        params = request_params(request, model, thinking, answer_tokens=budget.answer)
        holding = self.gate.hold(prefix_keys(params)) if self.gate is not None else nullcontext(_nothing)
        with holding as started:
            message = self._call(params, where, started)
        retry = self._retry(message, request, model, thinking, budget, where)
        if retry is None:
            return answer_from(message, request, budget=budget)
        params, more, spent = retry
        message = self._call(params, where)  # the prefix is warm by now: the retry needs no gate
        return _counting(spent, lambda: answer_from(message, request, budget=more))

    def _call(self, params: dict[str, Any], where: str, started: Callable[[], None] = _nothing) -> Any:
        """One call with its retries; ``started`` is told when a streamed response begins
        (its ``message_start``): the prefix gate lets its waiters go then."""
        streamed = streams(params["max_tokens"], self.timeout)
        clock = _Deadline(self, params["max_tokens"], where)
        for attempt in range(self.max_retries + 1):
            try:
                client = self.client
                timeout = clock.timeout(attempt)
                if streamed:
                    with client.messages.stream(**params, timeout=timeout) as stream, clock.watch(stream.close):
                        _begun(stream, started)
                        message = _identified(stream.get_final_message(), stream)
                else:
                    message = client.messages.create(**params, timeout=timeout)
                self._heard = True
                return message
            except StayError:
                raise
            except Exception as exc:
                clock.check(attempt, ended=clock.fired)  # the watchdog closed the stream: that is why
                failure = self._classify(exc, where, attempt)
                self.sleep(self._wait(failure, where, attempt, clock))
        raise AssertionError("unreachable: the loop returns or raises")

    async def acomplete(self, request: ModelRequest, model: str) -> ModelAnswer:
        """``complete`` for asyncio callers, through the same prefix gate (its waiters wait
        on the event loop, never blocking it)."""
        where = f"stage {request.stage} ({request.artefact})"
        thinking = self.thinking.get(request.role)
        budget = self._first(request, model, thinking, where)
        params = request_params(request, model, thinking, answer_tokens=budget.answer)
        holding = self.gate.ahold(prefix_keys(params)) if self.gate is not None else nullcontext(_nothing)
        async with holding as started:
            message = await self._acall(params, where, started)
        retry = self._retry(message, request, model, thinking, budget, where)
        if retry is None:
            return answer_from(message, request, budget=budget)
        params, more, spent = retry
        message = await self._acall(params, where)
        return _counting(spent, lambda: answer_from(message, request, budget=more))

    async def _acall(self, params: dict[str, Any], where: str, started: Callable[[], None] = _nothing) -> Any:
        streamed = streams(params["max_tokens"], self.timeout)
        clock = _Deadline(self, params["max_tokens"], where)
        for attempt in range(self.max_retries + 1):
            try:
                client = self.async_client
                timeout = clock.timeout(attempt)
                message = await clock.awaited(self._attempt(client, params, streamed, timeout, started), attempt)
                self._heard = True
                return message
            except StayError:
                raise
            except Exception as exc:
                failure = self._classify(exc, where, attempt)
                wait = self._wait(failure, where, attempt, clock)
                pause = self.async_sleep
                if pause is None:
                    import asyncio

                    pause = asyncio.sleep
                await pause(wait)
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

    # -- failures --------------------------------------------------------------------------

    def _wait(self, failure: _Failure, where: str, attempt: int, clock: _Deadline) -> float:
        """How long to wait before the next attempt, or the error that ends the call: the
        failure is final, the retries are spent, the service asks for a longer wait than
        this run allows, or the wait would outlast the call's deadline."""
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

    def _classify(self, exc: Exception, where: str, attempt: int) -> _Failure:
        """What a failed attempt means: retry it, or the error to raise."""
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
                    f"{status}: {detail}); "
                    "not retried, since waiting will not lift it: raise the limit in the Claude Console "
                    "(Billing), or rerun once it resets (finished files are kept, nothing is paid twice)"))
            if retryable_status(status, headers, body):
                what = {429: "rate limited (429)", 529: "overloaded (529)"}.get(
                    status, f"unavailable (HTTP {status}: {detail})")
                return _Failure(True, ModelUnavailable(f"{where}: the API is {what} {tries}", fix=RERUN),
                                wait_hint=retry_after(headers, now=self.wall))
            return _Failure(False, _Rejected(f"{where}: the API answered HTTP {status}: {detail}", status))
        if isinstance(exc, (anthropic.APIResponseValidationError, ValueError, AssertionError, RuntimeError,
                            KeyError, TypeError, AttributeError)):
            # the SDK could not read the body: not JSON, an HTML page, a stream with no message
            return _Failure(False, ModelError(
                f"{where}: the API's response is malformed: it could not be read as a message "
                f"({type(exc).__name__}: {clean(exc) or 'no message'}); nothing was written, run the command "
                "again (if it persists, check ANTHROPIC_BASE_URL and any proxy in between)"))
        if isinstance(exc, anthropic.APIError):
            return _Failure(False, ModelError(f"{where}: {type(exc).__name__}: {clean(exc)}"))
        raise exc

    # -- moderation ------------------------------------------------------------------------

    def screening(self, text: str) -> Screening:
        """A harmlessness screen: a cheap classification call with structured output,
        with room to think and to answer; its usage is reported with the verdict."""
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
    """The ``stay.backends`` entry point ``anthropic``: Claude as ``settings`` configure
    it (the key or token and URL, the screening model, the answers' room, the timeout,
    the retries and the retry-after cap). ``client`` is an SDK client made elsewhere
    (batch scoring's)."""
    return AnthropicBackend(client, api_key=settings.api_key, auth_token=settings.auth_token,
                            base_url=settings.base_url, progress=progress,
                            screen_model=settings.model("analysis"), timeout=settings.request_timeout,
                            max_retries=settings.max_retries, retry_after_cap=settings.retry_after_cap,
                            call_deadline=settings.call_deadline,
                            answer_tokens=settings.answer_tokens)
