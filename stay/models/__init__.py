"""The model layer: requests and answers, roles, and the backends behind one protocol."""

from __future__ import annotations

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
    "DEFAULT_MODELS", "MAX_TOKENS", "ROLES", "ModelAnswer", "ModelClient", "ModelRequest", "Role",
    "SystemBlock", "Usage", "model_for", "model_table",
]

from stay.models._offline import DEFECTS, OFFLINE_MODEL, InjectedError, OfflineBackend

__all__ += ["DEFECTS", "OFFLINE_MODEL", "InjectedError", "OfflineBackend"]
