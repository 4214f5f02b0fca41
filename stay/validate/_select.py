"""Which rules a run evaluates: ``--select`` and ``--ignore``, after ruff's.

A selector names a set of rules: a rule code (``aud001``), a family prefix (``aud``,
every rule of that family, whatever its group) or a group (``contract``, ``stay``).
The rules run are those the selectors in ``select`` name, less those ``ignore`` names,
in the registry's order. With no ``select``, every rule: what a build checks is what
``stay validate`` checks, so the two count the same checks; ``select="contract"`` runs
exactly the frozen reference's rules (its report byte for byte but for the verdict word).
Each selector may also be a comma-separated list, as on the command line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from stay.errors import UsageError
from stay.validate._registry import Group, Rule
from stay.validate._rules import RULES

Selectors = str | Iterable[str]
"""One selector, a comma-separated list of them, or several of either."""

DEFAULT_SELECT: tuple[str, ...] = tuple(Group)
"""What is checked when nothing is selected, by every caller alike (``stay validate``, a
build's validate step, its gates and repair, ``stay watch``, ``stay view``, the validator
scorer): every group, the contract's rules and stay's, so no two of them count differently."""

FORMS = "a rule code (aud001), a family prefix (aud) or a group (" + ", ".join(Group) + ")"
"""The valid forms of a selector, as an error names them."""


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
