"""The artefact graph: acyclic, declared inputs only, and non-transitive staleness."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.artefacts import Brief, Curriculum, LessonEntry, LessonPlan, Module, NewTerm, RunningExample, Section
from stay.pipeline import course_graph
from stay.pipeline._graph import BRIEF, artefact_paths
from stay.pipeline._state import CourseState
from stay.stages import (
    REGISTRY,
    STAGES,
    AllPlansInput,
    DataFilesInput,
    DefinitionsInput,
    EarlierLessonsInput,
    EarlierPlansInput,
    LessonOutcomesInput,
    Stage,
)
from tests.parity.harness import examples

BRIEF_VALUE = Brief(title="T", topic="t", audience="a", time_available="1 hour")


@st.composite
def curricula(draw: st.DrawFn) -> tuple[Curriculum, dict[str, LessonPlan]]:
    modules = []
    for m in range(1, draw(st.integers(1, 5)) + 1):
        lessons = [LessonEntry(id=f"m{m:02d}-l{j:02d}", title=f"L{m}{j}", minutes=20, summary="s")
                   for j in range(1, draw(st.integers(1, 4)) + 1)]
        modules.append(Module(id=f"m{m:02d}", slug=f"mod-{m}", title="M", summary="s", lessons=lessons))
    curriculum = Curriculum(modules=modules)
    ids = [lesson.id for module in modules for lesson in module.lessons]
    plans: dict[str, LessonPlan] = {}
    introduced: list[str] = []
    for lesson_id in ids:
        revisits = draw(st.lists(st.sampled_from(introduced), max_size=2, unique=True)) if introduced else []
        needs = draw(st.lists(st.sampled_from(introduced), max_size=2, unique=True)) if introduced else []
        terms = [f"term {lesson_id} {k}" for k in range(draw(st.integers(0, 2)))]
        plans[lesson_id] = LessonPlan(
            lesson=lesson_id, title="x", minutes=20, outcomes=[],
            sections=[Section(heading="Recap", kind="recap", minutes=20, covers=[])],
            new_terms=[NewTerm(term=t, definition="d") for t in terms],
            prerequisites=needs, revisits=revisits)
        introduced += terms
    return curriculum, plans


def _introducer(plans: dict[str, LessonPlan], curriculum: Curriculum, term: str) -> str:
    for module in curriculum.modules:
        for lesson in module.lessons:
            if any(t.term == term for t in plans[lesson.id].new_terms):
                return f"modules/{module.id}-{module.slug}/{lesson.id}.plan.yaml"
    raise AssertionError(term)


def _expected(stage: Stage, curriculum: Curriculum, plans: dict[str, LessonPlan], module: Module | None,
              lesson: LessonEntry | None) -> set[str]:
    """The files a stage's declared inputs name, for one of its calls, worked out here from
    the declaration (no stage's inputs written out by hand)."""
    def plan_path(m: Module, x: LessonEntry) -> str:
        return f"modules/{m.id}-{m.slug}/{x.id}.plan.yaml"

    every = [(m, x) for m in curriculum.modules for x in m.lessons]
    found: set[str] = set()
    for _name, source in stage.inputs:
        lesson_dir = f"modules/{module.id}-{module.slug}" if module else ""
        if source is Brief:
            found.add(BRIEF)
        elif source is RunningExample:
            found.add(STAGES["example"].output)
        elif isinstance(source, type) and "{lesson}" in (source.FILE or ""):  # this lesson's file of a kind
            assert module and lesson
            found.add(f"{lesson_dir}/{str(source.FILE).format(lesson=lesson.id)}")
        elif isinstance(source, type):
            found.add(str(source.FILE))
        elif isinstance(source, LessonOutcomesInput):
            found.add(STAGES["outcomes"].output)
        elif isinstance(source, DataFilesInput):  # the review: the lesson's files, and the data's
            assert module and lesson
            found |= {f"{lesson_dir}/{str(kind.FILE).format(lesson=lesson.id)}" for kind in source.named_in}
            found.add(STAGES["example"].output)
        elif isinstance(source, DefinitionsInput):
            assert lesson
            plan = plans[lesson.id]
            found |= {_introducer(plans, curriculum, t) for t in [*plan.prerequisites, *plan.revisits]}
        elif isinstance(source, EarlierLessonsInput):
            assert lesson
            found |= {plan_path(m, x) for m, x in every[:every.index((module, lesson))]}
        elif isinstance(source, EarlierPlansInput):
            assert module
            found |= {plan_path(m, x) for m, x in every if curriculum.modules.index(m) < curriculum.modules.index(module)}
        elif isinstance(source, AllPlansInput):
            found |= {plan_path(m, x) for m, x in every}
    return found


DERIVED = {STAGES["example"].output: ["assets/orders.csv", "assets/chat-log.txt"]}
"""Files written from a stage's file as it stands (example.yaml's data files)."""


@given(curricula())
def test_the_artefact_graph_is_acyclic_and_every_artefact_has_its_declared_inputs_only(
    generated: tuple[Curriculum, dict[str, LessonPlan]],
) -> None:
    curriculum, plans = generated
    g = course_graph(curriculum, plans, derived=DERIVED)
    assert nx.is_directed_acyclic_graph(g)
    for source, paths in DERIVED.items():  # a data file hangs from the example alone, and nothing reads it
        assert all(set(g.predecessors(path)) == {source} and not g.out_degree(path) for path in paths)
    for stage in REGISTRY:
        if stage.scope == "course":
            assert set(g.predecessors(stage.output)) == _expected(stage, curriculum, plans, None, None), stage.name
            continue
        for module in curriculum.modules:
            for lesson in module.lessons:
                path = f"modules/{module.id}-{module.slug}/{stage.output.format(lesson=lesson.id)}"
                assert set(g.predecessors(path)) == _expected(stage, curriculum, plans, module, lesson), path
    all_plans = {p for p in g if p.endswith(".plan.yaml")}
    assert set(g.predecessors("glossary.yaml")) == all_plans


@settings(max_examples=examples(60, dev=25), deadline=None)
@given(curricula(), st.data())
def test_staleness_is_non_transitive(generated: tuple[Curriculum, dict[str, LessonPlan]],
                                     data: st.DataObject) -> None:
    curriculum, plans = generated
    g = course_graph(curriculum, plans, derived=DERIVED)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for path in artefact_paths(g):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(f"content of {path}\n")
        state = CourseState(root, g, BRIEF_VALUE)
        state.adopt()
        assert {s for s, _why in state.statuses().values()} == {"current"}

        changed = data.draw(st.sampled_from([p for p in artefact_paths(g) if g.out_degree(p)]))
        (root / changed).write_text("regenerated, with different bytes\n")
        state.record([changed])  # the pipeline rewrote it
        children = set(g.successors(changed))
        statuses = state.statuses()
        for path, (status, why) in statuses.items():
            if path in children:
                assert (status, why) == ("stale", [changed]), path
            else:
                assert status == "current", (path, status)  # grandchildren untouched

        # regenerating the children byte for byte stops the cascade right there
        state.record(sorted(children))
        assert {s for s, _why in state.statuses().values()} == {"current"}


def test_a_hand_edit_is_edited_not_stale(tmp_path: Path) -> None:
    curriculum = Curriculum(modules=[])
    g = course_graph(curriculum)
    for path in artefact_paths(g):
        (tmp_path / path).write_text("x\n")
    state = CourseState(tmp_path, g, BRIEF_VALUE)
    state.adopt()
    (tmp_path / "outcomes.yaml").write_text("edited by a person\n")
    assert state.status("outcomes.yaml") == ("edited", [])
    assert state.status("assessment.yaml") == ("stale", ["outcomes.yaml"])
    (tmp_path / "project.yaml").unlink()
    assert state.status("project.yaml") == ("missing", [])


def test_a_record_made_while_a_checkpoint_writes_is_never_lost(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The wave's threads record while the main thread checkpoints (after each node). A
    record landing after a checkpoint took its snapshot must still reach disk: lost, the
    finished file would look edited by hand to the next run (a CI failure found this)."""
    from stay.pipeline import _state

    g = course_graph(Curriculum(modules=[]))
    for path in artefact_paths(g):
        (tmp_path / path).write_text("x\n")
    state = CourseState(tmp_path, g, BRIEF_VALUE)
    state.adopt()
    (tmp_path / "audience.yaml").write_text("written by the wave\n")
    state.record(["audience.yaml"])  # something to checkpoint
    (tmp_path / "outcomes.yaml").write_text("also written by the wave\n")

    real = _state.write_if_changed
    recorder = threading.Thread(target=state.record, args=(["outcomes.yaml"],))

    def slow_write(path: Path, text: str) -> bool:
        if not recorder.is_alive() and recorder.ident is None:
            recorder.start()  # a wave thread finishes a file while the snapshot is written
            recorder.join(timeout=0.2)  # with the lock it waits for the checkpoint instead
        return real(path, text)

    monkeypatch.setattr(_state, "write_if_changed", slow_write)
    state.checkpoint()
    recorder.join()
    state.checkpoint()  # the runner's next checkpoint
    fresh = CourseState(tmp_path, g, BRIEF_VALUE)  # the next run: nothing shared but the disk
    assert fresh.status("outcomes.yaml") == ("current", [])
    assert fresh.status("audience.yaml") == ("current", [])
