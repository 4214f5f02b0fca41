"""The pipeline as one networkx DiGraph, built from declarations.

The runner walks this graph; it is not a drawing of some other code path. Loops
(one planning call per module, bounded repair rounds) live inside a node, so the
graph is a DAG, and its properties can be proven with no model, key or course.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

import networkx as nx

from stay.errors import GraphError
from stay.stages import STAGES

KINDS = ("entry", "router", "guard", "stage", "gate-summary", "gate-ask", "gate-record", "wave",
         "barrier", "mechanical", "validate", "repair")


@dataclass(frozen=True)
class NodeDecl:
    name: str
    kind: str
    writes: bool
    stages: tuple[str, ...] = ()
    """The stages whose requests this node makes (role and references come from them)."""
    doc: str = ""


@dataclass(frozen=True)
class PipelineDecl:
    nodes: tuple[NodeDecl, ...]
    edges: tuple[tuple[str, str], ...]
    entries: Mapping[str, str] = field(default_factory=dict)
    """Command -> the node it joins the spine at (choose_entry's successors)."""


SPINE = (
    "entry", "choose_entry", "intake", "moderate", "scaffold", "audience", "curriculum",
    "outcomes", "assessment", "design_summary", "design_ask", "design_record", "plan_modules",
    "plan_summary", "plan_ask", "plan_record",
)

DECLARATION = PipelineDecl(
    nodes=(
        NodeDecl("entry", "entry", False, doc="Where every run starts."),
        NodeDecl("choose_entry", "router", False, doc="Picks where the command joins the spine."),
        NodeDecl("intake", "mechanical", False, doc="Checks the brief and the slug."),
        NodeDecl("moderate", "guard", False, doc="Screens the whole brief before anything is written."),
        NodeDecl("scaffold", "mechanical", True, doc="Creates the course directory and course.yaml."),
        NodeDecl("audience", "stage", True, ("audience",)),
        NodeDecl("curriculum", "stage", True, ("curriculum",)),
        NodeDecl("outcomes", "stage", True, ("outcomes",)),
        NodeDecl("assessment", "stage", True, ("assessment",)),
        NodeDecl("design_summary", "gate-summary", True, doc="Writes .state/design-gate.md."),
        NodeDecl("design_ask", "gate-ask", False, doc="Stops unless the design approval holds."),
        NodeDecl("design_record", "gate-record", True, doc="Records an answer (--yes) in gates.json."),
        NodeDecl("require_design", "guard", False, doc="`plan`: requires a holding design approval."),
        NodeDecl("plan_modules", "stage", True, ("plan",), doc="One planning call per module."),
        NodeDecl("plan_summary", "gate-summary", True, doc="Writes .state/plan-gate.md."),
        NodeDecl("plan_ask", "gate-ask", False, doc="Stops unless the plan approval holds."),
        NodeDecl("plan_record", "gate-record", True, doc="Records an answer (--yes) in gates.json."),
        NodeDecl("require_gates", "guard", False, doc="`write`: requires both approvals to hold."),
        NodeDecl("write_lesson", "wave", True, ("content", "exercises", "quiz"),
                 doc="Per lesson: content, exercises and quiz."),
        NodeDecl("write_capstone", "wave", True, ("capstone",), doc="The capstone, beside the lessons."),
        NodeDecl("gather", "barrier", False, doc="Runs once, after every wave task."),
        NodeDecl("merge_glossary", "mechanical", True, doc="glossary.yaml from the plans."),
        NodeDecl("land_manifest", "mechanical", True, doc="course.yaml's status projection."),
        NodeDecl("validate", "validate", False, doc="The library validator, non-strict."),
        NodeDecl("repair_seed", "guard", False, doc="`repair`: requires an existing course."),
        NodeDecl("repair", "repair", True, doc="Bounded repair of leaf artefacts."),
    ),
    edges=(
        *itertools.pairwise(SPINE),
        ("choose_entry", "require_design"), ("require_design", "design_record"),
        ("choose_entry", "require_gates"), ("require_gates", "design_record"),
        ("choose_entry", "repair_seed"), ("repair_seed", "validate"),
        ("plan_record", "write_lesson"), ("plan_record", "write_capstone"),
        ("write_lesson", "gather"), ("write_capstone", "gather"),
        ("gather", "merge_glossary"), ("merge_glossary", "land_manifest"),
        ("land_manifest", "validate"), ("validate", "repair"),
    ),
    entries={"new": "intake", "build": "intake", "plan": "require_design",
             "write": "require_gates", "repair": "repair_seed"},
)
# choose_entry -> intake is part of the spine above.


def build(declaration: PipelineDecl = DECLARATION) -> nx.DiGraph[str]:
    """The DiGraph of a declaration: node attributes kind, writes, stages, role, references."""
    graph: nx.DiGraph[str] = nx.DiGraph(name="stay pipeline", entries=dict(declaration.entries))
    for order, node in enumerate(declaration.nodes):
        roles = {STAGES[stage].ROLE for stage in node.stages}
        graph.add_node(
            node.name, kind=node.kind, writes=node.writes, stages=node.stages, order=order,
            role=roles.pop() if len(roles) == 1 else (sorted(roles) or None),
            references={stage: STAGES[stage].REFERENCES for stage in node.stages},
            doc=node.doc or (STAGES[node.stages[0]].__doc__ or "").strip().splitlines()[0],
        )
    graph.add_edges_from(declaration.edges)
    return graph


def problems(graph: nx.DiGraph[str]) -> list[str]:
    """Everything wrong with a pipeline graph, all at once (empty when it is sound)."""
    found: list[str] = []
    for name, attrs in graph.nodes(data=True):
        if attrs.get("kind") not in KINDS:
            found.append(f"node {name} has unknown kind {attrs.get('kind')!r}")
    if not nx.is_directed_acyclic_graph(graph):
        found.append(f"the graph has a cycle: {nx.find_cycle(graph)}")
    if "entry" not in graph:
        return [*found, "there is no entry node"]
    reachable = nx.descendants(graph, "entry") | {"entry"}
    for name in sorted(set(graph) - reachable):
        found.append(f"node {name} is unreachable from the entry")
    sinks = [n for n in graph if graph.out_degree(n) == 0]
    if len(sinks) != 1:
        found.append(f"the graph should end in one node, it ends in {sorted(sinks)}")
    for name, command in ((v, k) for k, v in graph.graph.get("entries", {}).items()):
        if not graph.has_edge("choose_entry", name):
            found.append(f"command {command} joins at {name}, which choose_entry does not lead to")
    for ask in (n for n, a in graph.nodes(data=True) if a["kind"] == "gate-ask"):
        preds, succs = list(graph.predecessors(ask)), list(graph.successors(ask))
        if len(preds) != 1 or graph.nodes[preds[0]]["kind"] != "gate-summary":
            found.append(f"{ask} must have exactly one predecessor, its gate's summary; has {preds}")
        if len(succs) != 1 or graph.nodes[succs[0]]["kind"] != "gate-record":
            found.append(f"{ask} must have exactly one successor, its gate's record; has {succs}")
    wave = [n for n, a in graph.nodes(data=True) if a["kind"] == "wave"]
    for node in wave:
        if set(graph.successors(node)) != {"gather"}:
            found.append(f"wave node {node} must lead only to gather, leads to "
                         f"{sorted(graph.successors(node))}")
        gates = [g for g in nx.descendants(graph, node)
                 if graph.nodes[g]["kind"].startswith("gate")]
        if gates:
            found.append(f"gate nodes {sorted(gates)} are reachable from wave node {node}")
    records = [n for n, a in graph.nodes(data=True) if a["kind"] == "gate-record"]
    for record in records:
        cut = graph.copy()
        cut.remove_node(record)
        leaks = [w for w in wave if nx.has_path(cut, "entry", w)]
        if leaks:
            found.append(f"the wave ({sorted(leaks)}) is reachable from the entry without passing "
                         f"{record}")
    if "moderate" in graph and "scaffold" in graph:
        cut = graph.copy()
        cut.remove_node("moderate")
        if nx.has_path(cut, "entry", "scaffold"):
            found.append("scaffold (the first node that writes) is reachable without passing moderate")
    for name, attrs in graph.nodes(data=True):
        if attrs["writes"] and name != "scaffold" and not any(
                graph.nodes[a]["writes"] for a in nx.ancestors(graph, name)):
            found.append(f"{name} writes, and no node that writes comes before it: only scaffold "
                         "may be the first node that writes")
        for stage, refs in attrs.get("references", {}).items():
            if refs is not STAGES[stage].REFERENCES:
                found.append(f"node {name}'s reference set for {stage} is not the stage's constant")
    for before, after in (("gather", "merge_glossary"), ("merge_glossary", "land_manifest"),
                          ("land_manifest", "validate")):
        if before in graph and after in graph and not graph.has_edge(before, after):
            found.append(f"{before} must lead directly to {after}")
    return found


@cache
def _checked() -> nx.DiGraph[str]:
    graph = build()
    found = problems(graph)
    if found:
        raise GraphError("the pipeline graph is unsound:\n- " + "\n- ".join(found))
    return graph


def graph() -> nx.DiGraph[str]:
    """The whole pipeline, checked when built (every problem reported at once). A copy:
    the runner's own graph cannot be changed through it."""
    return _checked().copy()


def walk_order(graph: nx.DiGraph[str], start: str) -> list[str]:
    """``start`` and every node after it, in a topological order that follows the
    declaration where the graph leaves a choice."""
    reachable = nx.descendants(graph, start) | {start}
    sub = graph.subgraph(reachable)
    return list(nx.lexicographical_topological_sort(sub, key=lambda n: graph.nodes[n]["order"]))
