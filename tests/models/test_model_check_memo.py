"""Differential test of a fast path: ``_CHECKED``, the per-process memo of
``AnthropicBackend.check_models`` (one ``models.retrieve`` per endpoint and id), against
the slow path, the same check with the memo cleared before every call.

Over generated sequences of checks against several endpoints at once (fakes on
127.0.0.1 that differ in what a memo could confuse: two Models APIs with different
``max_tokens`` limits, a gateway without the Models API, one that rejects the key), with
model ids the fake knows and ids it does not, the memoised check must give, call for
call, exactly the outcome of the unmemoised one: ok or the same one-line UsageError,
and the same ``output_limit`` afterwards. A memo keyed on the model id alone (no
endpoint) fails it: the first endpoint's limit is read at the second, and a gateway's
"unchecked" would be answered by another endpoint's memory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.errors import UsageError
from stay.models import AnthropicBackend
from stay.models import _anthropic as memo
from tests.models.fake_api import KNOWN_MODELS, OUTPUT_LIMIT, FakeMessagesAPI
from tests.models.helpers import KEY, quiet
from tests.parity.harness import examples

KNOWN = sorted(KNOWN_MODELS)[:3]
UNKNOWN = ["claude-sonnet-9-typo", "claude-hiaku-5-5"]
ENDPOINTS = {
    "models-api": {"output_limit": OUTPUT_LIMIT},
    "models-api-smaller-limit": {"output_limit": OUTPUT_LIMIT // 2},  # a different answer for the same id
    "gateway": {"models_api": False},  # every GET a 404 naming no model: not a verdict on the id
    "rejects-the-key": {"credentials": frozenset({"some-other-key"})},
}


@pytest.fixture(scope="module")
def backends() -> Iterator[dict[str, AnthropicBackend]]:
    """One backend per endpoint, over HTTP; the fakes live for the module (each example
    makes a handful of GETs, not a server)."""
    with ExitStack() as stack:
        apis = {name: stack.enter_context(FakeMessagesAPI(**options))  # type: ignore[arg-type]
                for name, options in ENDPOINTS.items()}
        yield {name: AnthropicBackend(api_key=KEY, base_url=api.url, progress=quiet) for name, api in apis.items()}


def _outcome(backend: AnthropicBackend, role: str, model: str) -> tuple[str, int]:
    """What a check says (ok, or its one line) and the limit the backend then uses."""
    try:
        backend.check_models({role: model})  # type: ignore[dict-item]
        said = "ok"
    except UsageError as exc:
        said = str(exc)
    return said, backend.output_limit(model)


_calls = st.lists(st.tuples(st.sampled_from(sorted(ENDPOINTS)), st.sampled_from(["writing", "analysis"]),
                            st.sampled_from(KNOWN + UNKNOWN)), min_size=2, max_size=8)


@settings(max_examples=examples(40, dev=12), deadline=None)
@given(calls=_calls)
def test_the_memoised_model_check_says_what_an_unmemoised_one_says(backends: dict[str, AnthropicBackend],
                                                                   calls: list[tuple[str, str, str]]) -> None:
    memo._CHECKED.clear()  # each example starts from a fresh process's memo
    fast = [_outcome(backends[endpoint], role, model) for endpoint, role, model in calls]
    slow = []
    for endpoint, role, model in calls:
        memo._CHECKED.clear()
        slow.append(_outcome(backends[endpoint], role, model))
    memo._CHECKED.clear()
    assert fast == slow


def test_the_endpoints_differ_in_every_way_the_check_can_tell(backends: dict[str, AnthropicBackend]) -> None:
    """Not a vacuous comparison: over these endpoints the outcomes are all there (ok with
    each limit, an unknown id, a rejected key, a gateway left unchecked)."""
    memo._CHECKED.clear()
    seen = {(name, model): _outcome(backend, "writing", model) for name, backend in backends.items()
            for model in (KNOWN[0], UNKNOWN[0])}
    memo._CHECKED.clear()
    assert seen["models-api", KNOWN[0]] == ("ok", ENDPOINTS["models-api"]["output_limit"])
    assert seen["models-api-smaller-limit", KNOWN[0]] == ("ok", ENDPOINTS["models-api-smaller-limit"]["output_limit"])
    assert "knows no model" in seen["models-api", UNKNOWN[0]][0]
    assert "was rejected (401)" in seen["rejects-the-key", KNOWN[0]][0]
    assert seen["gateway", UNKNOWN[0]][0] == "ok"  # no Models API: the calls will say it
