"""Every writer sees the course so far (issue 35 item 1).

A lesson's writer is told every earlier lesson (its title and the terms it introduced),
and each writer of a lesson (its content, exercises and quiz) is given every term the
plan lists under ``prerequisites`` or ``revisits`` with its definition, as the plan that
introduced it wrote it. The requests are read as a model reads them, for the offline
build of every example brief and for a build through the fake Messages API; what they
should show is worked out here from the plans on disk, never by the resolver under test.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import stay
from stay.artefacts import CourseExample, Curriculum, LessonPlan, load, module_dir
from stay.models import AnthropicBackend
from stay.pipeline import build_course
from stay.settings import Settings
from stay.stages import (
    REGISTRY,
    AllPlansInput,
    DefinitionsInput,
    EarlierLessonsInput,
    EarlierPlansInput,
    Source,
    View,
)
from tests.conftest import ROOT
from tests.expected import OFFLINE
from tests.models.fake_api import FakeMessagesAPI, inputs_of, stage_of
from tests.models.helpers import HTTP, KEY
from tests.pipeline.test_build import quiet
from tests.pipeline.test_running_example import Recording, shown

BRIEFS = sorted((ROOT / "examples" / "briefs").glob("*.yaml"))
READERS = {kind: {stage.name: name for stage in REGISTRY for name, source in stage.inputs if isinstance(source, kind)}
           for kind in (EarlierLessonsInput, DefinitionsInput)}
"""Each new input kind -> the stages that declare it, and the name its input goes by."""


def _norm(term: str) -> str:
    return " ".join(term.casefold().split())


def _plans(course: Path) -> list[LessonPlan]:
    curriculum = load(course / "curriculum.yaml", Curriculum)
    return [load(course / module_dir(m) / f"{x.id}.plan.yaml", LessonPlan) for m in curriculum.modules
            for x in m.lessons]


def expected(course: Path) -> dict[str, dict[type, list[dict[str, Any]]]]:
    """lesson id -> what each new input kind should show its writers, from the plans on disk."""
    plans = _plans(course)
    found: dict[str, dict[type, list[dict[str, Any]]]] = {}
    for index, plan in enumerate(plans):
        defined: dict[str, dict[str, Any]] = {}
        for term in [*plan.prerequisites, *plan.revisits]:
            introducer = next(p for p in plans if any(_norm(t.term) == _norm(term) for t in p.new_terms))
            entry = next(t for t in introducer.new_terms if _norm(t.term) == _norm(term))
            defined.setdefault(_norm(term), {"term": entry.term, "definition": entry.definition,
                                             "lesson": introducer.lesson})
        found[plan.lesson] = {
            EarlierLessonsInput: [{"lesson": p.lesson, "title": p.title, "new_terms": [t.term for t in p.new_terms]}
                                  for p in plans[:index]],
            DefinitionsInput: list(defined.values())}
    return found


def check(course: Path, asked: list[tuple[str, dict[str, Any]]]) -> None:
    """Every first request of a reading stage shows what ``expected`` says, for every lesson."""
    want = expected(course)
    for kind, readers in READERS.items():
        seen = {(stage, inputs["plan"]["lesson"]): inputs[readers[stage]] for stage, inputs in asked
                if stage in readers and "current_version" not in inputs}
        assert set(seen) == {(stage, lesson) for stage in readers for lesson in want}, kind.__name__
        for (stage, lesson), value in seen.items():
            assert value == want[lesson][kind], (kind.__name__, stage, lesson)
        assert any(seen.values()), f"no request shows a {kind.__name__}: the check saw nothing"


def test_content_exercises_and_quiz_declare_the_course_so_far() -> None:
    assert {"content", "exercises", "quiz"} <= set(READERS[DefinitionsInput])
    assert "content" in READERS[EarlierLessonsInput]


@pytest.mark.sweep
@pytest.mark.parametrize("brief", BRIEFS, ids=lambda path: path.stem)
def test_the_offline_build_shows_every_writer_the_course_so_far(brief: Path, tmp_path: Path) -> None:
    backend = Recording()
    result = build_course(brief, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert result.complete
    check(result.course_dir, [(request.stage, shown(request)) for request, _answer in backend.seen])
    carries_its_data_and_is_strict_clean(result)


def carries_its_data_and_is_strict_clean(result: stay.BuildResult) -> None:
    """Every course carries the data files its example names (at least one), and passes
    every rule strictly, stay's own among them (the data files' rules too)."""
    example = load(result.course_dir / "example.yaml", CourseExample)
    assert example.files and all((result.course_dir / file.path).is_file() for file in example.files)
    assert result.validation is not None and result.validation.defects == ()


def test_a_build_through_the_messages_api_shows_every_writer_the_course_so_far(tmp_path: Path) -> None:
    with FakeMessagesAPI() as api:
        backend = AnthropicBackend(api_key=KEY, base_url=api.url, sleep=lambda _s: None)
        result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend,
                              settings=Settings(cache=False), progress=quiet)
    assert result.complete
    check(result.course_dir, [(stage_of(body), inputs_of(body)) for body in api.requests])
    carries_its_data_and_is_strict_clean(result)


def test_a_changed_definition_makes_exactly_its_readers_stale(tmp_path: Path) -> None:
    """Its readers: every artefact whose stage declares an input that holds the changed plan
    (worked out here per kind, from the lesson and module of each call), and the glossary."""
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=Recording(), progress=quiet)
    course = result.course_dir
    curriculum = load(course / "curriculum.yaml", Curriculum)
    places = [(m, x.id) for m in curriculum.modules for x in m.lessons]
    plans = {p.lesson: p for p in _plans(course)}
    relied = {_norm(t) for p in plans.values() for t in [*p.prerequisites, *p.revisits]}
    # the first plan with a definition a later lesson relies on
    module, lesson = next((m, x) for m, x in places if any(_norm(t.term) in relied for t in plans[x].new_terms))
    plan_file = course / module_dir(module) / f"{lesson}.plan.yaml"
    data = yaml.safe_load(plan_file.read_text(encoding="utf-8"))
    entry = next(t for t in data["new_terms"] if _norm(t["term"]) in relied)
    entry["definition"] += " (defined again)"
    plan_file.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")

    at = [x for _m, x in places].index(lesson)
    relying = {x for x, p in plans.items() if _norm(entry["term"]) in {_norm(t) for t in [*p.prerequisites,
                                                                                         *p.revisits]}}
    reads: dict[Any, Any] = {
        LessonPlan: lambda m, x: x == lesson, DefinitionsInput: lambda m, x: x in relying,
        EarlierLessonsInput: lambda m, x: [y for _m, y in places].index(x) > at,
        EarlierPlansInput: lambda m, x: curriculum.modules.index(m) > curriculum.modules.index(module),
        AllPlansInput: lambda m, x: True,
    }
    want = {"glossary.yaml"}
    for stage in OFFLINE:  # an offline build reviews no lesson, so it has no review to go stale
        kinds = [kind for _name, source in stage.inputs
                 if (kind := source if isinstance(source, type) else type(source)) in reads]
        for m, x in places if stage.scope != "course" else [(None, None)]:
            if any(reads[kind](m, x) for kind in kinds):
                want.add(stage.output if m is None else f"{module_dir(m)}/{stage.output.format(lesson=x)}")
    assert relying and {f"{module_dir(m)}/{stage.output.format(lesson=x)}" for stage in REGISTRY
                        if stage.name in READERS[DefinitionsInput] for m, x in places if x in relying} <= want
    statuses = stay.status(result.slug, courses_dir=tmp_path)
    stale = {path for path, found in statuses.items() if found.state == "stale"}
    assert stale == want
    own = plan_file.relative_to(course).as_posix()
    assert all(own in statuses[path].why for path in stale)


_TABLE = re.compile(r"<!-- stage-inputs: derived from the declarations -->\n(?P<table>.*?)\n<!-- /stage-inputs -->",
                    re.DOTALL)


KINDS_ROW = ("| an artefact kind | its file (the kind's `FILE`; a lesson file's kind: this lesson's), loaded; "
             "Brief: the brief course.yaml holds; RunningExample: example.yaml as every plan carries it |")


def stage_inputs_table() -> str:
    """docs/pipeline.md's table of what each stage is given, from the declarations alone:
    a row per stage (its inputs in request order), then a row per kind of input."""
    def given(name: str, source: Source) -> str:
        return f"`{name}` ({source.__name__ if isinstance(source, type) else type(source).__name__})"

    rows = ["| stage | phase | scope | given, in the request's order |", "|---|---|---|---|"]
    rows += [f"| `{stage.name}` | {stage.phase} | {stage.scope} | "
             f"{', '.join(given(name, source) for name, source in stage.inputs)} |" for stage in REGISTRY]
    rows += ["", "| input | what it gives |", "|---|---|", KINDS_ROW]
    rows += [f"| {kind.__name__} | {' '.join((kind.__doc__ or '').split())} |"
             for kind in View.__args__]  # type: ignore[attr-defined]
    return "\n".join(rows)


def test_the_docs_show_what_each_stage_is_given_as_declared() -> None:
    found = _TABLE.search((ROOT / "docs" / "pipeline.md").read_text(encoding="utf-8"))
    assert found is not None, "docs/pipeline.md has no stage-inputs table between its markers"
    assert found["table"] == stage_inputs_table(), "docs/pipeline.md's table is not the declarations':\n" + \
        stage_inputs_table()
