"""The pipeline: one graph of pure stages (a networkx DAG when asked for), walked by a plain-Python runner."""

from __future__ import annotations

from stay.errors import BriefRejected, GraphError
from stay.pipeline._commands import (
    Answered,
    GateReview,
    Statuses,
    adopt,
    approve,
    gate_review,
    gate_status,
    status,
)
from stay.pipeline._estimate import Estimate, estimate
from stay.pipeline._graph import (
    DECLARATION,
    GATE_NAMES,
    build,
    capstone_outcomes,
    course_graph,
    graph,
    problems,
    walk_order,
)
from stay.pipeline._run import Spent
from stay.pipeline._runner import BuildResult, build_course, revise, run_command, spent_of
from stay.pipeline._trace import NotebookProgress, ProgressUpdate

__all__ = [
    "DECLARATION", "GATE_NAMES", "Answered", "BriefRejected", "BuildResult", "Estimate", "GateReview", "GraphError",
    "NotebookProgress", "ProgressUpdate", "Spent", "Statuses", "adopt", "approve", "build",
    "build_course", "capstone_outcomes", "course_graph", "estimate", "gate_review", "gate_status", "graph",
    "problems", "revise", "run_command",
    "spent_of", "status", "walk_order",
]
