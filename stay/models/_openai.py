"""The OpenAI-compatible backend: Chat Completions on the wire through the optional ``openai`` SDK (the
loop and its policy are ``HTTPBackend``'s, as Claude's): strict structured output, or JSON mode checked
here. Stable parts go first, for OpenAI's prefix cache. No thinking feature."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Unpack
from urllib.parse import urlparse

from stay import _secrets
from stay._display import one_line
from stay.errors import AnswerError, ModelError, ModelUnavailable, RefusalError, StayError, TruncationError, UsageError
from stay.models._anthropic import request_params as messages_params
from stay.models._protocol import (
    PRICES,
    RERUN,
    Budget,
    HTTPBackend,
    Price,
    Progress,
    Retrying,
    Thinking,
    _Deadline,
    billed_as,
    hold_more,
    json_object,
    malformed,
    model_of,
    paying,
    plus,
    request_id_of,
    retrying,
    unreachable,
)
from stay.requests import ROLES, ModelAnswer, ModelRequest, Role, Usage
from stay.settings import DEFAULT_MODELS as CLAUDE_MODELS
from stay.settings import Settings

OPENAI_MODEL = "gpt-6.2-sol"
"""The default model on OpenAI itself: the newest undated id of the SDK's ``ChatModel`` list."""
PLACEHOLDER_KEY = "not-needed"
"""Sent to OPENAI_BASE_URL when OPENAI_API_KEY is unset: the SDK refuses to run without a key."""
SLOWEST_TOKENS_PER_SECOND = 20.0
"""Not streamed, so a read timeout must cover a whole answer at this (small local model's) pace."""

_malformed = partial(malformed, service="the server", setting="OPENAI_BASE_URL")  # its malformed replies' errors
_JSON_ONLY: set[str] = set()
"""Base URLs whose server refused ``json_schema`` in this process: asked in JSON mode."""
_JSON_ONLY_LOCK = threading.Lock()


def install_hint() -> UsageError:
    from stay._version import DISTRIBUTION

    return UsageError(f"the openai backend needs the openai SDK: pip install '{DISTRIBUTION}[openai]' "
                      "(from a checkout: pip install -e '.[openai]')")


class OpenAIBackend(HTTPBackend):
    """``models``: the ids the settings chose per role; a role left unset uses ``default_models``."""

    name = "openai"
    features: frozenset[str] = frozenset({"caching", "screen"})
    sdk = "openai"
    service = "the server"
    url_setting = "OPENAI_BASE_URL"
    credential = "OPENAI_API_KEY"
    room_field = "max_completion_tokens"
    request_id_header = "x-request-id"
    error_only = True

    def __init__(self, client: Any = None, *, api_key: str | None = None, base_url: str | None = None,
                 models: Mapping[Role, str] | None = None, **retrying: Unpack[Retrying]) -> None:
        super().__init__(**retrying)
        self._api_key = api_key.strip() if api_key else None
        self._base_url = base_url.rstrip("/") if base_url else None
        _secrets.keep([self._api_key, *_secrets.url_secrets(base_url)])
        self.models: Mapping[Role, str] = dict(models or {})
        self._client = client
        on_openai = self._base_url is None or urlparse(self._base_url).hostname == "api.openai.com"
        self._defaults: Mapping[Role, str] | None = {role: OPENAI_MODEL for role in ROLES} if on_openai else None

    @property
    def prices(self) -> Mapping[str, Price]:
        """The table's rows for the models used; an id with none is "unknown", never $0."""
        return {model: PRICES[model] for model in {*self.models.values(), *(self._defaults or {}).values()}
                if model in PRICES}

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError:
                raise install_hint() from None
            key = self._api_key or (PLACEHOLDER_KEY if self._base_url else None)
            if key is None:
                raise UsageError("the openai backend needs OPENAI_API_KEY (or OPENAI_BASE_URL naming a local "
                                 "server, which needs no key); set one, or build offline with --backend offline")
            self._client = openai.OpenAI(api_key=key, base_url=self._base_url, max_retries=0)
        return self._client

    @property
    def endpoint(self) -> str:
        return _secrets.shown_url(self._base_url) if self._base_url else "https://api.openai.com/v1"

    @property
    def default_models(self) -> Mapping[Role, str]:
        """OpenAI's own on OpenAI; elsewhere the one model the server serves (``GET /v1/models``), if one."""
        if self._defaults is None:
            try:
                served = sorted(str(model.id) for model in self.client.models.list())
            except StayError:
                raise
            except Exception as exc:
                import openai

                status = getattr(exc, "status_code", None)
                asking = "asking the server which models it serves"
                down = unreachable(exc, asking, self.endpoint, "OPENAI_BASE_URL", answered=self._heard)
                if down is not None or isinstance(exc, openai.APIConnectionError):  # no answer: not the list's fault
                    raise down or ModelUnavailable(f"{asking}: {self.endpoint} did not answer ({type(exc).__name__})",
                                                   fix=f"check the server, then {RERUN}") from None
                if status in (401, 403):
                    raise UsageError(f"{self.endpoint}: OPENAI_API_KEY was rejected ({status}) listing its models; "
                                     "check it") from None
                raise UsageError(f"{self.endpoint} did not list its models ({type(exc).__name__}); set STAY_MODEL "
                                 "to the model id to use") from None
            self._heard = True
            if len(served) != 1:
                listed = ", ".join(served[:5]) + (", ..." if len(served) > 5 else "") or "none"
                raise UsageError(f"{self.endpoint} serves {len(served)} models ({listed}); set STAY_MODEL (or "
                                 "STAY_MODEL_<ROLE>) to the one to use")
            self._defaults = {role: served[0] for role in ROLES}
        return self._defaults

    @property
    def screen_model(self) -> str:
        """Read without asking the server (a replay may have none)."""
        return (self.models.get("analysis") or (self._defaults or {}).get("analysis")
                or f"the model {self.endpoint} serves")

    def model_for(self, role: Role, model: str) -> str:
        """The settings' choice (a Claude default means none), else the default."""
        if model != CLAUDE_MODELS[role]:
            return model
        return self.models.get(role) or self.default_models[role]

    def _screened_by(self) -> str:
        return self.model_for("analysis", CLAUDE_MODELS["analysis"])

    def _held(self, request: ModelRequest, model: str, thinking: Thinking | None, budget: Budget) -> dict[str, Any]:
        return messages_params(request, model, answer_tokens=budget.answer)

    def _ask(self, request: ModelRequest, model: str, thinking: Thinking | None, budget: Budget, where: str,
             first: bool) -> ModelAnswer:
        """Strict structured output, or JSON mode (each answer checked here) from a server refusing it."""
        room, json_only = budget.answer, self.endpoint in _JSON_ONLY
        try:
            read = read_completion(self._call(request_params(request, model, answer_tokens=room,
                                                             json_only=json_only), where), request, room)
        except _SchemaRefused:
            self.progress(f"  {self.endpoint} does not take response_format json_schema; using JSON mode "
                          "(json_object) and checking each answer against its schema here")
            with _JSON_ONLY_LOCK:
                _JSON_ONLY.add(self.endpoint)
            return self._ask(request, model, thinking, budget, where, first)
        if not json_only:
            return parsed(read, request)
        return self._checked(read, request, model, room, where)

    def _checked(self, read: Read, request: ModelRequest, model: str, room: int, where: str) -> ModelAnswer:
        """A JSON-mode answer held to the model's own schema, asked once more with what was wrong."""
        import jsonschema  # type: ignore[import-untyped]  # the openai extra installs it; no stubs

        validator = jsonschema.Draft202012Validator(request.output_schema)
        try:
            answer = parsed(read, request)
            data = json.loads(read.text)
        except AnswerError as exc:
            problems = [str(exc)]
        else:
            problems = sorted(f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {one_line(e.message, 150)}"
                              for e in validator.iter_errors(data))
            if not problems:
                return answer
        self.progress(f"  {where}: the JSON-mode answer does not fit its schema; asking once more")
        alone = hold_more(self._held(request, model, None, Budget(room, 0)), read.answer)  # counted on its own
        spent = Usage() if alone else read.answer.usage
        params = request_params(request, model, answer_tokens=room, json_only=True)
        params["messages"].append({"role": "user", "content": "Your previous answer did not fit the schema: "
                                   + "; ".join(problems[:10]) + ". Answer again, with the whole JSON object."})
        again = read_completion(self._call(params, where), request, room)
        with paying(spent):  # both replies were paid for
            answer = parsed(again, request)
            left = [e.message for e in validator.iter_errors(json.loads(again.text))]
            if left:
                error = AnswerError(f"{where}: the JSON-mode answer does not fit its schema twice: "
                                    f"{one_line(left[0])}", raw=again.text)
                error.billed = answer
                raise error
            return plus(spent, answer)

    def _call(self, params: dict[str, Any], where: str) -> Any:
        """Not streamed."""
        room = params["max_completion_tokens"]
        clock = _Deadline(self, room, where, timeout=max(self.timeout, room / SLOWEST_TOKENS_PER_SECOND))
        return self._retried(lambda timeout: self.client.chat.completions.create(**params, timeout=timeout),
                             where, clock, params["model"])

    def _refused(self, status: int, detail: str, body: Any, where: str, model: str) -> StayError | None:
        if status in (401, 403):
            return UsageError(f"{where}: OPENAI_API_KEY was rejected ({status}: {detail}); check it; nothing was "
                              "written")
        if status == 404:
            return UsageError(f"{where}: {self.endpoint} has no model '{model}' (404: {detail}); set STAY_MODEL (or "
                              "STAY_MODEL_<ROLE>) to a model it serves; nothing was written")
        # a 400 naming response_format; a schema strict mode refuses ("Invalid schema") is stay's error
        refuses_schema = "response_format" in detail.lower() and "invalid schema" not in detail.lower()
        if status == 400 and self.endpoint not in _JSON_ONLY and refuses_schema:
            raise _SchemaRefused(detail)
        if body["error"].get("code") == "insufficient_quota":
            return ModelError(f"{where}: the server refused the call: the account's quota is used up ({status}: "
                              f"{detail}); not retried, since waiting will not lift it: add credit, then rerun "
                              "(finished files are kept)")
        return None


class _SchemaRefused(ModelError):
    """``_ask`` asks again in JSON mode."""


def make(settings: Settings, *, progress: Progress | None = None) -> OpenAIBackend:
    """A role's Claude default means no id was set."""
    chosen = {role: model for role, model in settings.models.items() if model != CLAUDE_MODELS[role]}
    return OpenAIBackend(api_key=settings.openai_api_key, base_url=settings.openai_base_url, models=chosen,
                         **retrying(settings, progress))


COMMON = frozenset({"type", "description", "enum", "const", "anyOf", "$ref", "$defs"})
SUPPORTED: Mapping[str, frozenset[str]] = {
    "string": COMMON | {"pattern", "format"},
    "number": COMMON | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "integer": COMMON | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "array": COMMON | {"items", "minItems", "maxItems"},
    "object": COMMON | {"properties", "required", "additionalProperties"},
    "boolean": COMMON,
    "null": COMMON,
}
"""Per type, the keywords strict mode takes (OpenAI's "Supported schemas")."""
DROPPED = frozenset({"title"})  # a name for humans tells the model nothing the property's name does not


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as strict mode takes it: every property required (an optional one nullable, read back
    by ``unnull``), only ``SUPPORTED`` keywords (others moved into the description), none beside a ``$ref``."""
    return _strict(schema, schema.get("$defs") or {})


def _strict(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if "$defs" in schema:
        found["$defs"] = {name: _strict(part, defs) for name, part in schema["$defs"].items()}
    if "$ref" in schema:
        beside = {key: value for key, value in schema.items() if key not in ("$ref", "$defs")}
        name = str(schema["$ref"]).removeprefix("#/$defs/")
        if not beside or name not in defs:
            return {**found, "$ref": schema["$ref"]}
        # strict mode takes no keyword beside a $ref (the openai SDK's own transform unravels
        # these too): the definition is written out here, with the description beside it
        return {**found, **_strict({**defs[name], **beside}, defs)}
    kind = schema.get("type")
    allowed = SUPPORTED.get(kind, COMMON) if isinstance(kind, str) else COMMON
    moved: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("$defs", "$ref") or key in DROPPED or (key == "default" and value is None):
            continue  # a null default says no more than the property being nullable
        if key not in allowed:
            moved[key] = value
        elif key == "anyOf":
            found[key] = [_strict(variant, defs) for variant in value]
        elif key == "items":
            found[key] = _strict(value, defs)
        elif key == "properties":
            required = set(schema.get("required", ()))
            found[key] = {name: _strict(part, defs) if name in required else nullable(_strict(part, defs))
                          for name, part in value.items()}
        elif key in ("required", "additionalProperties"):
            continue  # set below, for every object
        else:
            found[key] = value
    if kind == "object" or "properties" in schema:
        found.setdefault("properties", {})
        found["required"] = list(found["properties"])
        found["additionalProperties"] = False
    if moved:
        said = json.dumps(moved, sort_keys=True, ensure_ascii=False)
        found["description"] = f"{found['description']}\n\n{said}" if found.get("description") else said
    return found


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if _admits_null(schema):
        return schema
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    kind = schema.get("type")
    if isinstance(kind, str) and "$ref" not in schema:
        widened = {**schema, "type": [kind, "null"]}
        if "enum" in widened:
            widened["enum"] = [*widened["enum"], None]
        return widened
    rest = {key: value for key, value in schema.items() if key != "description"}
    described = {"description": schema["description"]} if schema.get("description") else {}
    return {"anyOf": [rest, {"type": "null"}], **described}


def _admits_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_admits_null(variant) for variant in schema.get("anyOf", ()))


def unnull(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A ``null`` for an optional property is dropped, so the answer model's default applies."""
    root = schema if root is None else root
    schema = _resolved(schema, root)
    if isinstance(value, dict):
        for variant in (schema, *schema.get("anyOf", ())):
            variant = _resolved(variant, root)
            properties: Mapping[str, Any] = variant.get("properties", {})
            if properties and set(value) <= set(properties):
                required = set(variant.get("required", ()))
                return {key: unnull(item, properties[key], root) for key, item in value.items()
                        if item is not None or key in required}
        return value
    if isinstance(value, list):
        for variant in (schema, *schema.get("anyOf", ())):
            variant = _resolved(variant, root)
            if "items" in variant:
                return [unnull(item, variant["items"], root) for item in value]
    return value


def _resolved(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        schema = root.get("$defs", {})[str(schema["$ref"]).removeprefix("#/$defs/")]
    return schema


def request_params(request: ModelRequest, model: str, *, answer_tokens: int | None = None,
                   json_only: bool = False) -> dict[str, Any]:
    """Stable parts first for the prefix cache: the system blocks, the stage's shared content, this call's."""
    schema = strict_schema(request.output_schema)
    system = "\n\n".join(block.text for block in request.system if block.text)
    if json_only:  # JSON mode sees no schema: the model is told it, after the stable prefix
        system += ("\n\nAnswer with one JSON object, and nothing else, that validates against this JSON "
                   f"schema:\n{json.dumps(schema, sort_keys=True, ensure_ascii=False)}")
    user = f"{request.shared}\n\n{request.user}" if request.shared else request.user
    fmt: dict[str, Any] = ({"type": "json_object"} if json_only else
                           {"type": "json_schema", "json_schema": {"name": request.output_name, "strict": True,
                                                                   "schema": schema}})
    return {"model": model, "max_completion_tokens": answer_tokens or request.max_tokens,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "response_format": fmt}


def usage_of(completion: Any, where: str) -> Usage:
    """Counted as Anthropic's: cached prompt tokens are cache reads, ``input_tokens`` the rest."""
    usage = getattr(completion, "usage", None)
    prompt, output = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    written = getattr(details, "cache_write_tokens", None) or 0
    reasoning = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None) or 0
    for name, value in (("prompt_tokens", prompt), ("completion_tokens", output), ("cached_tokens", cached),
                        ("cache_write_tokens", written), ("reasoning_tokens", reasoning)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _malformed(where, f"usage.{name} is {value!r}, not a count of tokens")
    assert isinstance(prompt, int) and isinstance(output, int) and isinstance(written, int)
    if cached + written > prompt or reasoning > output:
        raise _malformed(where, f"usage counts {cached} cached and {written} cache-written of {prompt} prompt "
                                f"tokens, {reasoning} reasoning of {output} completion tokens")
    return Usage(input_tokens=prompt - cached - written, output_tokens=output, cache_read_input_tokens=cached,
                 cache_creation_input_tokens=written, thinking_tokens=reasoning)


@dataclass(frozen=True)
class Read:
    answer: ModelAnswer
    text: str


def read_completion(completion: Any, request: ModelRequest, room: int) -> Read:
    where = f"stage {request.stage} ({request.artefact})"
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise _malformed(where, "it has no choices")
    usage = usage_of(completion, where)
    choice = choices[0]
    finish = getattr(choice, "finish_reason", None)
    message = getattr(choice, "message", None)
    billed = ModelAnswer(data={}, model=model_of(completion), usage=usage, max_tokens=room,
                         stop_reason=finish if isinstance(finish, str) else None,
                         response_id=_secrets.redact(str(getattr(completion, "id", "") or "")) or None,
                         # the x-request-id header, which the SDK keeps on a parsed response
                         request_id=request_id_of(getattr(completion, "_request_id", None)))
    refusal = getattr(message, "refusal", None)
    with billed_as(billed):
        if isinstance(refusal, str) and refusal:
            raise RefusalError(f"{where}: the model refused to answer (refusal: "
                               f"{one_line(_secrets.redact(refusal))}); revise the brief or the inputs of this stage")
        if finish == "content_filter":
            raise RefusalError(f"{where}: the model refused to answer (content_filter: the provider's content "
                               "filter stopped the answer); revise the brief or the inputs of this stage")
        if finish == "length":
            raise TruncationError(
                f"{where}: the answer was cut off at max_completion_tokens={room}; it is incomplete, not malformed: "
                f"split the artefact, or give answers more room: STAY_ANSWER_TOKENS={2 * room} (or --answer-tokens "
                f"{2 * room}), then rerun")
    text = getattr(message, "content", None)
    return Read(billed, text if isinstance(text, str) else "")


def parsed(read: Read, request: ModelRequest) -> ModelAnswer:
    with billed_as(read.answer):
        data = json_object(read.text, f"stage {request.stage} ({request.artefact})")
    return read.answer.model_copy(update={"data": _secrets.redact_data(unnull(data, request.output_schema))})
