"""The Messages API on the wire: request parameters, reading a response, and what an
error means. Pure functions; the SDK is imported only where a call needs it.

Structured output goes through ``output_config.format`` with the answer model's JSON
schema, made strict by the SDK's ``transform_schema`` (forcing a tool is rejected by
the newest models). Thinking and effort are set per role (``stay.models.THINKING``),
and ``max_tokens`` is the answer's room plus the thinking room, because thinking
tokens count toward it. A response is checked before it is trusted: the stop reason
first (a truncated answer is incomplete JSON, not a schema error), then its shape
(a proxy's HTML page, ``content: null``, no usage, negative token counts), then the
answer.
"""

from __future__ import annotations

import datetime
import email.utils
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stay import _secrets
from stay._bounds import json_nesting
from stay.errors import AnswerError, ModelError, RefusalError, TruncationError, Unreachable
from stay.models._roles import Thinking, thinks_adaptively
from stay.requests import ModelAnswer, ModelRequest, Usage

SDK_NONSTREAMING_TOKENS = 21_333
"""The SDK refuses a non-streaming request whose ``max_tokens`` implies more than ten
minutes at its assumed 128,000 tokens an hour (``_calculate_nonstreaming_timeout``)."""

_SDK_TOKENS_PER_SECOND = 128_000 / 3_600


def streams(max_tokens: int, timeout: float) -> bool:
    """Whether a request must stream: when the SDK would refuse it non-streaming, or when
    its answer could take longer than the request timeout to arrive in one piece. A
    streamed answer arrives a chunk at a time, so the timeout then measures silence, and
    only a hung connection can hit it, never a long answer."""
    return max_tokens > min(SDK_NONSTREAMING_TOKENS, timeout * _SDK_TOKENS_PER_SECOND)


@dataclass(frozen=True)
class Budget:
    """A request's ``max_tokens``: the answer's room plus the thinking room."""

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
    """The Messages API parameters for a stage request (pure; no sampling parameters)."""
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


# -- reading a response ----------------------------------------------------------------

_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
MAX_ANSWER_DEPTH = 64
"""Deeper JSON than this is not an artefact: refused before parsing (a 100,000-deep
answer would exhaust the parser's recursion)."""


def _malformed(where: str, what: str) -> ModelError:
    return ModelError(f"{where}: the API's response is malformed: {what}; nothing was written, run the "
                      "command again (if it persists, check ANTHROPIC_BASE_URL and any proxy in between)")


def usage_of(message: Any, where: str) -> Usage:
    """The response's usage, checked: present, whole numbers, none negative."""
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
    """A Messages API response as an answer, or the error it means: the stop reason
    first, then the response's shape, then the answer's JSON. No configured secret
    survives in the answer or the error: a model or API that echoes one (a key in an
    error body, in a lesson) has it cut out here, before the answer is cached or
    written."""
    try:
        return _answer_from(message, request, budget=budget, batch=batch)
    except (AnswerError, ModelError) as exc:
        # a reply that was read far enough to have its usage was billed, whatever it
        # said (cut off, refused, not JSON): the error carries what it cost
        billed = _billed(message, request, batch, budget)
        # a response's text reaches the message (a refusal's explanation, the answer's
        # raw text): an API or proxy that echoes a secret must not have it printed or kept
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
    """A failed reply as an answer with no data, for counting: None when even its usage
    cannot be read (then there is nothing trustworthy to count)."""
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
    """What the response's usage says it was served as, where that changes the price:
    ``service_tier`` (standard, priority, batch) and ``inference_geo`` (global, us)."""
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
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnswerError(f"{where}: the answer is not JSON ({exc.msg} at character {exc.pos})",
                          raw=text) from None
    if not isinstance(data, dict):
        raise AnswerError(f"{where}: the answer is JSON but not an object", raw=text)
    # by value only: a lesson may well show what an Anthropic key looks like
    return ModelAnswer(data=_secrets.redact_data(data), model=_model_of(message), usage=usage, batch=batch,
                       **_tier_of(message), **_reply_of(message, sent))


def _reply_of(message: Any, budget: Budget | None) -> dict[str, Any]:
    """For the trace: the ``max_tokens`` the request was sent with (when the caller said),
    and the response's id and stop reason (strings only: a proxy may send anything)."""
    found: dict[str, Any] = {"max_tokens": None if budget is None else budget.max_tokens}
    for field, name in (("id", "response_id"), ("stop_reason", "stop_reason")):
        value = getattr(message, field, None)
        found[name] = _secrets.redact(value) if isinstance(value, str) and value else None
    found["request_id"] = request_id_of(getattr(message, "_request_id", None))
    return found


_REQUEST_ID = re.compile(r"[A-Za-z0-9_\-]{1,128}")


def request_id_of(value: object) -> str | None:
    """A ``request-id`` header's value as stay records it: an id's characters only, at
    most 128 of them (a header is untrusted; anything else is not recorded)."""
    return value if isinstance(value, str) and _REQUEST_ID.fullmatch(value) else None


# -- errors ------------------------------------------------------------------------------

_KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every configured secret and every given one cut out by value
    (``stay._secrets``), and then anything shaped like an Anthropic key: API error text
    is printed to terminals and logs."""
    return _KEY_SHAPE.sub(_secrets.REDACTED, _secrets.redact(text, secrets))


def one_line(text: object, limit: int = 200) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


RERUN = "rerun to continue (finished files are kept, nothing is paid twice)"


def unreachable(exc: BaseException, where: str, url: str, setting: str, service: str = "", *,
                answered: bool) -> Unreachable | None:
    """The error for ``exc`` when the service at ``url`` cannot be reached: no connection
    could be made (httpx's ``ConnectError`` or ``ConnectTimeout``, under the SDK's connection
    error: refused, no such host, no route, none within the connect timeout), or it closed the
    connection with no answer (nothing that speaks HTTP listens there), while it has not
    ``answered`` a call yet in this run. It names ``url`` (its userinfo cut out) and is final:
    no retry mends a server that is not running or a wrong URL. None for any other failure,
    and for any failure once the service has answered (a network drop or a restart in a long
    run, a read timeout), which the retries may mend."""
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
    """The proxy the SDK's HTTP client goes through to ``url`` (``HTTPS_PROXY`` and the rest,
    ``NO_PROXY`` heeded), which is then what refused or could not be found; None: none."""
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
    """Whether an error body says a spend limit is reached: waiting will not help until
    the limit resets or is raised. The API marks it by ``error.details.error_code``
    ``enforced_spend_limit_reached`` on a 429 (with no ``retry-after``); a message that
    speaks of a spend or usage limit, or of the credit balance, is taken the same way,
    since a proxy may pass the message on without the details."""
    error = body.get("error") if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        return False
    details = error.get("details")
    if isinstance(details, Mapping) and details.get("error_code") in _SPEND_LIMIT_CODES:
        return True
    text = error.get("message")
    return isinstance(text, str) and any(word in text.lower() for word in _SPEND_LIMIT_WORDS)


def retryable_status(status: int, headers: Mapping[str, str] | None, body: Any) -> bool:
    """The SDK's retry rule (408, 409, 429, 5xx, ``x-should-retry``), plus a retryable
    error event inside a stream that began with 200; never a spend limit, whatever the
    status or ``x-should-retry`` says."""
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
    """Seconds the server asked to wait, or None: ``retry-after-ms``, then ``retry-after``
    in seconds, then ``retry-after`` as an HTTP-date (RFC 9110), read against ``now``
    (the wall clock, as the date is); a date already past means no wait. The order is
    the SDK's (``_parse_retry_after_header``)."""
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
"""A retry-after wait is lengthened by up to this share of itself (at least up to
``BACKOFF_FIRST``): every call told "retry after 1 s" must not come back in the same
millisecond."""


def backoff(attempt: int, jitter: float) -> float:
    """0.5 s doubling to 8 s, with "equal jitter" (``jitter`` in [0, 1)): half the step
    fixed, half random, so concurrent calls that failed together spread over half a step
    instead of the SDK's quarter, and none retries at once."""
    step = min(BACKOFF_FIRST * 2.0 ** attempt, BACKOFF_MOST)
    return step * (0.5 + 0.5 * jitter)


def jittered(hint: float, jitter: float) -> float:
    """A retry-after wait with jitter added, never shorter than the service asked."""
    return hint + jitter * max(RETRY_AFTER_SPREAD * hint, BACKOFF_FIRST)
