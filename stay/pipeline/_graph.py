"""The command graph of stage nodes, its gates and the walk over it; and a course's artefact graph."""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from graphlib import CycleError, TopologicalSorter
from typing import TYPE_CHECKING, Any

from stay._display import markdown_table, markdown_text, plural
from stay.artefacts import Artefact, Assessment, Audience, Curriculum, LessonPlan, Outcomes
from stay.errors import ArtefactError, GraphError
from stay.pipeline._layout import BRIEF, GLOSSARY, CourseLayout, direct_inputs
from stay.stages import REGISTRY, Prompts, Stage, checked_references
from stay.validate import Defect, Severity

if TYPE_CHECKING:
    import networkx as nx


class Dag:
    """A directed graph with attribute dicts: the part of ``networkx.DiGraph``'s interface the pipeline reads."""

    __slots__ = ("_added", "_pred", "_succ", "graph", "nodes")

    def __init__(self, **attrs: Any) -> None:
        self.graph: dict[str, Any] = dict(attrs)
        self.nodes = NodeView()
        self._succ: dict[str, dict[str, None]] = {}
        self._pred: dict[str, dict[str, None]] = {}
        self._added: dict[tuple[str, str], None] = {}
        """Every edge in the order added: neighbours keep this order, and ``to_networkx`` too."""

    def add_node(self, node: str, **attrs: Any) -> None:
        self.nodes.setdefault(node, {}).update(attrs)
        self._succ.setdefault(node, {})
        self._pred.setdefault(node, {})

    def add_edge(self, source: str, target: str) -> None:
        for node in (source, target):
            self.add_node(node)
        self._succ[source][target] = None
        self._pred[target][source] = None
        self._added[(source, target)] = None

    def add_edges_from(self, edges: Iterable[tuple[str, str]]) -> None:
        for source, target in edges:
            self.add_edge(source, target)

    @property
    def edges(self) -> list[tuple[str, str]]:
        return [(source, target) for source, targets in self._succ.items() for target in targets]

    def __contains__(self, node: object) -> bool:
        return node in self.nodes

    def __iter__(self) -> Iterator[str]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def successors(self, node: str) -> Iterator[str]:
        return iter(self._succ[node])

    def predecessors(self, node: str) -> Iterator[str]:
        return iter(self._pred[node])

    def has_edge(self, source: str, target: str) -> bool:
        return source in self._succ and target in self._succ[source]

    def out_degree(self, node: str) -> int:
        return len(self._succ[node])


class NodeView(dict[str, dict[str, Any]]):
    """``graph.nodes``: ``nodes[n]`` is n's attribute dict; ``nodes(data=True)`` its pairs."""

    def __call__(self, data: bool = False) -> Iterator[Any]:
        return iter(self.items()) if data else iter(self)


def descendants(graph: Dag, source: str) -> set[str]:
    """Every node reachable from ``source``, ``source`` excluded (``networkx.descendants``)."""
    return _reach(graph._succ, source)


def ancestors(graph: Dag, target: str) -> set[str]:
    """Every node that reaches ``target``, ``target`` excluded (``networkx.ancestors``)."""
    return _reach(graph._pred, target)


def _reach(adjacency: dict[str, dict[str, None]], start: str, avoiding: str | None = None) -> set[str]:
    if start not in adjacency:
        raise KeyError(start)
    seen: set[str] = set()
    stack = [start]
    while stack:
        for neighbour in adjacency[stack.pop()]:
            if neighbour not in seen and neighbour != avoiding:
                seen.add(neighbour)
                stack.append(neighbour)
    seen.discard(start)
    return seen


def has_path(graph: Dag, source: str, target: str, avoiding: str | None = None) -> bool:
    """Whether ``target`` is ``source`` or reachable from it (``networkx.has_path``), never through
    ``avoiding`` (as on the graph without that node)."""
    return source == target or target in _reach(graph._succ, source, avoiding)


def _sorter(graph: Dag, nodes: Collection[str] | None = None) -> TopologicalSorter[str]:
    """Over ``nodes`` (None: all) and the edges between them."""
    sorter = TopologicalSorter({node: [s for s in sources if nodes is None or s in nodes]
                                for node, sources in graph._pred.items() if nodes is None or node in nodes})
    sorter.prepare()  # CycleError: some node can never be placed
    return sorter


def is_acyclic(graph: Dag) -> bool:
    """``networkx.is_directed_acyclic_graph``: every node can be put in an order."""
    try:
        _sorter(graph)
    except CycleError:
        return False
    return True


def topological_order(graph: Dag, key: Callable[[str], Hashable], nodes: Collection[str] | None = None) -> list[str]:
    """``networkx.lexicographical_topological_sort`` (of the subgraph of ``nodes``): of the ready nodes, the
    smallest ``key`` (then the first)."""
    try:
        sorter = _sorter(graph, nodes)
    except CycleError as exc:
        raise ValueError("the graph has a cycle; it has no topological order") from exc
    index = {node: position for position, node in enumerate(graph)}
    ready: list[tuple[Hashable, int, str]] = []
    order: list[str] = []
    while sorter.is_active():
        for node in sorter.get_ready():
            heapq.heappush(ready, (key(node), index[node], node))
        order.append(heapq.heappop(ready)[2])
        sorter.done(order[-1])
    return order


def to_networkx(graph: Dag) -> nx.DiGraph[str]:
    """The same graph as a ``networkx.DiGraph``: attributes, node order and edge order kept."""
    import networkx as nx

    result: nx.DiGraph[str] = nx.DiGraph(**graph.graph)
    result.add_nodes_from(graph.nodes(data=True))
    result.add_edges_from(graph._added)
    return result


LISTED = 10
"""Defects a gate page lists one a line; the rest are counted."""

_BLOCK_START = re.compile(r"^(\d{1,9}(?=[.)])|(?=[#+=-]))")
"""Where a line would open a block: before a list, heading or rule marker, or after an ordered list's number."""


def _lead(value: object) -> str:
    """Text that opens a list item: inline markup escaped, and its block marker too."""
    return _BLOCK_START.sub(lambda match: match.group(1) + "\\", markdown_text(value), count=1)


def _heading(value: object) -> str:
    """Text inside a heading: a ``#`` in it could close the heading, so each is escaped."""
    return markdown_text(value).replace("#", "\\#")


def time_lines(curriculum: Curriculum, audience: Audience | None) -> list[str]:
    """How big the course is, against the audience's budget when it is known."""
    total = sum(lesson.minutes for module in curriculum.modules for lesson in module.lessons)
    lessons = sum(len(module.lessons) for module in curriculum.modules)
    said = f"{plural(len(curriculum.modules), 'module')}, {plural(lessons, 'lesson')}, {total} minutes"
    if audience is not None:
        budget = audience.time_budget_minutes
        said += f" against a budget of {budget} ({round(100 * total / budget)}%)"
    return [said + "."]


def curriculum_lines(curriculum: Curriculum, audience: Audience | None) -> list[str]:
    """The curriculum as one table: a module's id and title on its first lesson's row."""
    rows = [(f"{module.id} {module.title}" if index == 0 else "", lesson.id, lesson.title, lesson.minutes)
            for module in curriculum.modules for index, lesson in enumerate(module.lessons)]
    lines = ["## Curriculum", "", *time_lines(curriculum, audience), ""]
    return lines + markdown_table(("Module", "Lesson", "Title", "Minutes"), rows, numeric={3}).splitlines()


def outcome_lines(outcomes: Outcomes, assessment: Assessment | None) -> list[str]:
    """Every outcome with its level, verb and (once assessed) the methods that evidence it."""
    methods = {evidence.outcome: evidence.methods for evidence in assessment.evidence} if assessment else {}
    lines = ["## Outcomes", ""]
    for outcome in outcomes.outcomes:
        evidence = methods.get(outcome.id)
        said = f"; evidence: {', '.join(evidence)}" if evidence else ""
        lines.append(f"- {_lead(outcome.id)} ({markdown_text(outcome.bloom)}, verb "
                     f"{markdown_text(outcome.verb)}{said}): {markdown_text(outcome.text)}")
    return lines if outcomes.outcomes else [*lines, "No outcomes."]


def capstone_outcomes(assessment: Assessment) -> list[str]:
    """The outcomes the capstone gathers evidence of, in the assessment's order."""
    return [evidence.outcome for evidence in assessment.evidence if "capstone" in evidence.methods]


def assessment_lines(assessment: Assessment, outcomes: Outcomes | None) -> list[str]:
    """The strategy, then the outcomes the capstone gathers evidence of."""
    texts = {outcome.id: outcome.text for outcome in outcomes.outcomes} if outcomes else {}
    capstone = capstone_outcomes(assessment)
    lines = ["## Assessment", "", f"Strategy: {markdown_text(assessment.strategy)}", "",
             f"Capstone outcomes ({len(capstone)}):", ""]
    return lines + ([f"- {_lead(outcome)}" + (f": {markdown_text(texts[outcome])}" if outcome in texts else "")
                     for outcome in capstone] or ["- none: no outcome names the capstone as its evidence"])


def plan_lines(curriculum: Curriculum, plans: Mapping[str, LessonPlan]) -> list[str]:
    """Each lesson's plan: its minutes, its sections as a table, and its new terms."""
    lines = ["## Lesson plans"]
    for module in curriculum.modules:
        for lesson in module.lessons:
            plan = plans.get(lesson.id)
            lines += ["", f"### {_heading(lesson.id)}: {_heading(plan.title if plan else lesson.title)}", ""]
            if plan is None:
                lines.append("Not planned yet.")
                continue
            lines += [f"{plan.minutes} minutes; outcomes: {markdown_text(', '.join(plan.outcomes)) or 'none'}.", ""]
            lines += markdown_table(("Section", "Kind", "Minutes"),
                                    [(s.heading, s.kind, s.minutes) for s in plan.sections], numeric={2}).splitlines()
            lines += ["", "New terms:" if plan.new_terms else "New terms: none."]
            lines += [f"- {_lead(term.term)}: {markdown_text(term.definition)}" for term in plan.new_terms]
    return lines


def defect_lines(defects: Sequence[Defect], *, refused: bool) -> list[str]:
    """What the validator still finds in the gate's files, FAILs first, bounded; ``refused``: an unsigned FAIL."""
    fails = sum(defect.severity == Severity.FAIL for defect in defects)
    lines = ["## Defects", ""]
    if not defects:
        return [*lines, "The validator finds no defect in the files this gate covers."]
    lines += [f"{fails} FAIL, {len(defects) - fails} WARN in the files this gate covers"
              + (" (`--yes` does not approve the gate while one no person has signed remains):" if refused
                 else ":"), ""]
    return lines + [f"- {markdown_text(line)}" for line in bounded(defects)]


def bounded(defects: Sequence[Defect]) -> list[str]:
    """One line per defect, FAILs first, at most ``LISTED``, then how many more."""
    ordered = sorted(defects, key=lambda defect: defect.severity != Severity.FAIL)  # stable: report order kept
    lines = [defect.line() for defect in ordered[:LISTED]]
    if len(ordered) > LISTED:
        lines.append(f"and {len(ordered) - LISTED} more")
    return lines


@dataclass(frozen=True)
class GateView:
    """What a gate page shows, as the course holds it now (None while not written)."""

    curriculum: Curriculum | None
    audience: Audience | None
    outcomes: Outcomes | None
    assessment: Assessment | None
    plans: Callable[[], Mapping[str, LessonPlan]]
    """Every plan on disk; a call, so a page that shows none reads none."""


def design_page(view: GateView) -> list[str]:
    """The design gate: the curriculum against the time budget, the outcomes, the assessment."""
    lines: list[str] = []
    if view.curriculum is not None:
        lines += [*curriculum_lines(view.curriculum, view.audience), ""]
    if view.outcomes is not None:
        lines += [*outcome_lines(view.outcomes, view.assessment), ""]
    if view.assessment is not None:
        lines += [*assessment_lines(view.assessment, view.outcomes), ""]
    return lines


def plan_page(view: GateView) -> list[str]:
    """The plan gate: the course's size against the budget, and every lesson's plan."""
    if view.curriculum is None:
        return []
    return ["## Time", "", *time_lines(view.curriculum, view.audience), "",
            *plan_lines(view.curriculum, view.plans()), ""]


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


def earlier(name: str, gates: Sequence[GateDecl] = GATES) -> tuple[str, ...]:
    """The gates a course passes before gate ``name``."""
    names = tuple(gate.name for gate in gates)
    return names[:names.index(name)]


def covered_phases(name: str, gates: Sequence[GateDecl] = GATES) -> tuple[str, ...]:
    """The phases whose files gate ``name`` covers: its own and every earlier gate's."""
    return tuple(gate.closes for gate in gates[:len(earlier(name, gates)) + 1])


def needed_before(phase: str, gates: Sequence[GateDecl] = GATES) -> tuple[str, ...]:
    """The gates that must hold before a file of ``phase`` is written: every gate closing an earlier phase."""
    closes = [gate.closes for gate in gates]
    return tuple(gate.name for gate in gates[:closes.index(phase) if phase in closes else len(gates)])


KINDS = ("entry", "router", "guard", "stage", "gate-summary", "gate-ask", "gate-record", "wave",
         "barrier", "review", "mechanical", "validate", "repair", "revise")

AFTER_GATES = ("wave", "review", "finish", "repair", "revise")
"""The phases after every gate: the wave, its review, what follows them, and revise's own nodes."""
PHASES = (*GATED, *AFTER_GATES)
"""What a stage or mechanical node authors; in phases a command does not write, its nodes only check."""


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
    """For revise's guard: per phase it may write, the gates whose approvals must hold."""
    gate: str = ""
    """For a gate node: the gate it is part of (``GATES``)."""
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
    """Router -> the successor it sends this command to, where not its default."""


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
    """The pipeline's declaration, its stage and gate nodes derived from the stages and gates
    (docs/pipeline.md, "The graph"); a guard requires the gates before where its command writes."""
    by_node: dict[str, list[Stage]] = {}
    for stage in stages:
        by_node.setdefault(stage.node_name, []).append(stage)

    def nodes_of(phase: str) -> list[NodeDecl]:
        kind = phase if phase in ("wave", "review") else "stage"
        return [NodeDecl(node, kind, True, tuple(s.name for s in members), phase=phase)
                for node, members in by_node.items() if members[0].phase == phase]

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
    """The networkx DiGraph of a declaration (None: stay's own), node for node ``assemble``'s graph."""
    declared = DECLARATION if declaration is None else declaration
    return to_networkx(assemble(declared, Prompts.load(None, declared.stages) if prompts is None else prompts))


def assemble(declaration: PipelineDecl = DECLARATION, prompts: Prompts | None = None) -> Dag:
    """The graph of a declaration, as the runner holds it; with ``prompts``, each stage node holds the
    references its stages read (a front matter that does not fit is refused here)."""
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
    found = [f"node {name} has unknown kind {attrs.get('kind')!r}" for name, attrs in graph.nodes(data=True)
             if attrs.get("kind") not in KINDS]
    if not is_acyclic(graph):
        import networkx as nx  # only to name the cycle, as networkx finds it

        found.append(f"the graph has a cycle: {nx.find_cycle(to_networkx(graph))}")
    if "entry" not in graph:
        return [*found, "there is no entry node"]
    reachable = descendants(graph, "entry") | {"entry"}
    found += [f"node {name} is unreachable from the entry" for name in sorted(set(graph) - reachable)]
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
        leaks = [w for w in wave if has_path(graph, "entry", w, avoiding=record)]
        if leaks:
            found.append(f"the wave ({sorted(leaks)}) is reachable from the entry without passing "
                         f"{record}")
    if "moderate" in graph and "scaffold" in graph and has_path(graph, "entry", "scaffold", avoiding="moderate"):
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
    for before, after in itertools.pairwise(("gather", "merge_glossary", "land_manifest", "validate")):
        step = before  # through the review nodes alone, which read what the wave wrote
        while step in graph and [graph.nodes[n]["kind"] for n in graph.successors(step)] == ["review"]:
            step = next(iter(graph.successors(step)))
        if before in graph and after in graph and not graph.has_edge(step, after):
            found.append(f"{before} must lead directly to {after} (through the review, if any)")
    return found


def _command_problems(graph: Dag) -> list[str]:
    """Each command joins at intake or a guard and stops after it; one joining at a guard authors only
    what lies after the gates its guard requires."""
    found: list[str] = []
    records = {a["gate"]: n for n, a in graph.nodes(data=True) if a["kind"] == "gate-record"}
    for name, command in graph.graph.get("commands", {}).items():
        entry, last = command.entry, command.last
        if entry not in graph or not graph.has_edge("choose_entry", entry):
            found.append(f"command {name} joins at {entry}, which choose_entry does not lead to")
            continue
        if entry != "intake" and graph.nodes[entry]["kind"] != "guard":
            found.append(f"command {name} joins at {entry}, which is neither intake nor a guard")
        if last not in graph or not has_path(graph, entry, last):
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
    """The whole pipeline as a checked networkx DiGraph: a copy, so the runner's own cannot be changed."""
    return to_networkx(_checked() if prompts is None else checked(assemble(DECLARATION, prompts))).copy()


def as_dag(given: Dag | nx.DiGraph[str]) -> Dag:
    """The runner's own ``Dag``; a networkx graph is read node by node, then edge by edge (no order matters)."""
    if isinstance(given, Dag):
        return given
    dag = Dag(**given.graph)
    for node, attrs in given.nodes(data=True):
        dag.add_node(node, **attrs)
    dag.add_edges_from(given.edges)
    return dag


def walk_order(given: Dag | nx.DiGraph[str], start: str) -> list[str]:
    """``start`` and every node after it, topologically, following the declaration where there is a choice."""
    graph = as_dag(given)
    reachable = descendants(graph, start) | {start}
    return topological_order(graph, lambda n: graph.nodes[n]["order"], reachable)


def route(graph: Dag | nx.DiGraph[str], command: str, router: str) -> str:
    """The successor ``router`` sends ``command`` to."""
    declared: CommandDecl = graph.graph["commands"][command]
    if router == "choose_entry":
        return declared.entry
    return dict(declared.routes).get(router) or str(graph.nodes[router]["default"])


def walk(given: Dag | nx.DiGraph[str], command: str, answer: Callable[[str], str]) -> Iterator[str]:
    """The nodes ``command`` runs, in order, a router's successors cut to the one ``answer(router)`` names
    (asked once the router is yielded, so the runner answers with what its handler said)."""
    graph = as_dag(given)
    last = graph.graph["commands"][command].last
    span = ancestors(graph, last) | {last}
    reached = {"entry"}
    for node in walk_order(graph, "entry"):
        if node not in reached or node not in span:
            continue
        yield node
        if graph.nodes[node]["kind"] == "router":
            chosen = answer(node)
            if not graph.has_edge(node, chosen):
                raise GraphError(f"router {node} answered {chosen!r}, which is not one of its successors "
                                 f"{sorted(graph.successors(node))}")
            reached.add(chosen)
        else:
            reached.update(graph.successors(node))


def command_walk(given: Dag | nx.DiGraph[str], command: str) -> list[str]:
    """Every node ``command`` runs, in order, each router sending it where the declaration says."""
    graph = as_dag(given)
    return list(walk(graph, command, lambda router: route(graph, command, router)))


DERIVED = "derived"
"""The stage of a derived file's node: no stage writes it (its source's does, and is revised)."""


def course_graph(curriculum: Curriculum, plans: Mapping[str, LessonPlan] | None = None,
                 stages: Sequence[Stage] | None = None,
                 derived: Mapping[str, Sequence[str]] | None = None) -> nx.DiGraph[str]:
    """``artefact_graph`` as a networkx DiGraph (``stages`` None: the registry)."""
    return to_networkx(artefact_graph(curriculum, plans, REGISTRY if stages is None else stages, derived))


def derived_files(stages: Sequence[Stage], exists: Callable[[str], bool],
                  load: Callable[[str], Artefact]) -> dict[str, list[str]]:
    """Each course-scope artefact's derived files, as it stands on disk; none for a missing or broken one."""
    found: dict[str, list[str]] = {}
    for stage in stages:
        if stage.scope != "course" or stage.kind.derived is Artefact.derived or not exists(stage.output):
            continue
        try:
            found[stage.output] = sorted(load(stage.output).derived())
        except ArtefactError:
            continue
    return found


def artefact_graph(curriculum: Curriculum, plans: Mapping[str, LessonPlan] | None = None,
                   stages: Sequence[Stage] = REGISTRY, derived: Mapping[str, Sequence[str]] | None = None) -> Dag:
    """Artefact paths as nodes, direct inputs as edges, each node carrying ``stage``, ``phase`` and ``unit``.
    ``plans`` adds each quiz's edges from the plans that introduce its terms; ``derived`` the derived files."""
    layout = CourseLayout(curriculum)
    known = plans or {}
    graph = Dag()
    graph.add_node(BRIEF, kind="brief", stage=None, phase=None, unit=None)
    for stage in stages:
        if stage.scope == "module":
            for module in curriculum.modules:
                inputs = direct_inputs(stage, module, layout, known)
                for lesson in layout.lessons_of(module):
                    _add(graph, lesson.path(stage.output), stage.name, stage.phase, lesson.id, inputs)
            continue
        for path, place in layout.outputs(stage):
            _add(graph, path, stage.name, stage.phase, place.id if place else None,
                 direct_inputs(stage, place, layout, known))
    _add(graph, GLOSSARY, "glossary", "finish", None, layout.plan_paths())
    for source, paths in (derived or {}).items():
        for path in paths:
            _add(graph, path, DERIVED, graph.nodes[source]["phase"], None, [source])
    return graph


def _add(graph: Dag, path: str, stage: str, phase: str, unit: str | None,
         inputs: Sequence[str]) -> None:
    graph.add_node(path, kind=stage, stage=stage, phase=phase, unit=unit)
    for source in inputs:
        graph.add_edge(source, path)


def artefact_paths(graph: Dag) -> list[str]:
    """Every artefact path of a course graph (the brief excluded), sorted."""
    return sorted(node for node in graph if node != BRIEF)
