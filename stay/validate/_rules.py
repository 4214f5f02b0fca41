"""The registry: every rule of validator-rules.md, by code, in the contract's order.

This is the one place a rule is switched on. Each family of rules lives in the
module named by its prefix (``rules/les.py`` holds les001..les011), declares each
rule with ``@rule(code, severity, owner, template)`` beside its check and its
docstring, and lists them in its ``RULES``; the families below are read in the
contract's order. A test holds the result equal, code for code, severity for
severity and owner for owner, to the contract's rules table.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType, ModuleType

from stay.errors import GraphError
from stay.validate._registry import Rule
from stay.validate.rules import (
    asm,
    aud,
    cur,
    exe,
    glo,
    lay,
    les,
    lod,
    man,
    out,
    pln,
    prj,
    qz,
    ret,
    sch,
    trm,
)

FAMILIES: tuple[ModuleType, ...] = (
    sch, man, lay, aud, cur, out, asm, pln, lod, trm, les, exe, qz, ret, prj, glo,
)
"""The rule families in the contract's order; each module is named by its prefix."""


def prefix_of(family: ModuleType) -> str:
    """The code prefix a family module holds: its own name (``stay.validate.rules.les`` -> ``les``)."""
    return family.__name__.rpartition(".")[2]


def _build() -> Mapping[str, Rule]:
    registry: dict[str, Rule] = {}
    for family in FAMILIES:
        prefix = prefix_of(family)
        for rule in family.RULES:
            if rule.code in registry:
                raise GraphError(f"rule {rule.code} is registered twice")
            if rule.code[:-3] != prefix or rule.check.__name__ != rule.code:
                raise GraphError(f"rule {rule.code} is declared as {rule.check.__name__} in "
                                   f"rules/{prefix}.py; it belongs in rules/{rule.code[:-3]}.py, "
                                   f"named {rule.code}")
            registry[rule.code] = rule
    return MappingProxyType(registry)


RULES: Mapping[str, Rule] = _build()
"""code -> Rule (severity, owner, message template, check, docstring)."""
