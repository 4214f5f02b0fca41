"""The course has one running example, and every writer sees it (issue 19 item 6, issue 35
item 2).

The wave's writers run side by side and never see each other. The example stage writes
the course's one running example (example.yaml: its setting, people, data and data
files) after the design gate; every module's planning call is given it, the plan stage
copies it into every plan of the course, and every writer that receives a lesson's plan
sees it, with the lesson's worked-example facts, in its request's own text. Its data
files are written to assets/ from it, and are stale when it changes.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

import stay
from stay.artefacts import CourseExample, Curriculum, LessonPlan, RunningExample, load, module_dir, to_data
from stay.errors import AnswerError
from stay.models import ModelAnswer, ModelRequest, OfflineBackend
from stay.pipeline import build_course
from stay.stages import REGISTRY, STAGES
from tests.conftest import ROOT
from tests.expected import OFFLINE
from tests.pipeline.test_build import quiet

BRIEF = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
PLANNERS = {stage.name: next(name for name, source in stage.inputs if source is RunningExample)
            for stage in REGISTRY if any(source is RunningExample for _name, source in stage.inputs)}
"""Every stage given the course's running example -> the name it goes by."""
WRITERS = {stage.name: next(name for name, source in stage.inputs if source is LessonPlan)
           for stage in OFFLINE if any(source is LessonPlan for _name, source in stage.inputs)}
"""Every stage that writes from a lesson's plan -> the name its plan input goes by (in an offline
build: the review, which reads it too, runs with a model only)."""
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


def test_every_writer_sees_the_courses_one_running_example_and_its_lessons_example_facts(tmp_path: Path) -> None:
    backend = Recording()
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert result.complete
    example = load(result.course_dir / "example.yaml", CourseExample)
    running = to_data(example.running())  # what every plan carries: the files by path and first lines
    assert running["files"] and all(file["head"] for file in running["files"])
    facts: dict[str, Any] = {}  # lesson id -> its worked-example facts
    planned = [request for request, _ in backend.seen if request.stage == "plan"]
    assert planned and all(shown(request)[PLANNERS["plan"]] == running for request in planned)
    for request, answer in backend.seen:
        if request.stage == "plan":
            facts.update({plan["lesson"]: plan.get("example_facts") for plan in answer["plans"]})
    assert facts and all(facts.values())

    writes = [(request, shown(request)[WRITERS[request.stage]]) for request, _ in backend.seen
              if request.stage in WRITERS]
    assert {(request.stage, plan["lesson"]) for request, plan in writes} == {
        (stage, lesson) for stage in WRITERS for lesson in facts}
    for request, plan in writes:
        assert plan.get("example_facts") == facts[plan["lesson"]], (request.stage, request.artefact)
        assert plan.get("running_example") == running, (request.stage, request.artefact)
    (capstone,) = [request for request, _ in backend.seen if request.stage == "capstone"]
    assert all(plan["running_example"] == running for plan in shown(capstone)["plans"])

    # every plan file of the course holds the same running example, and each data file is on disk
    for path in result.course_dir.glob("modules/*/*.plan.yaml"):
        on_disk = load(path, LessonPlan)
        assert on_disk.running_example == example.running()
    for file in example.files:
        assert (result.course_dir / file.path).read_text(encoding="utf-8").rstrip("\n") == file.text.rstrip("\n")


def test_a_changed_running_example_makes_exactly_its_readers_and_its_files_stale(tmp_path: Path) -> None:
    """Its readers: every output of a stage that declares the example as an input (every
    plan), and every file written from it; nothing else directly (the graph is not transitive)."""
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=Recording(), progress=quiet)
    course = result.course_dir
    data = yaml.safe_load((course / "example.yaml").read_text(encoding="utf-8"))
    data["people"][0] += " (renamed)"
    (course / "example.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    curriculum = load(course / "curriculum.yaml", Curriculum)
    want = {file["path"] for file in data["files"]}
    for stage in REGISTRY:
        if any(source is RunningExample for _name, source in stage.inputs):
            want |= ({stage.output} if stage.scope == "course" else
                     {f"{module_dir(m)}/{stage.output.format(lesson=x.id)}" for m in curriculum.modules
                      for x in m.lessons})
    statuses = stay.status(result.slug, courses_dir=tmp_path)
    assert {path for path, found in statuses.items() if found.state == "stale"} == want
    assert all(statuses[path].why == ["example.yaml"] for path in want)


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


@pytest.mark.parametrize("path, text", [("assets/orders.csv", "id,total\n1,9.50,late\n"),
                                        ("assets/answer.json", '{"id": 1,'),
                                        ("assets/chat-log.txt", "09:14 ana: rollback\x00")])
def test_a_data_file_that_does_not_read_as_its_type_is_asked_for_again(path: str, text: str) -> None:
    """Checked on the answer, before anything is written: repair never rewrites the example
    once plans are made from it, so a broken file would otherwise stay broken."""
    stage = STAGES["example"]
    good = stage.answer_offline({"brief": {"title": "T"}, "audience": {"learners": "Analysts, at a shop"},
                                 "curriculum": {"modules": []}})
    assert stage.artefacts(ModelAnswer(data=good, model="m"), {}, stage.output)  # the offline file reads
    bad = {**good, "files": [*good["files"], {"path": path, "about": "A file.", "text": text}]}
    with pytest.raises(AnswerError, match=rf"files\[1\] \({re.escape(path)}\) does not read as its type"):
        stage.artefacts(ModelAnswer(data=bad, model="m"), {}, stage.output)
