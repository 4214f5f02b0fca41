"""How a node handler gets its collaborators: by naming them (Hamilton-style injection).

A handler's parameters say what it works through (``report``, ``ledger``, ``stage``...).
The runner reads them once, when the handler table is built (``bind``), never per call:
each name is either a collaborator of the run (``FROM_RUN``) or something its graph node
declares (``FROM_NODE``: the node's attributes, its stage, its gate). A name that is
neither, or a node that lacks what its handler asks for, is a ``GraphError`` when the
table is built, listing every such problem at once. So a handler's signature is the
whole of what it can touch, and no handler is given the run context to reach through.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from stay.errors import GraphError
from stay.pipeline._dag import Dag
from stay.pipeline._fix import Fixer
from stay.pipeline._produce import Again
from stay.pipeline._run import Run

Handler = Callable[[Run], object]
"""What the runner calls for a node: the bound handler, given the run it is part of."""

FROM_RUN: Mapping[str, Callable[[Run], object]] = {
    "config": lambda run: run.config,
    "reader": lambda run: run.reader,
    "model": lambda run: run.model,
    "report": lambda run: run.report,
    "tally": lambda run: run.tally,
    "writer": lambda run: run.writer,
    "walk": lambda run: run.walk,
    "ledger": lambda run: run.walk.course,  # read at the call: scaffold makes a new course's
    "fixer": lambda run: Fixer(_again(run), run.tally, run.report),
}
"""The run's collaborators, by the parameter name that asks for one."""


def _again(run: Run) -> Again:
    return Again(run.config, run.reader, run.walk.course, run.model, run.writer)


def _stage(pipeline: Dag, name: str, attrs: Mapping[str, Any]) -> object:
    if not attrs["stages"]:
        raise LookupError("the node makes no stage's requests")
    return pipeline.graph["stages"][attrs["stages"][0]]


def _gate(pipeline: Dag, name: str, attrs: Mapping[str, Any]) -> object:
    found = {gate.name: gate for gate in pipeline.graph["gates"]}.get(attrs["gate"])
    if found is None:
        raise LookupError("the node is part of no declared gate")
    return found


FROM_NODE: Mapping[str, Callable[[Dag, str, Mapping[str, Any]], object]] = {
    "name": lambda pipeline, name, attrs: name,
    "node": lambda pipeline, name, attrs: attrs,
    "stage": _stage,
    "gate": _gate,
}
"""What a node declares, by parameter name: bound once, when the table is built."""


def bind(pipeline: Dag, chosen: Mapping[str, Callable[..., object]]) -> dict[str, Handler]:
    """node name -> its handler (``chosen``), with each parameter bound to the collaborator
    or node attribute it names. Every problem found is raised at once, as a GraphError."""
    table: dict[str, Handler] = {}
    problems: list[str] = []
    for name, handler in chosen.items():
        attrs = pipeline.nodes[name]
        fixed: dict[str, object] = {}
        wanted: list[tuple[str, Callable[[Run], object]]] = []
        for parameter in inspect.signature(handler).parameters:
            if parameter in FROM_RUN:
                wanted.append((parameter, FROM_RUN[parameter]))
            elif parameter in FROM_NODE:
                try:
                    fixed[parameter] = FROM_NODE[parameter](pipeline, name, attrs)
                except LookupError as exc:
                    problems.append(f"node {name}: {handler.__name__} asks for '{parameter}', but {exc}")
            else:
                problems.append(f"node {name}: {handler.__name__} asks for '{parameter}', which is neither a "
                                f"collaborator ({', '.join(FROM_RUN)}) nor a node's ({', '.join(FROM_NODE)})")
        table[name] = _bound(handler, fixed, tuple(wanted), _label(handler, fixed))
    if problems:
        raise GraphError("the pipeline's handlers cannot be bound: " + "; ".join(problems))
    return table


def _label(handler: Callable[..., object], fixed: Mapping[str, object]) -> str:
    """``ask[design]``: the handler, and what its node bound it to (a stage, a gate, a router)."""
    what = next((fixed[key] for key in ("stage", "gate") if key in fixed), None)
    if what is None and "node" in fixed:
        node = fixed["node"]
        assert isinstance(node, Mapping)
        what = node["gate"] or ",".join(node["requires"]) or node["phase"] or None
    if what is None and "name" in fixed:
        what = fixed["name"]
    if what is None:
        return handler.__name__
    return f"{handler.__name__}[{getattr(what, 'name', what)}]"


def _bound(handler: Callable[..., object], fixed: Mapping[str, object],
           wanted: tuple[tuple[str, Callable[[Run], object]], ...], label: str) -> Handler:
    def run_node(run: Run) -> object:
        return handler(**fixed, **{parameter: get(run) for parameter, get in wanted})

    run_node.__name__ = label
    run_node.__wrapped__ = handler  # type: ignore[attr-defined]  # what it binds, for inspection
    return run_node
