"""The gates, declared once: a gate's name, the phase it closes and what its page shows.

Everything else about a gate is derived from this tuple: its three graph nodes
(``<name>_summary``, ``<name>_ask``, ``<name>_record``) and their place on the spine
(after the nodes of the phase it closes), the files it covers (the outputs of the phase
it closes and of every earlier gate's), what each guard requires, the approvals a
revision of a file needs, the gate page's path, ``stay approve``'s choices and the
ledger's gate names. A third gate is one more ``GateDecl`` here (and its phase's stages).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stay.pipeline._gate_page import GateView, design_page, plan_page


@dataclass(frozen=True)
class GateDecl:
    name: str
    closes: str
    """The phase whose nodes come before the gate: its files are what the gate adds."""
    page: Callable[[GateView], list[str]]
    """What the gate's page shows a reviewer, before the defects and the history."""

    @property
    def summary(self) -> str:
        return f"{self.name}_summary"

    @property
    def ask(self) -> str:
        return f"{self.name}_ask"

    @property
    def record(self) -> str:
        return f"{self.name}_record"

    @property
    def nodes(self) -> tuple[str, str, str]:
        return self.summary, self.ask, self.record


GATES: tuple[GateDecl, ...] = (
    GateDecl("design", "design", design_page),
    GateDecl("plan", "plan", plan_page),
)
"""The gates in the order a course passes them."""

GATE_NAMES = tuple(gate.name for gate in GATES)
GATED = tuple(gate.closes for gate in GATES)
"""Phases whose files a gate covers: a command that does not write them needs them."""


def gate_named(name: str, gates: Sequence[GateDecl] = GATES) -> GateDecl:
    return next(gate for gate in gates if gate.name == name)


def covered_phases(name: str, gates: Sequence[GateDecl] = GATES) -> tuple[str, ...]:
    """The phases whose files gate ``name`` covers: its own and every earlier gate's."""
    names = [gate.name for gate in gates]
    return tuple(gate.closes for gate in gates[:names.index(name) + 1])


def earlier(name: str, gates: Sequence[GateDecl] = GATES) -> tuple[str, ...]:
    """The gates a course passes before gate ``name``."""
    names = [gate.name for gate in gates]
    return tuple(names[:names.index(name)])


def needed_before(phase: str, gates: Sequence[GateDecl] = GATES) -> tuple[str, ...]:
    """The gates whose approvals must hold before a file of ``phase`` is written: every
    gate closing an earlier phase (a phase no gate closes comes after them all)."""
    closes = [gate.closes for gate in gates]
    if phase not in closes:
        return tuple(gate.name for gate in gates)
    return tuple(gate.name for gate in gates[:closes.index(phase)])
