"""The ledgers beside a course, in .state/: hashes, gates and the run log.

Statuses are derived, never trusted: ``.state/hashes.json`` records, per artefact,
its own content hash and its direct inputs' hashes, and a status is recomputed from
them and the files on disk whenever it is asked for. ``course.yaml``'s ``artefacts``
map is a projection of that, written by ``project_statuses``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import networkx as nx

from stay.artefacts import (
    Brief,
    CourseManifest,
    Curriculum,
    LessonPlan,
    dump,
    dump_yaml,
    load,
    to_data,
    write_text_atomic,
)
from stay.pipeline._course_graph import BRIEF, DESIGN, artefact_paths

Status = Literal["missing", "current", "stale", "edited"]
STATE = ".state"
HASHES = f"{STATE}/hashes.json"
GATES = f"{STATE}/gates.json"
RUN_LOG = f"{STATE}/run-log.md"
GATE_NAMES = ("design", "plan")
AUTO_APPROVED = "auto-approved (--yes)"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def brief_hash(brief: Brief) -> str:
    return digest(dump_yaml(to_data(brief)).encode())


def now() -> str:
    """UTC now, or ``$SOURCE_DATE_EPOCH`` when set, for reproducible ledgers."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_json(path: Path, document: Any) -> None:
    write_if_changed(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


def write_if_changed(path: Path, text: str) -> bool:
    """Atomic whole-file write, skipped when the bytes would not change."""
    if path.is_file() and path.read_bytes() == text.encode("utf-8"):
        return False
    write_text_atomic(path, text)
    return True


def read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    document = json.loads(path.read_text(encoding="utf-8"))
    return document if isinstance(document, dict) else {}


@dataclass
class CourseState:
    """A course directory, its artefact graph, and its hash ledger."""

    root: Path
    graph: nx.DiGraph[str]
    brief: Brief
    _ledger: dict[str, Any] | None = None
    """hashes.json as last read or written: every status reads it, so it is read once."""

    # -- hashes ------------------------------------------------------------

    def current_hash(self, path: str) -> str | None:
        if path == BRIEF:
            return brief_hash(self.brief)
        file = self.root / path
        return digest(file.read_bytes()) if file.is_file() else None

    def ledger(self) -> dict[str, Any]:
        if self._ledger is None:
            self._ledger = read_json(self.root / HASHES).get("artefacts", {})
        return self._ledger

    def record(self, paths: list[str]) -> None:
        """Record what the pipeline just wrote: each path's hash and its inputs' hashes."""
        ledger = dict(self.ledger())
        for path in paths:
            ledger[path] = {"hash": self.current_hash(path),
                            "inputs": {i: self.current_hash(i)
                                       for i in sorted(self.graph.predecessors(path))}}
        self._write_ledger(ledger)

    def _write_ledger(self, ledger: dict[str, Any]) -> None:
        write_json(self.root / HASHES, {"version": 1, "artefacts": dict(sorted(ledger.items()))})
        self._ledger = ledger

    def adopt(self) -> None:
        """Rebuild the ledger from the files on disk: every existing artefact current."""
        present = [p for p in artefact_paths(self.graph) if (self.root / p).is_file()]
        self._write_ledger({})
        self.record(present)

    # -- statuses ----------------------------------------------------------

    def status(self, path: str) -> tuple[Status, list[str]]:
        """(status, the inputs that made it stale)."""
        entry = self.ledger().get(path)
        own = self.current_hash(path)
        if own is None:
            return "missing", []
        if entry is None or entry.get("hash") != own:
            return "edited", []
        recorded = entry.get("inputs", {})
        inputs = sorted(self.graph.predecessors(path))
        changed = [i for i in inputs if recorded.get(i) != self.current_hash(i)]
        changed += [i for i in sorted(recorded) if i not in inputs]
        return ("stale", changed) if changed else ("current", [])

    def statuses(self) -> dict[str, tuple[Status, list[str]]]:
        return {path: self.status(path) for path in artefact_paths(self.graph)}

    def project_statuses(self, manifest: CourseManifest) -> bool:
        """Write course.yaml's ``artefacts`` map from the derived statuses.

        course.yaml is a projection, not a source of truth: the viewer and a diff want
        the statuses, and this is the only function that writes them. An ``edited``
        file is projected as current (it exists and is what it is).
        """
        projected = {path: ("current" if status == "edited" else status)
                     for path, (status, _why) in self.statuses().items()}
        updated = manifest.model_copy(update={"artefacts": projected})
        return write_if_changed(self.root / "course.yaml", dump(updated))

    # -- gates -------------------------------------------------------------

    def covered(self, gate: str) -> list[str]:
        plans = sorted(p for p in self.graph if p.endswith(".plan.yaml"))
        return list(DESIGN) + (plans if gate == "plan" else [])

    def gates(self) -> dict[str, Any]:
        gates: dict[str, Any] = read_json(self.root / GATES).get("gates", {})
        return gates

    def approval(self, gate: str) -> tuple[bool, str]:
        """(whether the gate's approval holds, why not)."""
        entry = self.gates().get(gate)
        if entry is None:
            return False, f"the {gate} gate has not been answered"
        if not entry.get("approved"):
            return False, f"the {gate} gate was declined"
        covered = entry.get("covered", {})
        if sorted(covered) != sorted(self.covered(gate)):
            return False, f"the files under the {gate} gate changed (lessons added or removed)"
        moved = [p for p in self.covered(gate) if covered.get(p) != self.current_hash(p)]
        if moved:
            return False, f"{', '.join(moved)} changed since the {gate} gate was approved"
        return True, ""

    def answer(self, gate: str, *, approved: bool, by: str, note: str = "") -> None:
        gates = self.gates()
        gates[gate] = {"approved": approved, "at": now(), "by": by, "note": note,
                       "covered": {p: self.current_hash(p) for p in self.covered(gate)}}
        write_json(self.root / GATES, {"version": 1, "gates": dict(sorted(gates.items()))})

    # -- the run log -------------------------------------------------------

    def log_run(self, command: str, backend: str, written: list[str], stopped: str | None) -> None:
        """Append one run to .state/run-log.md, if it wrote anything; stable order."""
        if not written:
            return
        path = self.root / RUN_LOG
        text = path.read_text(encoding="utf-8") if path.is_file() else "# Run log\n"
        number = text.count("\n## run ") + 1
        lines = [f"## run {number}: {command} ({backend})", ""]
        lines += [f"- wrote {p}" for p in sorted(set(written))]
        lines += [f"- stopped at {stopped}" if stopped else "- completed"]
        write_text_atomic(path, text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")


def plans_on_disk(root: Path, curriculum: Curriculum) -> dict[str, LessonPlan]:
    """Every lesson plan that exists, by lesson id."""
    found: dict[str, LessonPlan] = {}
    for module in curriculum.modules:
        for lesson in module.lessons:
            path = root / f"modules/{module.id}-{module.slug}/{lesson.id}.plan.yaml"
            if path.is_file():
                found[lesson.id] = load(path, LessonPlan)
    return found


def load_manifest(root: Path) -> CourseManifest:
    return load(root / "course.yaml", CourseManifest)
