"""The per-course artefact graph: one node per artefact path, one edge per direct input.

The edges are course-format.md's table of direct inputs. Staleness, scheduling and
``stay status`` are computed on it. It is deliberately non-transitive: only direct
inputs are edges, so a regeneration that reproduces its input byte for byte stops
a cascade there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import networkx as nx

from stay.artefacts import Curriculum, LessonPlan

BRIEF = "brief"
"""The pseudo-artefact for the brief (held in course.yaml)."""
DESIGN = ("audience.yaml", "curriculum.yaml", "outcomes.yaml", "assessment.yaml")


def lesson_paths(curriculum: Curriculum) -> list[tuple[str, str, str]]:
    """(lesson id, module directory, path prefix) of every lesson, in lesson order."""
    found = []
    for module in curriculum.modules:
        module_dir = f"modules/{module.id}-{module.slug}"
        for lesson in module.lessons:
            found.append((lesson.id, module_dir, f"{module_dir}/{lesson.id}"))
    return found


def course_graph(curriculum: Curriculum,
                 plans: Mapping[str, LessonPlan] | None = None) -> nx.DiGraph[str]:
    """Artefact paths as nodes, direct inputs as edges (input -> artefact).

    ``plans`` (lesson id -> plan), when given, adds each quiz's edges from the plans
    that introduce the terms its plan revisits.
    """
    graph: nx.DiGraph[str] = nx.DiGraph()
    graph.add_node(BRIEF, kind="brief")
    lessons = lesson_paths(curriculum)
    for path, inputs in (
        ("audience.yaml", [BRIEF]),
        ("curriculum.yaml", [BRIEF, "audience.yaml"]),
        ("outcomes.yaml", ["audience.yaml", "curriculum.yaml"]),
        ("assessment.yaml", ["curriculum.yaml", "outcomes.yaml"]),
    ):
        _add(graph, path, "design", inputs)
    all_plans = [f"{prefix}.plan.yaml" for _id, _dir, prefix in lessons]
    finished: list[str] = []  # plans of every module before the current one
    current: list[str] = []
    for index, (_lesson_id, module_dir, prefix) in enumerate(lessons):
        if index and module_dir != lessons[index - 1][1]:
            finished, current = finished + current, []
        _add(graph, f"{prefix}.plan.yaml", "plan",
             ["curriculum.yaml", "outcomes.yaml", "assessment.yaml", *finished])
        current.append(f"{prefix}.plan.yaml")
    introducer = _introducers(lessons, plans or {})
    for lesson_id, _module_dir, prefix in lessons:
        own = [f"{prefix}.plan.yaml", "outcomes.yaml", "audience.yaml"]
        _add(graph, f"{prefix}.md", "content", own)
        _add(graph, f"{prefix}.exercises.yaml", "exercises", own)
        plan = (plans or {}).get(lesson_id)
        revisited = sorted({introducer[_norm(t)] for t in (plan.revisits if plan else [])
                            if _norm(t) in introducer})
        _add(graph, f"{prefix}.quiz.yaml", "quiz", [*own, *revisited])
    _add(graph, "project.yaml", "capstone",
         ["curriculum.yaml", "outcomes.yaml", "assessment.yaml", *all_plans])
    _add(graph, "glossary.yaml", "glossary", all_plans)
    return graph


def _norm(term: str) -> str:
    return " ".join(term.casefold().split())


def _introducers(lessons: list[tuple[str, str, str]],
                 plans: Mapping[str, LessonPlan]) -> dict[str, str]:
    """casefolded term -> the plan path that first introduces it."""
    found: dict[str, str] = {}
    for lesson_id, _module_dir, prefix in lessons:
        plan = plans.get(lesson_id)
        for term in plan.new_terms if plan else []:
            found.setdefault(_norm(term.term), f"{prefix}.plan.yaml")
    return found


def _add(graph: nx.DiGraph[str], path: str, kind: str, inputs: Iterable[str]) -> None:
    graph.add_node(path, kind=kind)
    for source in inputs:
        graph.add_edge(source, path)


def artefact_paths(graph: nx.DiGraph[str]) -> list[str]:
    """Every artefact path of a course graph (the brief excluded), sorted."""
    return sorted(node for node in graph if node != BRIEF)
