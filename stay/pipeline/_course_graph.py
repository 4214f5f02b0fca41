"""The per-course artefact graph: one node per artefact path, one edge per direct input.

Derived from the stage declarations: every output of every stage is a node, carrying
its stage and its lesson or module, and its edges come from the inputs the stage
declares (``_inputs.input_paths``); the glossary, merged from every plan, is the one
artefact no stage writes, and the files written from a stage's artefact as it stands
(``Artefact.derived``: example.yaml's data files) hang from that artefact alone.
Staleness, scheduling, dispatch and ``stay status`` are computed on it. It is
deliberately non-transitive: only direct inputs are edges, so a regeneration that
reproduces its input byte for byte stops a cascade there.

A run holds it as a ``Dag`` (``artefact_graph``); ``course_graph`` gives the same graph as
a ``networkx.DiGraph``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from stay.artefacts import Artefact, Curriculum, LessonPlan
from stay.errors import ArtefactError
from stay.pipeline._dag import Dag, to_networkx
from stay.pipeline._inputs import direct_inputs
from stay.pipeline._layout import BRIEF, GLOSSARY, CourseLayout
from stay.stages import REGISTRY, Stage

if TYPE_CHECKING:
    import networkx as nx


DERIVED = "derived"
"""The stage a derived file's node carries (``Artefact.derived``): no stage writes it, its
source's stage does, and a revision goes to its source."""


def course_graph(curriculum: Curriculum, plans: Mapping[str, LessonPlan] | None = None,
                 stages: Sequence[Stage] | None = None,
                 derived: Mapping[str, Sequence[str]] | None = None) -> nx.DiGraph[str]:
    """``artefact_graph`` as a networkx DiGraph, node for node and edge for edge
    (``stages`` None: the registry, a default help() can show)."""
    return to_networkx(artefact_graph(curriculum, plans, REGISTRY if stages is None else stages, derived))


def derived_files(stages: Sequence[Stage], exists: Callable[[str], bool],
                  load: Callable[[str], Artefact]) -> dict[str, list[str]]:
    """Each course-scope artefact's derived files (``Artefact.derived``), by its path, as it
    stands on disk. One that is missing or cannot be read has none: the graph is still
    built, and the validator names what is wrong with it."""
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
    """Artefact paths as nodes, direct inputs as edges (input -> artefact). Each node
    carries ``stage`` (its stage's name, or ``glossary``), ``phase`` and ``unit`` (its
    lesson id, module id, or None for the course).

    ``plans`` (lesson id -> plan), when given, adds each quiz's edges from the plans
    that introduce the terms its plan revisits; ``derived`` (``derived_files``) adds each
    derived file, its one edge from the artefact it is written from (stage ``derived``).
    """
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
