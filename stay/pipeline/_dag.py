"""The few graph operations a run needs, without importing networkx.

A run walks the pipeline graph and reads the artefact graph: node attributes,
successors and predecessors, what lies before or after a node, and a topological
order. Those are a few lines of plain Python; importing networkx for them was about a
sixth of a fresh ``stay build`` (it imports every algorithm it has). So the runner's
graphs are ``Dag``s, the only graphs a run holds, built straight from the declaration and
the curriculum. networkx is imported where its graphs are asked for: the public
``stay.pipeline.graph()``, ``build()`` and ``course_graph()`` give ``networkx.DiGraph``s
made from the same ``Dag`` (``to_networkx``, one way only), and ``stay graph`` prints one.

``Dag`` keeps networkx's order everywhere order shows: nodes and neighbours in the order
they were added, a node added again keeping its place and updating its attributes.
``tests/pipeline/test_dag.py`` holds every operation here equal to networkx's over
generated graphs, and the runner's walks equal to walks computed with networkx.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx


class Dag:
    """A directed graph of string nodes with attribute dicts, and graph attributes in
    ``graph``; the part of ``networkx.DiGraph``'s interface the pipeline reads."""

    __slots__ = ("_added", "_nodes", "_pred", "_succ", "graph")

    def __init__(self, **attrs: Any) -> None:
        self.graph: dict[str, Any] = dict(attrs)
        self._nodes: dict[str, dict[str, Any]] = {}
        self._succ: dict[str, dict[str, None]] = {}
        self._pred: dict[str, dict[str, None]] = {}
        self._added: dict[tuple[str, str], None] = {}
        """Every edge in the order it was added: each node's successors and predecessors
        are in this order, and ``to_networkx`` adds the edges in it to keep both."""

    # -- building -----------------------------------------------------------------------

    def add_node(self, node: str, **attrs: Any) -> None:
        if node not in self._nodes:
            self._nodes[node] = {}
            self._succ[node] = {}
            self._pred[node] = {}
        self._nodes[node].update(attrs)

    def add_edge(self, source: str, target: str) -> None:
        for node in (source, target):
            if node not in self._nodes:
                self.add_node(node)
        self._succ[source][target] = None
        self._pred[target][source] = None
        self._added[(source, target)] = None

    def add_edges_from(self, edges: Iterable[tuple[str, str]]) -> None:
        for source, target in edges:
            self.add_edge(source, target)

    def remove_node(self, node: str) -> None:
        for target in self._succ.pop(node):
            del self._pred[target][node]
            del self._added[(node, target)]
        for source in self._pred.pop(node):
            del self._succ[source][node]
            self._added.pop((source, node), None)  # a self-loop went with the successors
        del self._nodes[node]

    def copy(self) -> Dag:
        """An independent copy, as ``networkx.DiGraph.copy`` makes one: attribute dicts
        copied one level, and the edges added source by source (so a node's predecessors
        may come in another order than here)."""
        dag = Dag(**self.graph)
        for node, attrs in self._nodes.items():
            dag.add_node(node, **attrs)
        dag.add_edges_from(self.edges)
        return dag

    def subgraph(self, nodes: Iterable[str]) -> Dag:
        """The nodes given (in this graph's order) and the edges between them, as a copy."""
        keep = set(nodes)
        dag = Dag(**self.graph)
        for node, attrs in self._nodes.items():
            if node in keep:
                dag.add_node(node, **attrs)
        dag.add_edges_from((s, t) for s, t in self._added if s in keep and t in keep)
        return dag

    # -- reading --------------------------------------------------------------------------

    @property
    def nodes(self) -> NodeView:
        return NodeView(self._nodes)

    @property
    def edges(self) -> list[tuple[str, str]]:
        return [(source, target) for source, targets in self._succ.items() for target in targets]

    def __contains__(self, node: object) -> bool:
        return node in self._nodes

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def successors(self, node: str) -> Iterator[str]:
        return iter(self._succ[node])

    def predecessors(self, node: str) -> Iterator[str]:
        return iter(self._pred[node])

    def has_edge(self, source: str, target: str) -> bool:
        return source in self._succ and target in self._succ[source]

    def out_degree(self, node: str) -> int:
        return len(self._succ[node])


class NodeView:
    """``graph.nodes``: ``nodes[n]`` is n's attribute dict; ``nodes(data=True)`` its pairs."""

    __slots__ = ("_nodes",)

    def __init__(self, nodes: dict[str, dict[str, Any]]) -> None:
        self._nodes = nodes

    def __getitem__(self, node: str) -> dict[str, Any]:
        return self._nodes[node]

    def __call__(self, data: bool = False) -> Iterator[Any]:
        return iter(self._nodes.items()) if data else iter(self._nodes)


def descendants(graph: Dag, source: str) -> set[str]:
    """Every node reachable from ``source``, ``source`` excluded (``networkx.descendants``)."""
    return _reach(graph._succ, source)


def ancestors(graph: Dag, target: str) -> set[str]:
    """Every node that reaches ``target``, ``target`` excluded (``networkx.ancestors``)."""
    return _reach(graph._pred, target)


def _reach(adjacency: dict[str, dict[str, None]], start: str) -> set[str]:
    if start not in adjacency:
        raise KeyError(start)
    seen: set[str] = set()
    stack = [start]
    while stack:
        for neighbour in adjacency[stack.pop()]:
            if neighbour not in seen:
                seen.add(neighbour)
                stack.append(neighbour)
    seen.discard(start)
    return seen


def has_path(graph: Dag, source: str, target: str) -> bool:
    """Whether ``target`` is ``source`` or reachable from it (``networkx.has_path``)."""
    return source == target or target in descendants(graph, source)


def is_acyclic(graph: Dag) -> bool:
    """``networkx.is_directed_acyclic_graph``: every node can be put in an order."""
    return len(_kahn(graph, None)) == len(graph)


def topological_order(graph: Dag, key: Callable[[str], Hashable]) -> list[str]:
    """``networkx.lexicographical_topological_sort``: among the nodes whose predecessors
    have all been placed, always the one with the smallest ``key`` next."""
    order = _kahn(graph, key)
    if len(order) != len(graph):
        raise ValueError("the graph has a cycle; it has no topological order")
    return order


def _kahn(graph: Dag, key: Callable[[str], Any] | None) -> list[str]:
    """Kahn's algorithm; ties on ``key`` go to the node added first, as in networkx."""
    waiting = {node: len(sources) for node, sources in graph._pred.items()}
    index = {node: position for position, node in enumerate(waiting)}
    rank = key or (lambda node: 0)
    heap = [(rank(node), index[node], node) for node, count in waiting.items() if count == 0]
    heapq.heapify(heap)
    order: list[str] = []
    while heap:
        node = heapq.heappop(heap)[2]
        order.append(node)
        for target in graph._succ[node]:
            waiting[target] -= 1
            if waiting[target] == 0:
                heapq.heappush(heap, (rank(target), index[target], target))
    return order


def to_networkx(graph: Dag) -> nx.DiGraph[str]:
    """The same graph as a ``networkx.DiGraph``: attributes, node order and edge order kept."""
    import networkx as nx

    result: nx.DiGraph[str] = nx.DiGraph(**graph.graph)
    result.add_nodes_from(graph.nodes(data=True))
    result.add_edges_from(graph._added)
    return result
