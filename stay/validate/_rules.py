"""The registry: every rule, by code, the contract's in the contract's order; and which of
them a run evaluates (``--select``/``--ignore``, after ruff's).

Each family of rules lives in the module named by its prefix (``rules/les.py`` holds
les001..les011), declaring each with ``@rule(...)`` beside its check; tests hold the contract
group to the contract's table and the frozen reference's codes. ``register`` adds a ``stay``
rule at run time; the contract group is closed.

A selector is a rule code (``aud001``), a family prefix (``aud``) or a group (``contract``,
``stay``), or a comma-separated list of them. With no ``select``, every rule: what a build
checks is what ``stay validate`` checks; ``select="contract"`` is exactly the reference's rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType, ModuleType

from stay.errors import GraphError, UsageError
from stay.validate._registry import Group, Rule
from stay.validate.rules import (
    asm,
    ast,
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
    pos,
    prc,
    prj,
    qz,
    ret,
    rev,
    sch,
    trm,
)

FAMILIES: tuple[ModuleType, ...] = (
    sch, man, lay, aud, cur, out, asm, pln, lod, trm, les, exe, qz, ret, prj, glo,
    pos, prc, ast, rev,
)
"""The rule families in the contract's order, then stay's own (``pos``, ``prc``, ``ast``, ``rev``); each
module is named by its prefix."""


def family_rules(family: ModuleType) -> list[Rule]:
    """The rules a family module declares, in its order."""
    return [value for value in vars(family).values() if isinstance(value, Rule)]


def prefix_of(family: ModuleType) -> str:
    """The code prefix a family module holds: its own name (``stay.validate.rules.les`` -> ``les``)."""
    return family.__name__.rpartition(".")[2]


_REGISTRY: dict[str, Rule] = {}

RULES: Mapping[str, Rule] = MappingProxyType(_REGISTRY)
"""code -> Rule (severity, owner, message template, check, docstring, group): a read-only
view of the registry, so a rule ``register`` adds is seen wherever RULES is read."""


def _add(rule: Rule, module: str) -> None:
    if rule.code in _REGISTRY:
        raise GraphError(f"rule {rule.code} is registered twice")
    if rule.code[:-3] != module or rule.check.__name__ != rule.code or not rule.code[-3:].isdigit():
        raise GraphError(f"rule {rule.code} is declared as {rule.check.__name__} in "
                         f"rules/{module}.py; it belongs in rules/{rule.code[:-3]}.py, "
                         f"named {rule.code}")
    _REGISTRY[rule.code] = rule


def register(rule: Rule) -> Rule:
    """Add a ``stay``-group rule to the registry (after every family's); returns it, so it
    can stand as a decorator above ``@rule(...)``. Its function must be named by its code.
    A contract rule is refused: the contract group is exactly the reference's rules."""
    if rule.group is Group.CONTRACT:
        raise GraphError(f"rule {rule.code} cannot join the contract group, which holds the frozen "
                         f"reference's rules only; declare it with group=Group.STAY")
    if rule.check.__name__ != rule.code:
        raise GraphError(f"rule {rule.code} is declared as {rule.check.__name__}; name its function {rule.code}")
    _add(rule, rule.code[:-3])
    return rule


def unregister(code: str) -> None:
    """Remove a rule ``register`` added; the rules of the families stay."""
    if code not in _REGISTRY or code in _DECLARED:
        raise GraphError(f"rule {code} was not added by register(), so it cannot be removed")
    del _REGISTRY[code]


def added_at_run_time(codes: tuple[str, ...]) -> bool:
    """Whether any of ``codes`` is a rule ``register`` added in this process: a worker
    process started fresh (spawn, forkserver) would not know it."""
    return any(code not in _DECLARED for code in codes)


def _declare_families() -> frozenset[str]:
    for family in FAMILIES:
        for rule in family_rules(family):
            _add(rule, prefix_of(family))
    return frozenset(_REGISTRY)


_DECLARED = _declare_families()
"""The codes the family modules declare: what unregister never removes."""


Selectors = str | Iterable[str]

DEFAULT_SELECT: tuple[str, ...] = tuple(Group)
"""What every caller checks when nothing is selected: every group, so no two count differently."""

FORMS = "a rule code (aud001), a family prefix (aud) or a group (" + ", ".join(Group) + ")"


def _names(selectors: Selectors) -> list[str]:
    given = [selectors] if isinstance(selectors, str) else list(selectors)
    if not all(isinstance(item, str) for item in given):
        raise UsageError(f"rule selectors must be strings; got {given!r}")
    return [name.strip() for item in given for name in item.split(",")]  # an empty one names no rule


def _matches(name: str, rule: Rule) -> bool:
    return name in (rule.code, rule.code[:-3], rule.group)


def _named(selectors: Selectors, option: str) -> set[str]:
    """The codes ``selectors`` name; a selector that names no rule is a usage error."""
    codes: set[str] = set()
    for name in _names(selectors):
        found = {code for code, rule in RULES.items() if _matches(name, rule)}
        if not found and name not in set(Group):  # an empty group (no stay rule yet) is still a group
            raise UsageError(f"{option} '{name}' names no rule: give {FORMS}")
        codes |= found
    return codes


def selected(select: Selectors | None = None, ignore: Selectors | None = None) -> Mapping[str, Rule]:
    """code -> Rule for the rules ``select`` names less those ``ignore`` names, in the
    registry's order; ``select=None`` is every rule (``DEFAULT_SELECT``). Raises ``UsageError`` for a
    selector that is no code, prefix or group."""
    chosen = _named(DEFAULT_SELECT if select is None else select, "--select")
    if ignore is not None:
        chosen -= _named(ignore, "--ignore")
    return {code: rule for code, rule in RULES.items() if code in chosen}
