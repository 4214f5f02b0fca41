"""One declaration per stage: everything else is derived from it, and what a stage is made
with (its prompts, references, schema and model) is an input like its files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from stay.artefacts import Artefact, LessonPlan, RubricCriterion
from stay.pipeline import build_course, course_graph, status
from stay.pipeline._graph import assemble, build, declare, problems
from stay.pipeline._nodes import handlers
from stay.pipeline._walk import command_walk
from stay.settings import DEFAULT_MODELS, Settings
from stay.stages import REGISTRY, AllPlansInput, Prompts, Stage
from stay.testing import RiggedBackend
from tests.conftest import ROOT, run_stay
from tests.expected import OFFLINE, calls, curriculum_of
from tests.parity.harness import reference_report
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


# -- a toy stage, added as docs/pipeline.md says: its module (kind, answer, offline answer),
# -- its registry line, and its prompt file -------------------------------------------------


class Summary(Artefact):
    """The toy stage's artefact and answer: a lesson's key points, in a file of its own."""

    FILE = "{lesson}.summary.yaml"

    lesson: str
    points: list[str]


def summarise(inputs: dict[str, Any]) -> dict[str, Any]:
    """The toy stage's offline answer: its plan's section headings."""
    plan = inputs["plan"]
    return {"lesson": plan["lesson"], "points": [section["heading"] for section in plan["sections"]]}


TOY = Stage(name="summary", role="writing", phase="wave", scope="lesson", answer=Summary, offline=summarise,
            inputs=(("plan", LessonPlan),), needs=())
WITH_TOY = (*REGISTRY, TOY)


def test_a_toy_stage_gets_its_node_its_edges_its_status_its_dispatch_and_its_answer_from_its_declaration(
        tmp_path: Path) -> None:
    graph = build(declare(WITH_TOY))
    assert problems(graph) == []
    wave = [stage.name for stage in WITH_TOY if stage.node_name == "write_lesson"]
    assert graph.nodes["write_lesson"]["stages"] == tuple(wave) and wave[-1] == "summary"
    assert set(handlers(assemble(declare(WITH_TOY)))) == set(graph)
    prompts = prompts_copy(tmp_path, **{})
    (prompts / "summary.md").write_text("# Stage: summary\n\nList the lesson's key points.\n")

    backend = RiggedBackend()  # the offline backend, counting its calls: the toy's requests carry its answer
    result = build_course(HTTP, courses_dir=tmp_path / "c", yes=True, backend=backend, prompts_dir=prompts,
                          stages=WITH_TOY, progress=quiet)
    root = result.course_dir
    from stay.artefacts import Curriculum, artefact_type, load

    curriculum = load(root / "curriculum.yaml", Curriculum)
    lessons = [lesson.id for module in curriculum.modules for lesson in module.lessons]
    assert result.complete and backend.calls["summary"] == len(lessons)
    written = sorted(p.relative_to(root).as_posix() for p in root.glob("modules/*/*.summary.yaml"))
    assert [path.rsplit("/", 1)[1].split(".")[0] for path in written] == lessons
    assert artefact_type(written[0]) is Summary and load(root / written[0]).points  # type: ignore[attr-defined]
    # the build lists each in the manifest, so the layout rule (lay001) knows them: nothing fires
    assert "modules" in written[0] and all(path in load(root / "course.yaml").artefacts  # type: ignore[attr-defined]
                                           for path in written)
    assert result.validation is not None and result.validation.defects == ()

    edges = course_graph(curriculum, stages=WITH_TOY)
    first = written[0]
    assert list(edges.predecessors(first)) == [first.replace(".summary.yaml", ".plan.yaml")]

    settings = Settings.from_env(prompts_dir=prompts)
    statuses = status(SLUG, courses_dir=tmp_path / "c", settings=settings, stages=WITH_TOY)
    assert all(statuses[path].state == "current" for path in written)
    again = RiggedBackend()
    (root / first).unlink()
    rebuilt = build_course(HTTP, courses_dir=tmp_path / "c", yes=True, backend=again, prompts_dir=prompts,
                           stages=WITH_TOY, progress=quiet)
    assert again.calls == {"summary": 1} and rebuilt.written[0] == first


class Digest(Artefact):
    """A second toy's artefact: one file at the course's top, which the format allows."""

    FILE = "digest.yaml"

    lessons: list[str]


DIGEST = Stage(name="digest", role="planning", phase="wave", scope="course", answer=Digest,
               offline=lambda inputs: {"lessons": [plan["title"] for plan in inputs["plans"]]},
               inputs=(("plans", AllPlansInput()),), needs=())


def test_a_stage_added_as_the_docs_say_builds_a_course_both_validators_pass_strictly(tmp_path: Path) -> None:
    prompts = prompts_copy(tmp_path)
    (prompts / "digest.md").write_text("# Stage: digest\n\nList the lessons' titles.\n")
    result = build_course(HTTP, courses_dir=tmp_path / "c", yes=True, prompts_dir=prompts,
                          stages=(*REGISTRY, DIGEST), progress=quiet)
    assert result.complete and result.validation is not None and result.validation.defects == ()
    report = reference_report(result.course_dir, strict=True)
    assert report["courses"][0]["defects"] == [] and report["summary"]["fail"] == 0
    from stay.artefacts import Curriculum, load

    curriculum = load(result.course_dir / "curriculum.yaml", Curriculum)
    titles = [lesson.title for module in curriculum.modules for lesson in module.lessons]
    assert load(result.course_dir / "digest.yaml").lessons == titles  # type: ignore[attr-defined]
    assert "digest.yaml" in load(result.course_dir / "course.yaml").artefacts  # type: ignore[attr-defined]


def _doc_stage() -> str:
    """The Python block under "## A stage plug-in" in docs/plugins.md: what is installed below."""
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    return text.split("\n## A stage plug-in\n", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


def test_a_stage_plug_in_from_the_docs_is_in_the_registry_and_builds_its_files(tmp_path: Path) -> None:
    from stay.stages import STAGE_GROUP

    plugin = tmp_path / "plugin"
    info = plugin / "summary_stage-1.0.dist-info"
    info.mkdir(parents=True)
    (plugin / "summary_stage.py").write_text(_doc_stage())
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: summary-stage\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{STAGE_GROUP}]\nsummary = summary_stage:STAGE\n")
    prompts = prompts_copy(tmp_path)
    (prompts / "summary.md").write_text("# Stage: summary\n\nList the lesson's key points.\n")
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(plugin)])}
    listed = _python(env, "-c", "from stay.stages import REGISTRY; print([stage.name for stage in REGISTRY])")
    assert listed.stdout.strip() == repr([*(stage.name for stage in REGISTRY), "summary"])
    built = _python(env, "-m", "stay", "build", str(HTTP), "--yes", "--courses-dir", str(tmp_path / "c"),
                    "--prompts-dir", str(prompts))
    assert built.returncode == 0, built.stderr
    course = tmp_path / "c" / SLUG
    lessons = [x.id for m in curriculum_of(course).modules for x in m.lessons]
    assert sorted(p.name.split(".")[0] for p in course.glob("modules/*/*.summary.yaml")) == lessons
    (info / "entry_points.txt").write_text(f"[{STAGE_GROUP}]\nsummary = summary_stage:Summary\n")
    refused = _python(env, "-m", "stay", "build", str(HTTP), "--yes", "--courses-dir", str(tmp_path / "d"))
    assert "stage plug-in 'summary' (entry point summary_stage:Summary) is a ModelMetaclass, not a " \
           "stay.stages.Stage" in refused.stderr and refused.returncode != 0


def _python(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=300)


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
    assert len(lessons) == calls(curriculum_of(built / SLUG))["content"]
    assert stale == {path: ["prompts/content.md"] for path in lessons}


def test_a_rebuild_after_a_prompt_change_makes_one_call_per_lesson_content_nothing_else(
        built: Path, tmp_path: Path) -> None:
    course = built / SLUG
    before = tree(course)
    prompts = prompts_copy(tmp_path, **{"content.md": "\nWrite shorter sentences.\n"})
    backend = RiggedBackend()
    build_course(SLUG, courses_dir=built, yes=True, backend=backend, prompts_dir=prompts, progress=quiet)
    assert backend.calls == {"content": calls(curriculum_of(course))["content"]}
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
    # all but what no prompt writes: the glossary (merged from the plans) and the example's data files
    data_files = {p.relative_to(built / SLUG).as_posix() for p in (built / SLUG / "assets").iterdir()}
    assert data_files and {p for p, (state, _why) in common.items() if state == "current"} == {
        "glossary.yaml", *data_files}

    reference = status(SLUG, courses_dir=built, settings=Settings.from_env(
        prompts_dir=prompts_copy(tmp_path / "b", **{"reference__retrieval-and-spacing.md": "\nSpace it.\n"})))
    stale = {p for p, (state, _why) in reference.items() if state == "stale"}
    users = {s.name for s in REGISTRY if "retrieval-and-spacing.md" in Prompts.load().reference_set(s)}
    assert users == {"plan", "quiz"}
    assert stale == {p for p in reference if p.endswith(tuple(s.output.removeprefix("{lesson}") for s in REGISTRY
                                                               if s.name in users))}

    model = status(SLUG, courses_dir=built, settings=Settings(models={**DEFAULT_MODELS, "writing": "claude-x"}))
    stale = {p: why for p, (state, why) in model.items() if state == "stale"}
    writers = tuple(s.output.removeprefix("{lesson}") for s in OFFLINE if s.role == "writing")  # .md, .quiz.yaml, ...
    assert stale and set(stale) == {p for p in model if p.endswith(writers)}
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
    assert spans == command_walk(build(declare(OFFLINE)), "build")  # offline: no review node


def test_a_stage_declaration_that_contradicts_itself_is_refused_naming_every_problem() -> None:
    from stay.errors import GraphError
    from stay.stages import ModuleIdInput

    class Bad(Artefact):
        FILE = "bad.yaml"

    with pytest.raises(GraphError) as caught:
        Stage(name="bad", role="writing", phase="plan", scope="lesson", answer=Bad, offline=summarise,
              inputs=(("module", ModuleIdInput()), ("module", ModuleIdInput())), needs=(),
              shared=("nothing",))
    message = str(caught.value)
    for fragment in ("used twice", "shared input 'nothing'", "needs scope module", "must contain {lesson}",
                     "planning runs per module"):
        assert fragment in message
    with pytest.raises(GraphError, match=r"RubricCriterion is no course file .*; name the kind it makes"):
        Stage(name="bad", role="writing", phase="wave", scope="course", answer=RubricCriterion,
              offline=summarise, inputs=(), needs=())
    with pytest.raises(GraphError) as read_wrong:  # an input names a kind: a course file, and a lesson's at lesson scope
        Stage(name="bad", role="writing", phase="wave", scope="course", answer=Bad, offline=summarise,
              inputs=(("levels", RubricCriterion), ("plan", LessonPlan)), needs=())
    assert "input 'levels' (RubricCriterion) is no course file; name a kind with a FILE" in str(read_wrong.value)
    assert "input 'plan' (LessonPlan) is a lesson's file: it needs scope lesson, not course" in str(read_wrong.value)


def test_a_course_file_is_declared_by_one_kind_only() -> None:
    from stay.errors import ArtefactError

    with pytest.raises(ArtefactError, match=r"Other and Audience both declare the course file audience\.yaml"):
        class Other(Artefact):
            FILE = "audience.yaml"


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


def test_the_sample_brief_builds_the_committed_offline_course_byte_for_byte(
        tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    """The offline course of the sample brief, every file but .state/ and .runs/, against
    the one committed in __snapshots__/test_declarations.ambr: a change to what the
    offline backend writes is a diff of the files it changed, and is committed as one
    (``pytest --snapshot-update``). Each file is read as UTF-8, so bytes that are not
    would fail here rather than be compared loosely."""
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    root = result.course_dir
    paths = sorted(p for p in tree(root) if not p.startswith(".state/"))
    assert {path: (root / path).read_bytes().decode("utf-8") for path in paths} == snapshot


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
