"""One declaration per stage: everything else is derived from it, and what a stage is made
with (its prompts, references, schema and model) is an input like its files."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from stay.artefacts import Artefact
from stay.models import ModelAnswer
from stay.pipeline import build_course, course_graph, status
from stay.pipeline._graph import assemble, build, declare, problems
from stay.pipeline._nodes import handlers
from stay.pipeline._walk import command_walk
from stay.requests import ModelRequest
from stay.settings import DEFAULT_MODELS, Settings
from stay.stages import REGISTRY, LessonPlanInput, Prompts, Stage, reference_set
from stay.testing import RiggedBackend
from tests.conftest import ROOT, run_stay
from tests.pipeline.test_build import quiet, tree

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
SLUG = "how-http-requests-travel"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAY_PROMPTS_DIR", raising=False)


def prompts_copy(tmp_path: Path, **changes: str) -> Path:
    """A copy of the packaged prompts, with text appended to the named files."""
    target = tmp_path / "prompts"
    shutil.copytree(Prompts.load().directory, target)
    for name, extra in changes.items():
        path = target / name.replace("__", "/")
        path.write_text(path.read_text() + extra)
    return target


# -- a toy stage: one module, one registry line, one prompt file --------------------------


class Summary(Artefact):
    """The toy stage's answer: a lesson's key points."""

    lesson: str
    points: list[str]


TOY = Stage(name="summary", role="writing", phase="wave", scope="lesson", output="{lesson}.summary.yaml",
            answer=Summary, inputs=(("plan", LessonPlanInput()),), references=reference_set("course-state.md"))
WITH_TOY = (*REGISTRY, TOY)


class ToyBackend(RiggedBackend):
    """The offline backend, answering the toy stage too."""

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        if request.stage != "summary":
            return super().complete(request, model)
        with self._lock:
            self.calls["summary"] = self.calls.get("summary", 0) + 1
        plan = request.inputs["plan"]
        return ModelAnswer(data={"lesson": plan["lesson"], "points": [s["heading"] for s in plan["sections"]]},
                           model="offline")


def test_a_toy_stage_gets_its_node_its_edges_its_status_and_its_dispatch_from_its_declaration(
        tmp_path: Path) -> None:
    graph = build(declare(WITH_TOY))
    assert problems(graph) == []
    assert graph.nodes["write_lesson"]["stages"] == ("content", "exercises", "quiz", "summary")
    assert set(handlers(assemble(declare(WITH_TOY)))) == set(graph)
    prompts = prompts_copy(tmp_path, **{})
    (prompts / "summary.md").write_text("# Stage: summary\n\nList the lesson's key points.\n")

    backend = ToyBackend()
    result = build_course(HTTP, courses_dir=tmp_path / "c", yes=True, backend=backend, prompts_dir=prompts,
                          stages=WITH_TOY, progress=quiet)
    assert result.complete and backend.calls["summary"] == 6
    root = result.course_dir
    written = sorted(p.relative_to(root).as_posix() for p in root.glob("modules/*/*.summary.yaml"))
    assert len(written) == 6
    from stay.artefacts import Curriculum, load

    edges = course_graph(load(root / "curriculum.yaml", Curriculum), stages=WITH_TOY)
    first = written[0]
    assert list(edges.predecessors(first)) == [first.replace(".summary.yaml", ".plan.yaml")]

    settings = Settings.from_env(prompts_dir=prompts)
    statuses = status(SLUG, courses_dir=tmp_path / "c", settings=settings, stages=WITH_TOY)
    assert all(statuses[path].state == "current" for path in written)
    again = ToyBackend()
    (root / first).unlink()
    rebuilt = build_course(HTTP, courses_dir=tmp_path / "c", yes=True, backend=again, prompts_dir=prompts,
                           stages=WITH_TOY, progress=quiet)
    assert again.calls == {"summary": 1} and rebuilt.written[0] == first


# -- prompts, references, schema and model are inputs ------------------------------------


@pytest.fixture
def built(tmp_path: Path) -> Path:
    return build_course(HTTP, courses_dir=tmp_path / "c", yes=True, progress=quiet).course_dir.parent


def test_changing_one_prompt_makes_exactly_its_stages_artefacts_stale_and_names_the_cause(
        built: Path, tmp_path: Path) -> None:
    prompts = prompts_copy(tmp_path, **{"content.md": "\nWrite shorter sentences.\n"})
    found = status(SLUG, courses_dir=built, settings=Settings.from_env(prompts_dir=prompts))
    stale = {path: why for path, (state, why) in found.items() if state != "current"}
    lessons = sorted(p for p in found if p.endswith(".md"))
    assert len(lessons) == 6 and stale == {path: ["prompts/content.md"] for path in lessons}


def test_a_rebuild_after_a_prompt_change_makes_one_call_per_lesson_content_nothing_else(
        built: Path, tmp_path: Path) -> None:
    course = built / SLUG
    before = tree(course)
    prompts = prompts_copy(tmp_path, **{"content.md": "\nWrite shorter sentences.\n"})
    backend = RiggedBackend()
    build_course(SLUG, courses_dir=built, yes=True, backend=backend, prompts_dir=prompts, progress=quiet)
    assert backend.calls == {"content": 6}
    after = tree(course)
    changed = {p for p in after if after[p] != before.get(p)}
    assert changed <= {*(p for p in after if p.endswith(".md") and p.startswith("modules/")),
                       ".state/hashes.json", ".state/run-log.md"}
    again = RiggedBackend()
    build_course(SLUG, courses_dir=built, yes=True, backend=again, prompts_dir=prompts, progress=quiet)
    assert again.total_calls == 0


def test_the_common_preamble_a_reference_and_the_model_are_inputs_too(built: Path, tmp_path: Path) -> None:
    common = status(SLUG, courses_dir=built,
                    settings=Settings.from_env(prompts_dir=prompts_copy(tmp_path / "a", **{"common.md": "\nBe brief.\n"})))
    assert {state for state, _why in common.values() if state != "orphaned"} == {"current", "stale"}
    assert all(why == ["prompts/common.md"] for state, why in common.values() if state == "stale")
    assert sum(state == "stale" for state, _why in common.values()) == len(common) - 1  # all but the glossary

    reference = status(SLUG, courses_dir=built, settings=Settings.from_env(
        prompts_dir=prompts_copy(tmp_path / "b", **{"reference__retrieval-and-spacing.md": "\nSpace it.\n"})))
    stale = {p for p, (state, _why) in reference.items() if state == "stale"}
    users = {s.name for s in REGISTRY if "retrieval-and-spacing.md" in s.references}
    assert users == {"plan", "quiz"}
    assert stale == {p for p in reference if p.endswith((".plan.yaml", ".quiz.yaml"))}

    model = status(SLUG, courses_dir=built, settings=Settings(models={**DEFAULT_MODELS, "writing": "claude-x"}))
    stale = {p: why for p, (state, why) in model.items() if state == "stale"}
    assert stale and set(stale) == {p for p in model if p.endswith((".md", ".exercises.yaml", ".quiz.yaml"))}
    assert all(why == ["model"] for why in stale.values())


def test_the_command_line_names_the_prompt_and_takes_the_prompts_dir_from_either_place(
        built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = prompts_copy(tmp_path, **{"quiz.md": "\nAsk one more.\n"})
    lesson = next(p for p in status(SLUG, courses_dir=built) if p.endswith("m01-l01.quiz.yaml"))
    line = f"stale    {lesson}  <- prompts/quiz.md"
    flag = run_stay("status", SLUG, "--courses-dir", str(built), "--prompts-dir", str(prompts))
    env = run_stay("status", SLUG, "--courses-dir", str(built), env={"STAY_PROMPTS_DIR": str(prompts)})
    assert line in flag.stdout and line in env.stdout


def test_adopt_keeps_a_finished_course_after_a_prompt_tweak_without_a_call(built: Path, tmp_path: Path) -> None:
    prompts = prompts_copy(tmp_path, **{"content.md": "\nTweak.\n"})
    settings = Settings.from_env(prompts_dir=prompts)
    from stay.pipeline import adopt

    adopted = adopt(SLUG, courses_dir=built, settings=settings)
    assert {state for state, _why in adopted.values()} == {"current"}
    backend = RiggedBackend()
    result = build_course(SLUG, courses_dir=built, backend=backend, prompts_dir=prompts, progress=quiet)
    assert result.complete and backend.total_calls == 0


def test_a_ledger_written_before_sources_were_recorded_judges_files_only(built: Path, tmp_path: Path) -> None:
    import json

    ledger = built / SLUG / ".state" / "hashes.json"
    document = json.loads(ledger.read_text())
    for entry in document["artefacts"].values():
        entry.pop("sources", None)
    ledger.write_text(json.dumps(document))
    prompts = prompts_copy(tmp_path, **{"content.md": "\nTweak.\n"})
    found = status(SLUG, courses_dir=built, settings=Settings.from_env(prompts_dir=prompts))
    assert {state for state, _why in found.values()} == {"current"}  # an upgrade rebuilds nothing


# -- the graph is the truth ---------------------------------------------------------------------


def test_every_node_of_the_graph_runs_for_some_command_and_every_stage_node_has_its_handler() -> None:
    graph = build(declare())
    walked = {node for command in graph.graph["commands"] for node in command_walk(graph, command)}
    assert walked == set(graph)
    assert set(handlers(assemble())) == set(graph)


def test_a_full_build_traces_a_span_for_every_node_it_walks(tmp_path: Path) -> None:
    import json

    result = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    path = result.course_dir / ".runs" / "traces" / f"{result.trace_id}.jsonl"
    spans = [r["name"] for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "span"]
    assert spans == command_walk(build(declare()), "build")


def test_a_stage_declaration_that_contradicts_itself_is_refused_naming_every_problem() -> None:
    from stay.errors import GraphError
    from stay.stages import ModuleIdInput

    with pytest.raises(GraphError) as caught:
        Stage(name="bad", role="writing", phase="plan", scope="lesson", output="bad.yaml", answer=Summary,
              inputs=(("module", ModuleIdInput()), ("module", ModuleIdInput())), references=(),
              shared=("nothing",))
    message = str(caught.value)
    for fragment in ("used twice", "shared input 'nothing'", "needs scope module", "must contain {lesson}",
                     "planning runs per module"):
        assert fragment in message


def test_settings_are_read_once_and_refuse_a_bad_value_in_one_line() -> None:
    from stay.errors import UsageError

    read = Settings.from_env({"STAY_WAVE_CONCURRENCY": "3", "STAY_MODEL_PLANNING": "claude-y", "STAY_CACHE": "off",
                              "ANTHROPIC_API_KEY": "sk-ant-secret", "SOURCE_DATE_EPOCH": "1780000000",
                              "STAY_REQUEST_TIMEOUT": "12.5", "STAY_PROMPTS_DIR": "/tmp/p"})
    assert (read.wave_concurrency, read.model("planning"), read.cache, read.request_timeout) == (3, "claude-y",
                                                                                               False, 12.5)
    assert read.chosen_backend == "anthropic" and read.prompts_dir == Path("/tmp/p")
    assert "sk-ant-secret" not in repr(read)
    for name, value in (("STAY_WAVE_CONCURRENCY", "0"), ("STAY_REPAIR_ROUNDS", "two"), ("STAY_CACHE", "maybe"),
                        ("STAY_REQUEST_TIMEOUT", "-1"), ("SOURCE_DATE_EPOCH", "soon"), ("STAY_BACKEND", "gpt")):
        with pytest.raises(UsageError, match=name):
            Settings.from_env({name: value})


def test_the_same_brief_builds_the_same_course_files_through_the_declared_stages(tmp_path: Path) -> None:
    """The redesign changed no course byte: the sample brief's files hash as they did."""
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    files = {p: h for p, h in tree(result.course_dir).items() if not p.startswith(".state/")}
    digest = hashlib.sha256("".join(f"{p}:{h}\n" for p, h in sorted(files.items())).encode()).hexdigest()
    assert digest == EXPECTED_COURSE_DIGEST


EXPECTED_COURSE_DIGEST = "35934f73ad668b94c9f5e154005c84e4361f84386a152267e15e5481117c3db1"
"""The sample brief built offline (every file but .state/ and .runs/): at 5830015, before the
redesign, and since issue 19 item 6 with each module's running example in its plans and lessons."""


def test_a_guard_enforces_the_gates_its_node_declares(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The handlers are bound from the graph: the same command refuses or goes on as its
    guard node's ``requires`` says, with no tuple of gates of its own to disagree."""
    from stay.errors import PipelineError
    from stay.pipeline import _runner, approve, run_command

    build_course(HTTP, courses_dir=tmp_path, progress=quiet)  # stops at the design gate
    approve(SLUG, "design", courses_dir=tmp_path, by="reviewer")
    declared = assemble(declare())
    stricter = assemble(declare())
    stricter.nodes["require_design"]["requires"] = ("design", "plan")
    monkeypatch.setattr(_runner, "_pipeline", lambda _stages: stricter)
    with pytest.raises(PipelineError, match="stay plan needs the plan approval to hold"):
        run_command("plan", SLUG, courses_dir=tmp_path, progress=quiet)
    monkeypatch.setattr(_runner, "_pipeline", lambda _stages: declared)
    assert run_command("plan", SLUG, courses_dir=tmp_path, progress=quiet).stopped_at == "plan gate"  # past the guard
