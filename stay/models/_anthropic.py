"""The Claude backend (anthropic SDK 2.x): the Messages API on the wire (request parameters, reading
a response, the up-front model check) and the prefix gate; the loop and its policy are ``HTTPBackend``'s.
A long answer streams, so the request timeout measures silence, never an answer's length."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from stay import _secrets
from stay.errors import ModelError, RefusalError, StayError, TruncationError, UsageError
from stay.models._protocol import (
    DEFAULT_MODELS,
    PRICES,
    SCREENING,
    THINKING,
    Budget,
    HTTPBackend,
    Price,
    Progress,
    Retrying,
    Thinking,
    _Deadline,
    _nothing,
    _Rejected,
    billed_as,
    budget_for,
    json_object,
    malformed,
    min_cacheable_tokens,
    model_of,
    paying,
    plus,
    request_id_of,
    retrying,
    spend_limited,
    thinks_adaptively,
)
from stay.requests import ModelAnswer, ModelRequest, Role, Usage

if TYPE_CHECKING:  # the SDK takes seconds to import: only a run that talks to Claude pays for it
    import anthropic

    from stay.settings import Settings

MODEL_CHECK_TIMEOUT = 10.0
"""Seconds the up-front model check waits per id: a stalled gateway costs a run this once."""

_CHECKED: dict[tuple[str, str], int | None] = {}
"""(endpoint, model id) -> its ``max_tokens``, for each id the Models API confirmed (None: unsaid)."""


_Client = TypeVar("_Client")  # anthropic.Anthropic or anthropic.AsyncAnthropic


def _identified(message: Any, stream: Any) -> Any:
    """The SDK sets ``_request_id`` on a message it parsed whole, not on one a stream assembled."""
    if getattr(message, "_request_id", None) is None:
        message._request_id = getattr(stream, "request_id", None)
    return message


class AnthropicBackend(HTTPBackend):
    """Claude, sync and async; the client is made on first use (a replayed run needs no key)."""

    name = "anthropic"
    prices: Mapping[str, Price] = PRICES
    features = frozenset({"caching", "batches", "thinking", "count_tokens", "screen"})
    default_models: Mapping[Role, str] = DEFAULT_MODELS
    service_name = "the Anthropic API"
    screen_thinking = SCREENING

    def __init__(self, client: anthropic.Anthropic | None = None,
                 async_client: anthropic.AsyncAnthropic | None = None, *, api_key: str | None = None,
                 auth_token: str | None = None, base_url: str | None = None,
                 screen_model: str = DEFAULT_MODELS["analysis"], thinking: Mapping[Role, Thinking] | None = None,
                 warm_prefixes: bool = True, async_sleep: Callable[[float], Awaitable[None]] | None = None,
                 **retrying: Unpack[Retrying]) -> None:
        super().__init__(thinking=THINKING if thinking is None else thinking, **retrying)
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
    def credential(self) -> str:
        return "ANTHROPIC_AUTH_TOKEN" if self._auth_token and not self._api_key else "ANTHROPIC_API_KEY"

    @property
    def endpoint(self) -> str:
        return str(getattr(self._client or self._async_client, "base_url", self._base_url)).rstrip("/")

    def _screened_by(self) -> str:
        return self.screen_model

    def _made(self, kind: Callable[..., _Client]) -> _Client:
        """A client with the key, or else a gateway's token; base_url None: the SDK reads ANTHROPIC_BASE_URL."""
        if not (self._api_key or self._auth_token):
            raise UsageError("the anthropic backend needs an API key (ANTHROPIC_API_KEY) or a gateway's bearer "
                             "token (ANTHROPIC_AUTH_TOKEN); set one, or build offline with --backend offline (a "
                             "--replay run needs neither)")
        made: _Client = self._configured(kind(api_key=self._api_key, auth_token=self._auth_token,
                                              base_url=self._base_url))
        return made

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
                raise UsageError(f"{self.credential} was rejected ({exc.status_code}) when checking the model "
                                 f"'{model}'; check it; nothing was paid or written") from None
            except (anthropic.APITimeoutError, anthropic.APIConnectionError):
                return  # the endpoint is not answering: wait no longer here, the calls will say so
            except Exception:  # not a verdict on the id: the calls will say what it is
                continue
            limit = getattr(info, "max_tokens", None)
            _CHECKED[key] = limit if isinstance(limit, int) and limit > 0 else None

    def output_limit(self, model: str) -> int:
        said = _CHECKED.get((str((self._client or self._async_client or self.client).base_url), model))
        return said if said is not None else super().output_limit(model)

    def _held(self, request: ModelRequest, model: str, thinking: Thinking | None, budget: Budget) -> dict[str, Any]:
        return request_params(request, model, thinking, answer_tokens=budget.answer)

    def _ask(self, request: ModelRequest, model: str, thinking: Thinking | None, budget: Budget, where: str,
             first: bool) -> ModelAnswer:
        params = self._held(request, model, thinking, budget)
        # the first request goes through the prefix gate; a retry finds its prefix warm
        gate = self.gate.hold(prefix_keys(params)) if first and self.gate is not None else nullcontext(_nothing)
        with gate as started:
            message = self._call(params, where, started)
        return answer_from(message, request, budget=budget)

    def _call(self, params: dict[str, Any], where: str, started: Callable[[], None] = _nothing) -> Any:
        """One call with its retries; ``started`` is told when a streamed response begins (the gate)."""
        streamed = streams(params["max_tokens"], self.timeout)
        clock = _Deadline(self, params["max_tokens"], where)

        def send(timeout: Any) -> Any:
            if not streamed:
                return self.client.messages.create(**params, timeout=timeout)
            with self.client.messages.stream(**params, timeout=timeout) as stream, clock.watch(stream.close):
                for event in iter(lambda: next(stream, None), None):  # up to message_start: prefixes cached
                    if event.type == "message_start":
                        started()
                        break
                return _identified(stream.get_final_message(), stream)
        return self._retried(send, where, clock)

    async def acomplete(self, request: ModelRequest, model: str) -> ModelAnswer:
        """``complete``, on the async client."""
        thinking = self.thinking.get(request.role)
        where = f"stage {request.stage} ({request.artefact})"
        budget = self._first(request, model, thinking, where)
        try:
            return await self._aask(request, model, thinking, budget, where, True)
        except TruncationError as cut:
            more, spent = self._more(cut, request, model, thinking, budget, where)
        with paying(spent):
            return plus(spent, await self._aask(request, model, thinking, more, where, False))

    async def _aask(self, request: ModelRequest, model: str, thinking: Thinking | None, budget: Budget,
                    where: str, first: bool) -> ModelAnswer:
        params = self._held(request, model, thinking, budget)
        gate = self.gate.ahold(prefix_keys(params)) if first and self.gate is not None else nullcontext(_nothing)
        async with gate as started:
            message = await self._acall(params, where, started)
        return answer_from(message, request, budget=budget)

    async def _acall(self, params: dict[str, Any], where: str, started: Callable[[], None]) -> Any:
        import asyncio  # imported already by whoever runs this coroutine

        clock = _Deadline(self, params["max_tokens"], where)
        for attempt in range(self.max_retries + 1):
            try:
                attempted = self._attempt(self.async_client, params, clock.timeout(attempt), started)
                message = await clock.awaited(attempted, attempt)
                self._heard = True
                return message
            except StayError:
                raise
            except Exception as exc:
                wait = self._wait(self._classify(exc, where, attempt), where, attempt, clock)
                await (self.async_sleep or asyncio.sleep)(wait)
        raise AssertionError("unreachable: the loop returns or raises")

    async def _attempt(self, client: Any, params: dict[str, Any], timeout: Any, started: Callable[[], None]) -> Any:
        if streams(params["max_tokens"], self.timeout):
            async with client.messages.stream(**params, timeout=timeout) as stream:
                async for event in stream:  # up to message_start, as ``_call``; the rest is read below
                    if event.type == "message_start":
                        started()
                        break
                return _identified(await stream.get_final_message(), stream)
        return await client.messages.create(**params, timeout=timeout)

    def _refused(self, status: int, detail: str, body: Any, where: str, model: str) -> StayError | None:
        if status == 401:
            return _Rejected(f"{where}: {self.credential} was rejected (401); check it", 401)
        if spend_limited(body):
            return ModelError(
                f"{where}: the API refused the call: a spend limit or the credit balance is reached (HTTP "
                f"{status}: {detail}); not retried, since waiting will not lift it: raise the limit in the "
                "Claude Console (Billing), or rerun once it resets (finished files are kept, nothing is paid "
                "twice)")
        return None


def make(settings: Settings, *, progress: Progress | None = None,
         client: anthropic.Anthropic | None = None) -> AnthropicBackend:
    return AnthropicBackend(client, api_key=settings.api_key, auth_token=settings.auth_token,
                            base_url=settings.base_url, screen_model=settings.model("analysis"),
                            **retrying(settings, progress))


SDK_NONSTREAMING_TOKENS = 21_333
"""Above this the SDK refuses a non-streaming request (``_calculate_nonstreaming_timeout``)."""

_SDK_TOKENS_PER_SECOND = 128_000 / 3_600


def streams(max_tokens: int, timeout: float) -> bool:
    """The SDK would refuse it non-streaming, or its answer could outlast the request timeout."""
    return max_tokens > min(SDK_NONSTREAMING_TOKENS, timeout * _SDK_TOKENS_PER_SECOND)


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


def usage_of(message: Any, where: str) -> Usage:
    usage = getattr(message, "usage", None)
    if usage is None:
        raise malformed(where, "it has no usage")
    counts: dict[str, int] = {}
    for name in _TOKEN_FIELDS:
        value = getattr(usage, name, None)
        if value is None and name.startswith("cache_"):
            value = 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise malformed(where, f"usage.{name} is {value!r}, not a count of tokens")
        counts[name] = value
    details = getattr(usage, "output_tokens_details", None)
    thinking = getattr(details, "thinking_tokens", 0) or 0
    if isinstance(thinking, bool) or not isinstance(thinking, int) or not 0 <= thinking <= counts["output_tokens"]:
        raise malformed(where, f"usage.output_tokens_details.thinking_tokens is {thinking!r}")
    return Usage(**counts, thinking_tokens=thinking)


def answer_from(message: Any, request: ModelRequest, *, budget: Budget | None = None,
                batch: bool = False) -> ModelAnswer:
    """A response as an answer, or the error it means, which carries what the reply cost (read far enough
    to have its usage, it was billed whatever it said)."""
    where = f"stage {request.stage} ({request.artefact})"
    billed = _billed(message, where, batch, budget)
    with billed_as(billed):
        text = _text(message, where, budget or Budget(request.max_tokens, 0))
        assert billed is not None  # ``_text`` read its usage
        # by value only: a lesson may well show what an Anthropic key looks like
        return billed.model_copy(update={"data": _secrets.redact_data(json_object(text, where))})


def _billed(message: Any, where: str, batch: bool, budget: Budget | None) -> ModelAnswer | None:
    """The reply as an answer with no data, for counting; with what the trace keeps and what prices it."""
    try:
        usage = usage_of(message, where)
    except ModelError:
        return None
    found: dict[str, Any] = {"max_tokens": None if budget is None else budget.max_tokens,
                             "request_id": request_id_of(getattr(message, "_request_id", None))}
    for field, name in (("id", "response_id"), ("stop_reason", "stop_reason")):
        value = getattr(message, field, None)
        found[name] = _secrets.redact(value) if isinstance(value, str) and value else None
    for name in ("service_tier", "inference_geo"):  # both change the price
        value = getattr(message.usage, name, None)
        found[name] = value if isinstance(value, str) and value else None
    return ModelAnswer(data={}, model=model_of(message), usage=usage, batch=batch, **found)


def _text(message: Any, where: str, budget: Budget) -> str:
    """The answer's text, or the error the reply means."""
    if isinstance(message, (str, bytes, list, dict)) or message is None:
        kinds: dict[type, str] = {str: "text (an HTML page or a proxy's error?)", bytes: "bytes",
                                  list: "a JSON array", dict: "a JSON object that is not a message"}
        kind = kinds.get(type(message), "empty")
        raise malformed(where, f"it is {kind}, not a message")
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise malformed(where, f"content is {content!r}, not a list of blocks")
    usage = usage_of(message, where)
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
    return "".join(getattr(block, "text", "") or "" for block in content if getattr(block, "type", None) == "text")


CACHE_TTL = 300.0  # a 5-minute cache entry's life after its last use
CHARS_PER_TOKEN = 4  # no tokenizer runs here
_SCOPE = ("tools", "tool_choice", "thinking")


def prefix_keys(params: Mapping[str, Any], *, min_tokens: int | None = None) -> list[str]:
    """A key per ``cache_control`` breakpoint long enough to be cached, shortest first."""
    floor = (min_cacheable_tokens(str(params.get("model"))) if min_tokens is None else min_tokens) * CHARS_PER_TOKEN
    config = params.get("output_config") or {}
    # what invalidates the API's cache besides the prefix's text (the prompt-caching docs)
    scope = {"model": params.get("model"), **{name: params.get(name) for name in _SCOPE},
             "format": config.get("format"), "effort": config.get("effort")}
    system = params.get("system") or []
    blocks: list[Any] = [{"text": system}] if isinstance(system, str) else list(system)
    for message in params.get("messages") or []:
        content = message.get("content")
        blocks += [{"text": content}] if isinstance(content, str) else list(content or [])
    keys, digest, chars = [], hashlib.sha256(json.dumps(scope, sort_keys=True, default=str).encode()), 0
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
