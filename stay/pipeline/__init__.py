"""The pipeline: one graph of pure stages (a networkx DAG when asked for), walked by a plain-Python runner."""

from __future__ import annotations

from stay.errors import BriefRejected, GraphError
from stay.pipeline._commands import Answered, Statuses, adopt, approve, gate_status, status
from stay.pipeline._course_graph import course_graph
from stay.pipeline._estimate import Estimate, estimate
from stay.pipeline._gate_decl import GATE_NAMES
from stay.pipeline._gate_page import capstone_outcomes
from stay.pipeline._gate_review import GateReview, gate_review
from stay.pipeline._graph import DECLARATION, build, graph, problems
from stay.pipeline._progress import NotebookProgress, ProgressUpdate
from stay.pipeline._result import Spent, spent_of
from stay.pipeline._runner import BuildResult, build_course, revise, run_command
from stay.pipeline._walk import walk_order

__all__ = [
    "DECLARATION", "GATE_NAMES", "Answered", "BriefRejected", "BuildResult", "Estimate", "GateReview", "GraphError",
    "NotebookProgress", "ProgressUpdate", "Spent", "Statuses", "adopt", "approve", "build",
    "build_course", "capstone_outcomes", "course_graph", "estimate", "gate_review", "gate_status", "graph",
    "problems", "revise", "run_command",
    "spent_of", "status", "walk_order",
]
