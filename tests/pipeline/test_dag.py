"""The runner's graphs (stay.pipeline._graph) against networkx, which they stand in for.

A run walks ``Dag``s so that it never imports networkx; the public graphs are networkx
DiGraphs made from the same ``Dag``. Here every operation the runner uses is held equal
to networkx's over generated graphs (cycles, ties and repeated additions included), the
runner's walk of every command equal to a walk computed with networkx, and a build shown
not to import networkx at all.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.pipeline import DECLARATION, course_graph, graph, problems, walk_order
from stay.pipeline._graph import (
    Dag,
    PipelineDecl,
    ancestors,
    artefact_graph,
    assemble,
    command_walk,
    declare,
    descendants,
    has_path,
    is_acyclic,
    route,
    to_networkx,
    topological_order,
)
from stay.stages import Prompts
from tests.conftest import ROOT
from tests.parity.harness import examples
from tests.pipeline.test_declarations import WITH_TOY

NAMES = [f"n{i}" for i in range(9)]

# A graph is made by a sequence of additions, as the pipeline and the artefact graph make
# theirs: nodes with attributes (again, to update them in place), and edges that may name
# nodes not added yet. ``order`` ties on purpose, to exercise the tie-break.
operations = st.lists(
    st.one_of(
        st.tuples(st.just("node"), st.sampled_from(NAMES), st.integers(0, 4)),
        st.tuples(st.just("edge"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    ),
    max_size=30,
)


def _pair(ops: list[tuple[str, str, Any]], acyclic: bool) -> tuple[Dag, nx.DiGraph[str]]:
    dag, reference = Dag(name="g"), nx.DiGraph(name="g")
    for kind, first, second in ops:
        if kind == "node":
            dag.add_node(first, order=second, kind="k")
            reference.add_node(first, order=second, kind="k")
        elif not acyclic or first < second:  # edges that only go "up" cannot close a cycle
            dag.add_edge(first, second)
            reference.add_edge(first, second)
    return dag, reference


def _same(dag: Dag, reference: nx.DiGraph[str]) -> None:
    assert list(dag.nodes(data=True)) == list(reference.nodes(data=True))
    assert dag.edges == list(reference.edges)
    assert dag.graph == reference.graph and len(dag) == len(reference)
    for node in reference:
        assert list(dag.successors(node)) == list(reference.successors(node))
        assert list(dag.predecessors(node)) == list(reference.predecessors(node))
        assert dag.out_degree(node) == reference.out_degree(node)


@settings(max_examples=examples(600, dev=80), deadline=None)
@given(operations, st.booleans())
def test_every_operation_the_runner_uses_agrees_with_networkx(ops: list[tuple[str, str, Any]],
                                                              acyclic: bool) -> None:
    dag, reference = _pair(ops, acyclic)
    _same(dag, reference)
    assert list(to_networkx(dag).nodes(data=True)) == list(reference.nodes(data=True))
    assert list(to_networkx(dag).edges) == list(reference.edges) and to_networkx(dag).graph == reference.graph
    assert is_acyclic(dag) == nx.is_directed_acyclic_graph(reference)
    for node in reference:
        assert descendants(dag, node) == nx.descendants(reference, node)
        assert ancestors(dag, node) == nx.ancestors(reference, node)
        for other in reference:
            assert has_path(dag, node, other) == nx.has_path(reference, node, other)
            assert dag.has_edge(node, other) == reference.has_edge(node, other)
    def key(n: str) -> int:
        return int(reference.nodes[n].get("order", 0))

    acyclic = nx.is_directed_acyclic_graph(reference)
    if acyclic:
        assert topological_order(dag, key) == list(nx.lexicographical_topological_sort(reference, key=key))
    else:
        with pytest.raises(ValueError, match="cycle"):
            topological_order(dag, lambda n: 0)
    for node in list(reference)[:3]:
        reference_cut = reference.copy()
        reference_cut.remove_node(node)
        for source in reference_cut:
            for target in reference_cut:  # reachable never through ``node``: as on the graph without it
                assert has_path(dag, source, target, avoiding=node) == nx.has_path(reference_cut, source, target)
        keep = {n for i, n in enumerate(reference) if i % 2 == 0 or n == node}
        if acyclic:  # the order of the nodes kept, as of the subgraph networkx cuts
            assert topological_order(dag, key, keep) == list(
                nx.lexicographical_topological_sort(reference.subgraph(keep), key=key))


def _networkx_walk(reference: nx.DiGraph[str], command: str) -> list[str]:
    """A command's walk as the runner computed it when it walked a networkx DiGraph."""
    declared = reference.graph["commands"][command]
    span = nx.ancestors(reference, declared.last) | {declared.last}
    routed = reference.copy()  # each router's edges cut to the one the command takes
    for router in [n for n, a in reference.nodes(data=True) if a["kind"] == "router"]:
        routed.remove_edges_from([(router, s) for s in reference.successors(router)
                                  if s != route(reference, command, router)])
    reachable = nx.descendants(routed, "entry") | {"entry"}
    order = nx.lexicographical_topological_sort(reference.subgraph(reachable),
                                                key=lambda n: reference.nodes[n]["order"])
    return [n for n in order if n in span]


@pytest.mark.parametrize("declaration", [DECLARATION, declare(WITH_TOY)], ids=["registry", "with-toy-stage"])
def test_the_runner_walks_every_command_as_networkx_would(declaration: PipelineDecl) -> None:
    # the runner's graph holds the reference sets the packaged prompts give, as graph()'s does
    prompts = Prompts.load(None, declaration.stages)
    runner = assemble(declaration, prompts)
    public = graph() if declaration is DECLARATION else to_networkx(assemble(declaration, prompts))
    _same(runner, public)
    for command in declaration.commands:
        assert command_walk(runner, command) == command_walk(public, command) == _networkx_walk(public, command)
    assert problems(runner) == problems(public) == []


BREAKAGES: list[tuple[str, tuple[Any, ...]]] = [
    ("add_edge", ("intake", "scaffold")),  # around moderate
    ("add_edge", ("plan_record", "validate")),
    ("add_edge", ("outcomes", "design_ask")),  # a second way into a gate's ask, added after the first
    ("add_node", ("orphan",)),
    ("remove_node", ("merge_glossary",)),
    ("add_edge", ("write_lesson", "design_summary")),  # from the wave back to a gate: a cycle
    ("add_edge", ("repair", "entry")),  # another cycle: networkx names one
]


def _without(dag: Dag, gone: str) -> Dag:
    made = Dag(**dag.graph)
    for node, attrs in dag.nodes(data=True):
        if node != gone:
            made.add_node(node, **attrs)
    made.add_edges_from(edge for edge in dag.edges if gone not in edge)
    return made


@pytest.mark.parametrize("count", range(1, len(BREAKAGES) + 1))
def test_a_networkx_graph_is_read_as_the_runner_reads_its_own(count: int) -> None:
    """The public graph, broken by a caller, gives the problems and walks the runner's own
    Dag broken the same way gives: a networkx graph is read node by node and edge by
    edge (there is no round trip that keeps neighbour order), and nothing depends on it."""
    public, runner = graph(), assemble(DECLARATION, Prompts.load())
    for method, args in BREAKAGES[:count]:
        attrs = {"kind": "mechanical", "writes": False, "references": {}, "stages": (), "order": 99} \
            if method == "add_node" else {}
        getattr(public, method)(*args, **attrs)
        if method == "remove_node":  # a Dag is never cut: the runner's is made again without the node
            runner = _without(runner, args[0])
        else:
            getattr(runner, method)(*args, **attrs)
    found = problems(public)
    assert found == problems(runner)
    assert any("without passing moderate" in p for p in found)
    assert any("cycle" in p for p in found) == (not is_acyclic(runner))
    if is_acyclic(runner):
        for command in DECLARATION.commands:
            assert command_walk(public, command) == command_walk(runner, command)
        assert walk_order(public, "intake") == walk_order(runner, "intake")


def test_the_artefact_graph_is_the_public_course_graph() -> None:
    from stay.artefacts import Curriculum, LessonPlan, load

    sample = ROOT / "courses" / "how-http-requests-travel"
    curriculum = load(sample / "curriculum.yaml", Curriculum)
    plans = {p.name.removesuffix(".plan.yaml"): load(p, LessonPlan) for p in sample.glob("modules/*/*.plan.yaml")}
    _same(artefact_graph(curriculum, plans), course_graph(curriculum, plans))


def test_a_build_never_imports_networkx_and_the_public_graph_does() -> None:
    script = (
        "import sys, tempfile\n"
        "from stay.pipeline import build_course\n"
        "result = build_course(sys.argv[1], courses_dir=tempfile.mkdtemp(), yes=True, progress=lambda _: None)\n"
        "assert result.complete, result\n"
        "print('networkx' in sys.modules)\n"
        "from stay.pipeline import graph\n"
        "graph()\n"
        "print('networkx' in sys.modules)\n"
    )
    brief = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
    done = subprocess.run([sys.executable, "-c", script, str(brief)], capture_output=True, text=True, cwd=ROOT,
                          check=True)
    assert done.stdout.split() == ["False", "True"]
