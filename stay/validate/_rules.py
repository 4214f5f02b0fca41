"""The registry: every rule of validator-rules.md, by code, in the contract's order.

This is the one place a rule is switched on. A test holds it equal, code for code,
severity for severity and owner for owner, to the contract's rules table.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from stay.validate._registry import Rule
from stay.validate.rules import (
    assessment,
    audience,
    capstone,
    content,
    curriculum,
    exercises,
    glossary,
    load,
    manifest,
    outcomes,
    plans,
    quiz,
    retrieval,
    schema,
    terms,
)

_FAMILIES = (
    schema, manifest, audience, curriculum, outcomes, assessment, plans, load, terms,
    content, exercises, quiz, retrieval, capstone, glossary,
)


def _build() -> Mapping[str, Rule]:
    registry: dict[str, Rule] = {}
    for family in _FAMILIES:
        for rule in family.RULES:
            if rule.code in registry:
                raise RuntimeError(f"rule {rule.code} is registered twice")
            registry[rule.code] = rule
    return MappingProxyType(registry)


RULES: Mapping[str, Rule] = _build()
"""code -> Rule (severity, owner, message template, check, docstring)."""
