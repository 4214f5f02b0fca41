"""Shared helpers: the real SDK client over ``httpx2.MockTransport`` (the SDK is built on
httpx2: respx would not see its traffic), and handlers that answer like the offline backend."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2

from stay.artefacts import Brief
from stay.models import AnthropicBackend, ModelRequest
from stay.stages import STAGES, Prompts
from tests.conftest import ROOT, run_stay
from tests.models.fake_api import WireViolation, answer_for, enforce, is_stage, message, reply, violation_response

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
SQL = ROOT / "examples" / "briefs" / "sql-window-functions.yaml"
KEY = "sk-ant-api03-TEST-KEY-0123456789abcdef"
Handler = Callable[[httpx2.Request], httpx2.Response]


def client(handler: Handler, *, key: str = KEY) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=key, base_url="http://testserver", max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def backend(handler: Handler, **options: Any) -> AnthropicBackend:
    """The Claude backend over ``handler``; never really sleeps."""
    options.setdefault("sleep", lambda _seconds: None)
    return AnthropicBackend(client(handler), **options)


def recording(responses: list[dict[str, Any] | httpx2.Response] | None = None,
              ) -> tuple[Handler, list[dict[str, Any]]]:
    """A handler that records every stage request's body and answers like the offline
    backend, or with the given bodies (a dict is sent as JSON or a stream, as asked).
    Its own answers are held to the request's wire schema as the real API holds a
    model's (``fake_api.enforce``: fitted, then validated; a misfit is a recorded 400);
    the given bodies are sent as they are, being what a test chose to send."""
    seen: list[dict[str, Any]] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if not is_stage(body):  # the input screen
            try:
                return reply(body, message(enforce(body, {"flagged": False, "reason": "fine"}), model=body["model"]))
            except WireViolation as exc:
                return violation_response(exc)
        seen.append(body)
        if responses:
            canned = responses.pop(0)
            return canned if isinstance(canned, httpx2.Response) else reply(body, canned)
        try:
            return reply(body, message(answer_for(body), model=body["model"]))
        except WireViolation as exc:
            return violation_response(exc)

    return handle, seen


def audience_request() -> ModelRequest:
    return STAGES["audience"].request({"brief": Brief.from_yaml(HTTP)}, Prompts.load(), "audience.yaml")


def quiet(_line: str) -> None:
    pass


def in_process(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m stay.cli ARGS`` from the checkout, with exactly ``env`` as its environment, in this process."""
    with contextlib.chdir(ROOT):
        return run_stay(*args, env=env, only_env=True)
