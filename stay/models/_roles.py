"""Which model plays which role: one table, overridable from the environment.

Planning gets the strongest model because every later stage inherits its
mistakes; writing a cheaper one because it runs once per lesson per artefact and
is checked mechanically afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from stay.models._request import ROLES, Role

DEFAULT_MODELS: Mapping[Role, str] = {
    # The current generation as of late 2026; none is on the SDK's deprecation list.
    "analysis": "claude-sonnet-5-5",
    "planning": "claude-opus-5-5",
    "writing": "claude-sonnet-5-5",
    "judging": "claude-sonnet-5-5",
}


def model_for(role: Role, environ: Mapping[str, str] | None = None) -> str:
    """``STAY_MODEL_<ROLE>``, else ``STAY_MODEL``, else the table's default."""
    env = os.environ if environ is None else environ
    return (env.get(f"STAY_MODEL_{role.upper()}") or env.get("STAY_MODEL")
            or DEFAULT_MODELS[role])


def model_table(environ: Mapping[str, str] | None = None) -> dict[Role, str]:
    return {role: model_for(role, environ) for role in ROLES}
