"""The model layer: requests and answers, roles, thinking and prices, and the backends
behind one public protocol (``Backend``), made by name through the ``stay.backends`` entry
points (offline, anthropic, a plug-in's), with the request cache in front of any of them.
``docs/models.md`` is the reference, ``docs/plugins.md`` how to write a backend."""

from __future__ import annotations

from stay.models._anthropic import AnthropicBackend, PrefixGate, answer_from, prefix_keys, request_params
from stay.models._batch import MAX_BATCH_BYTES, MAX_BATCH_REQUESTS, BatchOutcome, prefetch
from stay.models._cache import REPLAY, CachedBackend, RequestCache, request_key
from stay.models._hold import HoldMore, hold_more, holding
from stay.models._offline import OFFLINE_MODEL, OfflineBackend
from stay.models._prices import (
    BATCH_DISCOUNT,
    DEFAULT_MODELS,
    MIN_CACHEABLE_TOKENS,
    OUTPUT_LIMIT,
    PRICES,
    SCREENING,
    THINKING,
    Price,
    Rates,
    Thinking,
    answer_cost,
    cost,
    describe_cost,
    min_cacheable_tokens,
    price_label,
)
from stay.models._protocol import (
    FEATURES,
    SCREEN_STAGE,
    Backend,
    ModelClient,
    Rejecting,
    Screening,
    can_screen,
    prices_of,
    screen_request,
    screening_of,
    verdict,
)
from stay.models._registry import backend_from, backends, distribution, make_backend
from stay.requests import (
    MAX_TOKENS,
    ROLES,
    ModelAnswer,
    ModelRequest,
    Role,
    SystemBlock,
    Usage,
)

__all__ = [
    "BATCH_DISCOUNT",
    "DEFAULT_MODELS",
    "FEATURES",
    "MAX_BATCH_BYTES",
    "MAX_BATCH_REQUESTS",
    "MAX_TOKENS",
    "MIN_CACHEABLE_TOKENS",
    "OFFLINE_MODEL",
    "OUTPUT_LIMIT",
    "PRICES",
    "REPLAY",
    "ROLES",
    "SCREENING",
    "SCREEN_STAGE",
    "THINKING",
    "AnthropicBackend",
    "Backend",
    "BatchOutcome",
    "CachedBackend",
    "HoldMore",
    "ModelAnswer",
    "ModelClient",
    "ModelRequest",
    "OfflineBackend",
    "PrefixGate",
    "Price",
    "Rates",
    "Rejecting",
    "RequestCache",
    "Role",
    "Screening",
    "SystemBlock",
    "Thinking",
    "Usage",
    "answer_cost",
    "answer_from",
    "backend_from",
    "backends",
    "can_screen",
    "cost",
    "describe_cost",
    "distribution",
    "hold_more",
    "holding",
    "make_backend",
    "min_cacheable_tokens",
    "prefetch",
    "prefix_keys",
    "price_label",
    "prices_of",
    "request_key",
    "request_params",
    "screen_request",
    "screening_of",
    "verdict",
]
