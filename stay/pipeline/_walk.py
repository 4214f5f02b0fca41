"""Walking the pipeline graph: the order a command runs its nodes in, and where each
router sends it. The runner walks with ``walk`` (a router's edge is what its handler
answered); ``command_walk`` is the walk the declaration alone gives, for proofs and tests.
Each takes the runner's ``Dag`` or a networkx graph (``_graph.graph()``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from stay.errors import GraphError
from stay.pipeline._dag import Dag, ancestors, descendants, topological_order

if TYPE_CHECKING:
    import networkx as nx

    from stay.pipeline._graph import CommandDecl


def as_dag(given: Dag | nx.DiGraph[str]) -> Dag:
    """The runner's own ``Dag`` as it is; a networkx graph (``graph()`` or ``build()``, as a
    caller may have changed it) read node by node, then edge by edge. Nothing read from
    it depends on the order of a node's neighbours (sets, sorted lists, a topological
    order keyed by the declaration), so the edges need no particular order."""
    if isinstance(given, Dag):
        return given
    dag = Dag(**given.graph)
    for node, attrs in given.nodes(data=True):
        dag.add_node(node, **attrs)
    dag.add_edges_from(given.edges)
    return dag


def walk_order(given: Dag | nx.DiGraph[str], start: str) -> list[str]:
    """``start`` and every node after it, in a topological order that follows the
    declaration where the graph leaves a choice."""
    graph = as_dag(given)
    reachable = descendants(graph, start) | {start}
    return topological_order(graph.subgraph(reachable), key=lambda n: graph.nodes[n]["order"])


def route(graph: Dag | nx.DiGraph[str], command: str, router: str) -> str:
    """The successor ``router`` sends ``command`` to: choose_entry its entry, another
    router the one the command names, else the router's default."""
    declared: CommandDecl = graph.graph["commands"][command]
    if router == "choose_entry":
        return declared.entry
    return dict(declared.routes).get(router) or str(graph.nodes[router]["default"])


def walk(given: Dag | nx.DiGraph[str], command: str, answer: Callable[[str], str]) -> Iterator[str]:
    """The nodes ``command`` runs, in order: from entry to the node it stops at, a
    router's successors cut to the one ``answer(router)`` names (asked once the router
    has been yielded, so the runner can answer with what the router's handler said)."""
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
    """Every node ``command`` runs, in order: entry, choose_entry, then from the node it
    joins at to the node it stops at, each router sending it where the declaration says."""
    graph = as_dag(given)
    return list(walk(graph, command, lambda router: route(graph, command, router)))
