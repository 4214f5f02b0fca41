"""The lessons of one module share one running example (issue 19 item 6).

The wave's writers of one module run side by side and never see each other. The module's
planning call names the running example once and each lesson's worked-example facts;
the plan stage copies the running example into every plan of the module, and every
writer that receives a lesson's plan sees both, in its request's own text.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from stay.artefacts import LessonPlan, load
from stay.models import ModelAnswer, ModelRequest, OfflineBackend
from stay.pipeline import build_course
from stay.stages import REGISTRY, LessonPlanInput
from tests.conftest import ROOT
from tests.pipeline.test_build import quiet

BRIEF = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
WRITERS = {stage.name: next(name for name, source in stage.inputs if isinstance(source, LessonPlanInput))
           for stage in REGISTRY if any(isinstance(source, LessonPlanInput) for _name, source in stage.inputs)}
"""Every stage that writes from a lesson's plan -> the name its plan input goes by."""
_BLOCK = re.compile(r"^## (\w+)\n\n```yaml\n(.*?)^```\n", re.MULTILINE | re.DOTALL)


@dataclass
class Recording(OfflineBackend):
    """The offline backend, keeping every request with its answer."""

    seen: list[tuple[ModelRequest, dict[str, Any]]] = field(default_factory=list)
    _seen_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        answer = super().complete(request, model)
        with self._seen_lock:
            self.seen.append((request, dict(answer.data)))
        return answer


def shown(request: ModelRequest) -> dict[str, Any]:
    """The inputs as the model reads them: each YAML block of the request's messages."""
    return {name: yaml.safe_load(text) for name, text in _BLOCK.findall(request.shared + "\n" + request.user)}


def test_every_writer_of_a_module_sees_its_running_example_and_its_lessons_example_facts(tmp_path: Path) -> None:
    backend = Recording()
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert result.complete
    running: dict[str, Any] = {}  # module id -> its running example, as the planning call gave it
    facts: dict[str, Any] = {}  # lesson id -> its worked-example facts
    for request, answer in backend.seen:
        if request.stage == "plan":
            running[request.inputs["module"]] = answer.get("running_example")
            facts.update({plan["lesson"]: plan.get("example_facts") for plan in answer["plans"]})
    assert running and all(running.values()) and all(facts.values())

    writes = [(request, shown(request)[WRITERS[request.stage]]) for request, _ in backend.seen
              if request.stage in WRITERS]
    assert {(request.stage, plan["lesson"]) for request, plan in writes} == {
        (stage, lesson) for stage in WRITERS for lesson in facts}
    for request, plan in writes:
        module = plan["lesson"].split("-")[0]
        assert plan.get("example_facts") == facts[plan["lesson"]], (request.stage, request.artefact)
        assert plan.get("running_example") == running[module], (request.stage, request.artefact)

    # and every plan file of a module holds the same running example, the one asked for
    for path in result.course_dir.glob("modules/*/*.plan.yaml"):
        on_disk = load(path, LessonPlan)
        assert on_disk.running_example is not None
        assert on_disk.running_example.model_dump() == running[on_disk.lesson.split("-")[0]]


def test_a_plan_written_before_plans_carried_a_running_example_still_loads(tmp_path: Path) -> None:
    (sample,) = (ROOT / "courses" / "how-http-requests-travel").glob("modules/*/m01-l01.plan.yaml")
    data = yaml.safe_load(sample.read_text(encoding="utf-8"))
    data.pop("running_example", None)
    data.pop("example_facts", None)
    old = tmp_path / sample.name
    old.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    plan = load(old, LessonPlan)
    assert plan.running_example is None and plan.example_facts is None
    assert plan.lesson == data["lesson"] and len(plan.sections) == len(data["sections"])
