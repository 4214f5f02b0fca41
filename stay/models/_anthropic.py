"""The Claude backend: the official anthropic SDK (2.x), native structured output,
prompt caching on the stable prefix, and one-line errors.

Structured output goes through ``output_config`` with the answer model's JSON schema
(forcing a tool is rejected by the newest models); the SDK's ``transform_schema``
makes it strict. The system prompt's last block (the stage's reference documents)
carries ``cache_control``, so every call of a stage, every lesson of the wave,
reads the same cached prefix. The stop reason is checked before the answer is
parsed: a truncated answer is incomplete JSON, and saying "schema error" about it
would send a person looking in the wrong place.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the SDK takes seconds to import: only a run that talks to Claude pays for it
    import anthropic

from stay.errors import AnswerError, ModelError, RefusalError, TruncationError, UsageError
from stay.models._request import ModelAnswer, ModelRequest, Usage

_SCREEN_SCHEMA = {
    "type": "object",
    "properties": {"flagged": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["flagged", "reason"],
    "additionalProperties": False,
}
_SCREEN_SYSTEM = (
    "You screen course briefs before a pipeline writes a course from them. Flag a brief only "
    "when the course it asks for would teach or promote serious harm (weapons, abuse, hate, "
    "self-harm, crime) when its fields are read together; an unusual or sensitive topic taught "
    "for legitimate learning is not flagged. Answer with the JSON schema: flagged, and a "
    "one-sentence reason."
)


def request_params(request: ModelRequest, model: str) -> dict[str, Any]:
    """The Messages API parameters for a stage request (pure; no sampling parameters)."""
    import anthropic

    system = []
    for block in request.system:
        entry: dict[str, Any] = {"type": "text", "text": block.text}
        if block.cache:
            entry["cache_control"] = {"type": "ephemeral"}
        system.append(entry)
    return {
        "model": model,
        "max_tokens": request.max_tokens,
        "system": system,
        "messages": [{"role": "user", "content": _user_content(request)}],
        "output_config": {"format": {"type": "json_schema",
                                     "schema": anthropic.transform_schema(request.output_schema)}},
    }


def _user_content(request: ModelRequest) -> str | list[dict[str, Any]]:
    if not request.shared:
        return request.user
    return [{"type": "text", "text": request.shared, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": request.user}]


def answer_from(message: Any, request: ModelRequest) -> ModelAnswer:
    """A Messages API response as an answer, or the error its stop reason means."""
    where = f"stage {request.stage} ({request.artefact})"
    stop = message.stop_reason
    if stop in ("max_tokens", "model_context_window_exceeded"):
        raise TruncationError(
            f"{where}: the answer was cut off at max_tokens={request.max_tokens} "
            f"(stop_reason {stop}); it is incomplete, not malformed: split the artefact or raise "
            "stay.models.MAX_TOKENS")
    if stop == "refusal":
        details = getattr(message, "stop_details", None)
        category = getattr(details, "category", None) or "uncategorised"
        explanation = getattr(details, "explanation", None) or "no explanation given"
        raise RefusalError(f"{where}: the model refused to answer ({category}: {explanation}); "
                           "revise the brief or the inputs of this stage")
    text = "".join(getattr(block, "text", "") for block in message.content
                   if getattr(block, "type", None) == "text")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnswerError(f"{where}: the answer is not JSON ({exc.msg} at character {exc.pos})",
                          raw=text) from None
    if not isinstance(data, dict):
        raise AnswerError(f"{where}: the answer is JSON but not an object", raw=text)
    usage = message.usage
    return ModelAnswer(data=data, model=message.model, usage=Usage(
        input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0,
        cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
        cache_read_input_tokens=usage.cache_read_input_tokens or 0))


def _api_error(exc: Exception, where: str, retries: int) -> ModelError:
    import anthropic

    if isinstance(exc, anthropic.AuthenticationError):
        return ModelError(f"{where}: ANTHROPIC_API_KEY was rejected (401); check the key")
    if isinstance(exc, anthropic.RateLimitError):
        return ModelError(f"{where}: rate limited (429) after {retries} retries; wait a minute and run "
                          "the command again (finished files are kept, nothing is paid twice)")
    if isinstance(exc, anthropic.APIStatusError) and exc.status_code == 529:
        return ModelError(f"{where}: the API is overloaded (529) after {retries} retries; run the "
                          "command again later (finished files are kept)")
    if isinstance(exc, anthropic.APIConnectionError):
        return ModelError(f"{where}: cannot reach the Anthropic API ({type(exc).__name__}); check the "
                          "network or ANTHROPIC_BASE_URL")
    if isinstance(exc, anthropic.APIStatusError):
        detail = " ".join(str(exc.message).split())[:200]
        return ModelError(f"{where}: the API answered HTTP {exc.status_code}: {detail}")
    return ModelError(f"{where}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")


class AnthropicBackend:
    """Answers stage requests with Claude. Sync (``complete``) and async (``acomplete``)."""

    name = "anthropic"

    def __init__(self, client: anthropic.Anthropic | None = None,
                 async_client: anthropic.AsyncAnthropic | None = None, *, max_retries: int = 4) -> None:
        import anthropic

        self.max_retries = max_retries
        if client is None:
            key = os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                raise UsageError("the anthropic backend needs ANTHROPIC_API_KEY; set it, or build "
                                 "offline with --backend offline")
            # base_url is left to the SDK, which reads ANTHROPIC_BASE_URL when it is set
            client = anthropic.Anthropic(api_key=key, max_retries=max_retries)
        self.client = client
        self.async_client = async_client

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        import anthropic

        try:
            message = self.client.messages.create(**request_params(request, model))
        except anthropic.APIError as exc:
            raise _api_error(exc, f"stage {request.stage} ({request.artefact})",
                             self.client.max_retries) from None
        return answer_from(message, request)

    async def acomplete(self, request: ModelRequest, model: str) -> ModelAnswer:
        import anthropic

        if self.async_client is None:
            key = os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                raise UsageError("the anthropic backend needs ANTHROPIC_API_KEY")
            self.async_client = anthropic.AsyncAnthropic(api_key=key, max_retries=self.max_retries)
        try:
            message = await self.async_client.messages.create(**request_params(request, model))
        except anthropic.APIError as exc:
            raise _api_error(exc, f"stage {request.stage} ({request.artefact})",
                             self.async_client.max_retries) from None
        return answer_from(message, request)

    def screen(self, text: str) -> str | None:
        """A harmlessness screen: a cheap classification call with structured output."""
        from stay.models._roles import model_for

        message = self.client.messages.create(
            model=model_for("analysis"), max_tokens=300, system=_SCREEN_SYSTEM,
            messages=[{"role": "user", "content": f"The brief, as one message:\n\n{text}"}],
            output_config={"format": {"type": "json_schema", "schema": _SCREEN_SCHEMA}},
        )
        if message.stop_reason == "refusal":
            return "the screening model refused to read the brief"
        verdict = json.loads("".join(b.text for b in message.content if b.type == "text"))
        return str(verdict["reason"]) if verdict.get("flagged") else None
