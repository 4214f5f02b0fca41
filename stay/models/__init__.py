"""The model layer: requests and answers, roles and prices, and the backends behind one
protocol (offline, anthropic, and the request cache in front of either)."""

from __future__ import annotations

from stay.errors import InjectedFault
from stay.models._anthropic import AnthropicBackend, answer_from, request_params
from stay.models._batch import BatchOutcome, prefetch
from stay.models._cache import CachedBackend, RequestCache, request_key
from stay.models._offline import DEFECTS, OFFLINE_MODEL, OfflineBackend
from stay.models._prices import PRICES, cost
from stay.models._protocol import ModelClient
from stay.models._request import (
    MAX_TOKENS,
    ROLES,
    ModelAnswer,
    ModelRequest,
    Role,
    SystemBlock,
    Usage,
)
from stay.models._roles import DEFAULT_MODELS, model_for, model_table

__all__ = [
    "DEFAULT_MODELS",
    "DEFECTS",
    "MAX_TOKENS",
    "OFFLINE_MODEL",
    "PRICES",
    "ROLES",
    "AnthropicBackend",
    "BatchOutcome",
    "CachedBackend",
    "InjectedFault",
    "ModelAnswer",
    "ModelClient",
    "ModelRequest",
    "OfflineBackend",
    "RequestCache",
    "Role",
    "SystemBlock",
    "Usage",
    "answer_from",
    "cost",
    "model_for",
    "model_table",
    "prefetch",
    "request_key",
    "request_params",
]
