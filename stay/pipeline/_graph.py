"""The pipeline as one graph, built from declarations.

The runner walks this graph; it is not a drawing of some other code path. Loops
(one planning call per module, bounded repair rounds) live inside a node, so the
graph is a DAG, and its properties can be proven with no model, key or course.

The runner holds it as a ``Dag`` (``_dag``: the operations a walk needs, without importing
networkx); ``graph()`` and ``build()`` give it as a ``networkx.DiGraph``, node for node
and edge for edge, for proofs, drawings and ``stay graph``. ``problems`` takes either,
as do the walks (``_walk``: the order a command runs its nodes in).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from stay.errors import GraphError
from stay.pipeline._dag import Dag, ancestors, descendants, has_path, is_acyclic, to_networkx
from stay.pipeline._gate_decl import GATED, GATES, GateDecl, needed_before
from stay.pipeline._walk import as_dag, route
from stay.stages import REGISTRY, Prompts, Stage, checked_references

if TYPE_CHECKING:
    import networkx as nx

KINDS = ("entry", "router", "guard", "stage", "gate-summary", "gate-ask", "gate-record", "wave",
         "barrier", "review", "mechanical", "validate", "repair", "revise")

AFTER_GATES = ("wave", "review", "finish", "repair", "revise")
"""The phases after every gate: the wave, its review, what follows them, and revise's own nodes."""
PHASES = (*GATED, *AFTER_GATES)
"""What a stage or mechanical node authors (a declaration with other gates has its own,
``PipelineDecl.phases``). A command names the phases it may write; in the others its
nodes only check that what is on disk is current."""


@dataclass(frozen=True)
class NodeDecl:
    name: str
    kind: str
    writes: bool
    stages: tuple[str, ...] = ()
    """The stages whose requests this node makes (role and references come from them)."""
    doc: str = ""
    phase: str = ""
    """The phase this node authors (PHASES), for stage, wave, mechanical and repair nodes."""
    requires: tuple[str, ...] = ()
    """For a guard (and repair): the gates whose approvals must hold before it goes on."""
    requires_by_phase: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """For a guard whose command writes in any phase (revise): per phase of what it is
    asked to write, the gates whose approvals must hold."""
    gate: str = ""
    """For a gate node: the gate it is part of (``_gate_decl.GATES``)."""
    default: str = ""
    """For a router: the successor a command that names no other goes on to."""


@dataclass(frozen=True)
class CommandDecl:
    """Where a command joins the graph, where it stops, and what it may write."""

    entry: str
    """The node choose_entry routes it to: intake, or a guard."""
    last: str
    """The last node it runs; a gate-summary here means the command stops at that gate."""
    authors: tuple[str, ...]
    """The phases whose artefacts it may (re)generate; elsewhere it only checks."""
    doc: str = ""
    routes: tuple[tuple[str, str], ...] = ()
    """Router -> the successor it sends this command to, where not the router's default
    (choose_entry always sends a command to its ``entry``)."""


@dataclass(frozen=True)
class PipelineDecl:
    nodes: tuple[NodeDecl, ...]
    edges: tuple[tuple[str, str], ...]
    commands: Mapping[str, CommandDecl] = field(default_factory=dict)
    stages: tuple[Stage, ...] = REGISTRY
    gates: tuple[GateDecl, ...] = GATES

    @property
    def entries(self) -> dict[str, str]:
        """Command -> the node it joins at (a successor of choose_entry)."""
        return {name: command.entry for name, command in self.commands.items()}

    @property
    def phases(self) -> tuple[str, ...]:
        """The phases each gate closes, in order, then those after every gate."""
        return (*(gate.closes for gate in self.gates), *AFTER_GATES)


GUARDS = ("require_design", "require_gates", "repair_seed", "revise_seed")


def declare(stages: Sequence[Stage] = REGISTRY, gates: Sequence[GateDecl] = GATES) -> PipelineDecl:
    """The pipeline's declaration, its stage and gate nodes derived from the stage and
    gate declarations: each gate follows the nodes of the phase it closes (a design
    stage's node on the spine in registry order, then the design gate; each planning
    stage's, then the plan gate), the lesson-scope wave stages share ``write_lesson``,
    and each course-scope wave stage has its own ``write_<name>`` beside it. What a
    guard requires is derived from where its command writes: the gates before it."""
    by_node: dict[str, list[Stage]] = {}
    for stage in stages:
        by_node.setdefault(stage.node_name, []).append(stage)

    def nodes_of(phase: str) -> list[NodeDecl]:
        found = []
        for node, members in by_node.items():
            if members[0].phase == phase:
                kind = phase if phase in ("wave", "review") else "stage"
                found.append(NodeDecl(node, kind, True, tuple(s.name for s in members), phase=phase))
        return found

    names = tuple(gate.name for gate in gates)
    first, plan = gates[0], gates[1] if len(gates) > 1 else gates[0]
    phases = (*(gate.closes for gate in gates), *AFTER_GATES)
    gated = [(gate, nodes_of(gate.closes)) for gate in gates]
    wave = nodes_of("wave")
    reviews = [node.name for node in nodes_of("review")]  # after the barrier: it reads what the wave wrote
    before = ("entry", "choose_entry", "intake", "moderate", "scaffold", "choose_work")
    spine = (*before, *(name for gate, staged in gated for name in (*(n.name for n in staged), *gate.nodes)))
    gate_nodes = {gate.name: (
        NodeDecl(gate.summary, "gate-summary", True, gate=gate.name, doc=f"Writes .state/{gate.name}-gate.md."),
        NodeDecl(gate.ask, "gate-ask", False, gate=gate.name, doc=f"Stops unless the {gate.name} approval holds."),
        NodeDecl(gate.record, "gate-record", True, gate=gate.name, doc="Records an answer (--yes) in gates.json."),
    ) for gate in gates}
    by_phase = tuple((gate.closes, needed_before(gate.closes, gates)) for gate in gates)
    nodes = (
        NodeDecl("entry", "entry", False, doc="Where every run starts."),
        NodeDecl("choose_entry", "router", False, doc="Routes the command to where it joins: intake or a guard."),
        NodeDecl("require_design", "guard", False, requires=needed_before(plan.closes, gates),
                 doc="`plan`: the approvals before the planning stages must hold."),
        NodeDecl("require_gates", "guard", False, requires=names, doc="`write`: every approval must hold."),
        NodeDecl("repair_seed", "guard", False, requires=names,
                 doc="`repair`: an existing course, every approval holding."),
        NodeDecl("revise_seed", "guard", False, requires_by_phase=(*by_phase, ("wave", names),
                                                                       *((("review", names),) if reviews else ())),
                 doc="`revise`: the approvals each target's phase needs (a wave file all, a design file none)."),
        NodeDecl("intake", "mechanical", False, doc="Checks the brief and the slug."),
        NodeDecl("moderate", "guard", False, doc="Screens a brief not screened before, before anything is written."),
        NodeDecl("scaffold", "mechanical", True, phase=first.closes,
                 doc="Creates the course directory and course.yaml."),
        NodeDecl("choose_work", "router", False, default=spine[len(before)],
                 doc="Routes a build along the spine, a revision to its own nodes."),
        *(node for gate, staged in gated for node in (*staged, *gate_nodes[gate.name])),
        *wave,
        NodeDecl("gather", "barrier", False, doc="Waits for every wave task (the barrier); reports what the wave did."),
        *nodes_of("review"),
        NodeDecl("merge_glossary", "mechanical", True, phase="finish", doc="glossary.yaml from the plans."),
        NodeDecl("land_manifest", "mechanical", True, phase="finish",
                 doc="Retires files no longer in the curriculum; course.yaml's status projection."),
        NodeDecl("revise_files", "revise", True, phase="revise",
                 doc="Regenerates each named design and plan file with its note, then starts the named wave files."),
        NodeDecl("revise_gather", "barrier", False, doc="Waits for the revised wave files."),
        NodeDecl("validate", "validate", False, doc="The library validator, non-strict."),
        NodeDecl("repair", "repair", True, phase="repair", requires=names, doc="Bounded repair of leaf artefacts."),
    )
    last_record = gates[-1].record
    edges = (
        *itertools.pairwise(spine),
        *(edge for guard in GUARDS for edge in (("choose_entry", guard), (guard, "intake"))),
        *((last_record, node.name) for node in wave),
        *((node.name, "gather") for node in wave),
        *itertools.pairwise(("gather", *reviews, "merge_glossary")), ("merge_glossary", "land_manifest"),
        ("land_manifest", "validate"), ("validate", "repair"),
        ("choose_work", "revise_files"), ("revise_files", "revise_gather"), ("revise_gather", "validate"),
    )
    commands = {
        "new": CommandDecl("intake", first.summary, (first.closes,),
                           "create the course and stop at the design gate"),
        "build": CommandDecl("intake", "repair", tuple(p for p in phases if p != "revise"),
                             "build or resume: design, gate, plans, gate, wave, validate, repair"),
        "plan": CommandDecl("require_design", plan.record, (plan.closes,),
                            "plan every lesson and stop after the plan gate"),
        "write": CommandDecl("require_gates", "repair", ("wave", "review", "finish", "repair"),
                             "lessons, exercises, quizzes and the capstone, then validate and repair"),
        "repair": CommandDecl("repair_seed", "repair", ("review", "repair"),
                              "validate, then repair leaf artefacts in bounded rounds"),
        "revise": CommandDecl("revise_seed", "validate", ("revise",),
                              "regenerate the named artefacts with a reviewer's note, nothing else",
                              routes=(("choose_work", "revise_files"),)),
    }
    return PipelineDecl(nodes=nodes, edges=edges, commands=commands, stages=tuple(stages), gates=tuple(gates))


DECLARATION = declare()
# The guards join before intake, and only revise leaves the spine (at choose_work, for
# nodes that write only what it names): no command reaches the wave or repair around a
# design stage or a gate (topology properties 2 and 3).


def build(declaration: PipelineDecl | None = None, prompts: Prompts | None = None) -> nx.DiGraph[str]:
    """The networkx DiGraph of a declaration (None: stay's own, a default help() can show):
    node attributes kind, writes, stages, role, references (``assemble``'s graph, node for
    node), each stage's references derived from ``prompts`` (None: the packaged prompts/)."""
    declared = DECLARATION if declaration is None else declaration
    return to_networkx(assemble(declared, Prompts.load(None, declared.stages) if prompts is None else prompts))


def assemble(declaration: PipelineDecl = DECLARATION, prompts: Prompts | None = None) -> Dag:
    """The graph of a declaration, as the runner holds it. With ``prompts``, each stage
    node holds the reference set each of its stages reads (``checked_references``: a
    front matter that does not fit the stages is refused here, every problem at once);
    without, none (the handler table needs no prompts)."""
    by_name = {stage.name: stage for stage in declaration.stages}
    sets = checked_references(prompts, declaration.stages) if prompts is not None else {}
    graph = Dag(name="stay pipeline", entries=declaration.entries, commands=dict(declaration.commands),
                stages=by_name, phases=declaration.phases, gates=declaration.gates, reference_sets=sets)
    for order, node in enumerate(declaration.nodes):
        roles = {by_name[stage].role for stage in node.stages}
        graph.add_node(
            node.name, kind=node.kind, writes=node.writes, stages=node.stages, order=order,
            phase=node.phase, requires=node.requires, requires_by_phase=dict(node.requires_by_phase),
            gate=node.gate, default=node.default,
            role=roles.pop() if len(roles) == 1 else (sorted(roles) or None),
            references={stage: sets[stage] for stage in node.stages if stage in sets},
            doc=node.doc or (by_name[node.stages[0]].doc or _first_line(by_name[node.stages[0]])),
        )
    graph.add_edges_from(declaration.edges)
    return graph


def _first_line(stage: Stage) -> str:
    """The first line of the stage module's docstring: what the stage is for."""
    import sys

    module = sys.modules.get(f"stay.stages.{stage.name}")
    doc = (module.__doc__ if module is not None else None) or f"Stage {stage.name}."
    return doc.strip().splitlines()[0]


def problems(given: Dag | nx.DiGraph[str]) -> list[str]:
    """Everything wrong with a pipeline graph, all at once (empty when it is sound)."""
    graph = as_dag(given)
    found: list[str] = []
    for name, attrs in graph.nodes(data=True):
        if attrs.get("kind") not in KINDS:
            found.append(f"node {name} has unknown kind {attrs.get('kind')!r}")
    if not is_acyclic(graph):
        import networkx as nx  # only to name the cycle, as networkx finds it

        found.append(f"the graph has a cycle: {nx.find_cycle(to_networkx(graph))}")
    if "entry" not in graph:
        return [*found, "there is no entry node"]
    reachable = descendants(graph, "entry") | {"entry"}
    for name in sorted(set(graph) - reachable):
        found.append(f"node {name} is unreachable from the entry")
    sinks = [n for n in graph if graph.out_degree(n) == 0]
    if len(sinks) != 1:
        found.append(f"the graph should end in one node, it ends in {sorted(sinks)}")
    found += _command_problems(graph)
    for ask in (n for n, a in graph.nodes(data=True) if a["kind"] == "gate-ask"):
        preds, succs = sorted(graph.predecessors(ask)), sorted(graph.successors(ask))
        if len(preds) != 1 or graph.nodes[preds[0]]["kind"] != "gate-summary":
            found.append(f"{ask} must have exactly one predecessor, its gate's summary; has {preds}")
        if len(succs) != 1 or graph.nodes[succs[0]]["kind"] != "gate-record":
            found.append(f"{ask} must have exactly one successor, its gate's record; has {succs}")
    wave = [n for n, a in graph.nodes(data=True) if a["kind"] == "wave"]
    for node in wave:
        if set(graph.successors(node)) != {"gather"}:
            found.append(f"wave node {node} must lead only to gather, leads to "
                         f"{sorted(graph.successors(node))}")
        gates = [g for g in descendants(graph, node)
                 if graph.nodes[g]["kind"].startswith("gate")]
        if gates:
            found.append(f"gate nodes {sorted(gates)} are reachable from wave node {node}")
    records = [n for n, a in graph.nodes(data=True) if a["kind"] == "gate-record"]
    for record in records:
        cut = graph.copy()
        cut.remove_node(record)
        leaks = [w for w in wave if has_path(cut, "entry", w)]
        if leaks:
            found.append(f"the wave ({sorted(leaks)}) is reachable from the entry without passing "
                         f"{record}")
    if "moderate" in graph and "scaffold" in graph:
        cut = graph.copy()
        cut.remove_node("moderate")
        if has_path(cut, "entry", "scaffold"):
            found.append("scaffold (the first node that writes) is reachable without passing moderate")
    for name, attrs in graph.nodes(data=True):
        if attrs["writes"] and name != "scaffold" and not any(
                graph.nodes[a]["writes"] for a in ancestors(graph, name)):
            found.append(f"{name} writes, and no node that writes comes before it: only scaffold "
                         "may be the first node that writes")
        derived = graph.graph.get("reference_sets", {})
        for stage, refs in attrs.get("references", {}).items():
            if refs != derived.get(stage):
                found.append(f"node {name}'s reference set for {stage} is not the one its front matter derives")
    for before, after in (("gather", "merge_glossary"), ("merge_glossary", "land_manifest"),
                          ("land_manifest", "validate")):
        step = before  # through the review nodes alone, which read what the wave wrote
        while step in graph and [graph.nodes[n]["kind"] for n in graph.successors(step)] == ["review"]:
            step = next(iter(graph.successors(step)))
        if before in graph and after in graph and not graph.has_edge(step, after):
            found.append(f"{before} must lead directly to {after} (through the review, if any)")
    return found


def _command_problems(graph: Dag) -> list[str]:
    """Each command joins at choose_entry's successor, intake or a guard, and stops at a
    node after it; a command joining at a guard authors only what lies after the gate
    records its guard requires (the guard re-checks, each run, what they recorded)."""
    found: list[str] = []
    records = {a["gate"]: n for n, a in graph.nodes(data=True) if a["kind"] == "gate-record"}
    for name, command in graph.graph.get("commands", {}).items():
        entry, last = command.entry, command.last
        if entry not in graph or not graph.has_edge("choose_entry", entry):
            found.append(f"command {name} joins at {entry}, which choose_entry does not lead to")
            continue
        if entry != "intake" and graph.nodes[entry]["kind"] != "guard":
            found.append(f"command {name} joins at {entry}, which is neither intake nor a guard")
        if last not in graph or not (last == entry or has_path(graph, entry, last)):
            found.append(f"command {name} stops at {last}, which does not follow its entry {entry}")
            continue
        unknown = set(command.authors) - set(graph.graph.get("phases", PHASES))
        if unknown:
            found.append(f"command {name} authors unknown phases {sorted(unknown)}")
        if graph.nodes[entry]["kind"] != "guard":
            continue
        required = {records[g] for g in graph.nodes[entry].get("requires", ()) if g in records}
        span = (descendants(graph, entry) & (ancestors(graph, last) | {last}))
        for node in sorted(span):
            if graph.nodes[node].get("phase") not in command.authors:
                continue
            needed = {a for a in ancestors(graph, node) if graph.nodes[a]["kind"] == "gate-record"}
            if not needed <= required:
                found.append(f"command {name} authors {node} after {sorted(needed - required)}, which its "
                             f"guard {entry} does not require")
    for name, attrs in graph.nodes(data=True):
        before = {a for a in ancestors(graph, name) if graph.nodes[a]["kind"] == "gate-record"}
        if attrs["kind"] != "guard" and attrs.get("requires") and \
                {records.get(g) for g in attrs["requires"]} != before:
            found.append(f"{name} requires {list(attrs['requires'])}, but the gate records before it are "
                         f"{sorted(before)}")
        if attrs["kind"] == "router":
            routes = {route(graph, command, name) for command in graph.graph.get("commands", {})}
            strays = sorted(r for r in routes if not graph.has_edge(name, r))
            if strays:
                found.append(f"router {name} would send a command to {strays}, which it does not lead to")
    for guard, attrs in graph.nodes(data=True):
        if attrs["kind"] != "guard" or not (attrs.get("requires") or attrs.get("requires_by_phase")):
            continue
        if list(graph.successors(guard)) != ["intake"]:
            found.append(f"guard {guard} must lead only to intake, so its command walks the whole spine")
        for phase, gates in attrs.get("requires_by_phase", {}).items():
            nodes = [n for n, a in graph.nodes(data=True) if a.get("phase") == phase and a["kind"] != "mechanical"]
            needed = {a for n in nodes for a in ancestors(graph, n) if graph.nodes[a]["kind"] == "gate-record"}
            if needed != {records[g] for g in gates if g in records}:
                found.append(f"guard {guard} requires {list(gates)} for a {phase} file, but the gate records "
                             f"before that phase are {sorted(needed)}")
    return found


def checked(graph: Dag) -> Dag:
    """``graph`` if it is sound, else a GraphError listing every problem at once."""
    found = problems(graph)
    if found:
        raise GraphError("the pipeline graph is unsound:\n- " + "\n- ".join(found))
    return graph


@cache
def _checked() -> Dag:
    return checked(assemble(DECLARATION, Prompts.load()))


def graph(prompts: Prompts | None = None) -> nx.DiGraph[str]:
    """The whole pipeline as a networkx DiGraph, checked when built (every problem
    reported at once), each stage's references derived from ``prompts`` (None: the
    packaged prompts/). A copy (``DiGraph.copy``, as it always was): the runner's own graph
    cannot be changed through it."""
    return to_networkx(_checked() if prompts is None else checked(assemble(DECLARATION, prompts))).copy()
