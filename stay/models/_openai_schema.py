"""Chat Completions on the wire: an answer schema as OpenAI's strict structured output
takes it, a stage request's parameters, and a completion read back as an answer.

Strict mode (``response_format: {"type": "json_schema", "json_schema": {"strict": true}}``)
constrains decoding to a subset of JSON Schema, with rules of its own that differ from
Anthropic's (``anthropic.transform_schema``, ``stay.models._wire``):

- every property is required: one the answer model leaves optional is made nullable
  instead (``type: [T, "null"]``, or a ``null`` variant in its ``anyOf``), and the answer's
  ``null`` for it is read back as absent (``unnull``) before the stage's model reads it;
- every object has ``additionalProperties: false``;
- only a bounded set of keywords is taken (``SUPPORTED``, as OpenAI's "Supported schemas"
  lists them: ``default`` and ``title`` are not among them); any other is moved into the
  ``description``, so the model still reads it as guidance;
- ``$defs`` and ``#/$defs/...`` references are kept (strict mode allows them), but a
  ``$ref`` may have no keyword beside it: one with a ``description`` beside it is replaced
  by its definition, written out with that description (as the openai SDK's own
  ``to_strict_json_schema`` does).

Pure functions on plain data: no SDK is needed to build a request or read a reply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stay import _secrets
from stay.errors import AnswerError, ModelError, RefusalError, TruncationError
from stay.models._wire import one_line, request_id_of
from stay.requests import ModelAnswer, ModelRequest, Usage

COMMON = frozenset({"type", "description", "enum", "const", "anyOf", "$ref", "$defs"})
"""Keywords strict mode takes on any schema."""
SUPPORTED: Mapping[str, frozenset[str]] = {
    "string": COMMON | {"pattern", "format"},
    "number": COMMON | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "integer": COMMON | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "array": COMMON | {"items", "minItems", "maxItems"},
    "object": COMMON | {"properties", "required", "additionalProperties"},
    "boolean": COMMON,
    "null": COMMON,
}
"""Per type, the keywords strict mode takes (OpenAI's Structured Outputs guide, "Supported
schemas" > "Supported properties"); a schema with no single type takes ``COMMON``."""
DROPPED = frozenset({"title"})
"""Keywords dropped outright: a name for humans that tells the model nothing the property's
own name does not."""


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (an answer model's JSON schema) as strict mode takes it."""
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
    """``schema`` that also admits ``null`` (an optional property, required in strict mode)."""
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
    description = schema.get("description")
    rest = {key: value for key, value in schema.items() if key != "description"}
    wrapped: dict[str, Any] = {"anyOf": [rest, {"type": "null"}]}
    if description:
        wrapped["description"] = description
    return wrapped


def _admits_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_admits_null(variant) for variant in schema.get("anyOf", ()))


def unnull(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """An answer under the strict schema as the answer model reads it: a ``null`` for a
    property ``schema`` (the model's own, not the strict one) leaves optional is dropped,
    so the model's default applies as if the property had been left out."""
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


# -- requests and replies --------------------------------------------------------------


def request_params(request: ModelRequest, model: str, *, answer_tokens: int | None = None,
                   json_only: bool = False) -> dict[str, Any]:
    """Chat Completions parameters for a stage request (pure). Stable parts first, since
    OpenAI's prompt cache reads the longest prefix already seen: the system blocks in
    order, the stage's shared content, then this call's."""
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
    """Chat Completions usage as stay counts it: cached prompt tokens are cache reads,
    ``cache_write_tokens`` (where a server reports them) cache writes, and ``input_tokens``
    the rest of the prompt (as Anthropic's excludes both); reasoning tokens are the part of
    the completion spent thinking."""
    usage = getattr(completion, "usage", None)
    prompt, output = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    written = getattr(details, "cache_write_tokens", None) or 0
    reasoning = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None) or 0
    for name, value in (("prompt_tokens", prompt), ("completion_tokens", output), ("cached_tokens", cached),
                        ("cache_write_tokens", written), ("reasoning_tokens", reasoning)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise malformed(where, f"usage.{name} is {value!r}, not a count of tokens")
    assert isinstance(prompt, int) and isinstance(output, int)
    assert isinstance(written, int)
    if cached + written > prompt or reasoning > output:
        raise malformed(where, f"usage counts {cached} cached and {written} cache-written of {prompt} prompt "
                               f"tokens, {reasoning} reasoning of {output} completion tokens")
    return Usage(input_tokens=prompt - cached - written, output_tokens=output, cache_read_input_tokens=cached,
                 cache_creation_input_tokens=written, thinking_tokens=reasoning)


def malformed(where: str, what: str) -> ModelError:
    return ModelError(f"{where}: the server's response is malformed: {what}; nothing was written, run the "
                      "command again (if it persists, check OPENAI_BASE_URL and any proxy in between)")


@dataclass(frozen=True)
class Read:
    """A completion read: its answer (data may still fail the schema), or the error it means."""

    answer: ModelAnswer
    finish: str | None
    text: str


def read_completion(completion: Any, request: ModelRequest, room: int) -> Read:
    """The completion's first choice as an answer; the refusal, content filter and cut-off
    errors, each carrying what the reply cost (``billed``)."""
    where = f"stage {request.stage} ({request.artefact})"
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise malformed(where, "it has no choices")
    usage = usage_of(completion, where)
    choice, model = choices[0], getattr(completion, "model", None)
    finish = getattr(choice, "finish_reason", None)
    message = getattr(choice, "message", None)
    billed = ModelAnswer(data={}, model=_secrets.redact(model) if isinstance(model, str) and model else "unknown",
                         usage=usage, max_tokens=room, stop_reason=finish if isinstance(finish, str) else None,
                         response_id=_secrets.redact(str(getattr(completion, "id", "") or "")) or None,
                         # the x-request-id header, which the SDK keeps on a parsed response
                         request_id=request_id_of(getattr(completion, "_request_id", None)))
    error: ModelError | None = None
    refusal = getattr(message, "refusal", None)
    if isinstance(refusal, str) and refusal:
        error = RefusalError(f"{where}: the model refused to answer (refusal: {one_line(_secrets.redact(refusal))}); "
                             "revise the brief or the inputs of this stage")
    elif finish == "content_filter":
        error = RefusalError(f"{where}: the model refused to answer (content_filter: the provider's content "
                             "filter stopped the answer); revise the brief or the inputs of this stage")
    elif finish == "length":
        error = TruncationError(
            f"{where}: the answer was cut off at max_completion_tokens={room}; it is incomplete, not malformed: "
            f"split the artefact, or give answers more room: STAY_ANSWER_TOKENS={2 * room} (or --answer-tokens "
            f"{2 * room}), then rerun")
    if error is not None:
        error.billed = billed
        raise error
    text = getattr(message, "content", None)
    return Read(billed, finish, text if isinstance(text, str) else "")


def parsed(read: Read, request: ModelRequest) -> ModelAnswer:
    """The answer's JSON, un-nulled for the stage's model (``unnull``), or an AnswerError."""
    where = f"stage {request.stage} ({request.artefact})"
    try:
        data = json.loads(read.text)
    except json.JSONDecodeError as exc:
        error = AnswerError(f"{where}: the answer is not JSON ({exc.msg} at character {exc.pos})",
                            raw=_secrets.redact(read.text))
        error.billed = read.answer
        raise error from None
    if not isinstance(data, dict):
        error = AnswerError(f"{where}: the answer is JSON but not an object", raw=_secrets.redact(read.text))
        error.billed = read.answer
        raise error
    return read.answer.model_copy(update={"data": _secrets.redact_data(unnull(data, request.output_schema))})
