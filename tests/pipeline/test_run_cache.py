"""What a run remembers against the slow path. ``Run.load`` against ``stay.artefacts.load``:
whatever sequence of rewrites a course file goes through, the same size and the same
clock tick included, the run sees what a fresh read sees, errors and all. ``Run.plans``
and the layout's introducers against reading every plan and working them out anew."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.artefacts import ArtefactLoadError, Curriculum, LessonPlan, load
from stay.briefs import DEFAULT_LIMITS
from stay.models import OfflineBackend
from stay.pipeline._commands import open_course
from stay.pipeline._layout import CourseLayout
from stay.pipeline._run import Run, RunConfig
from stay.pipeline._state import Sources, plans_on_disk
from stay.settings import Settings
from stay.stages import REGISTRY, Prompts
from tests.conftest import SAMPLE
from tests.parity.harness import examples

GLOSSARY = (SAMPLE / "glossary.yaml").read_text(encoding="utf-8")
LETTERS = st.sampled_from("abcdefghij")


def _run(root: Path) -> Run:
    config = RunConfig(command="build", slug=root.name, root=root, courses_arg=str(root.parent), authors=(),
                       settings=Settings(), prompts=Prompts.load(), stages=REGISTRY, limits=DEFAULT_LIMITS,
                       sources=Sources(Prompts.load(), Settings().models))
    return Run.start(config, OfflineBackend(), lambda _line: None, None)


def _variant(letter: str) -> str:
    """The sample's glossary with one letter of its first definition changed: another
    artefact of exactly the same size."""
    head, rest = GLOSSARY.split("definition: ", 1)
    return f"{head}definition: {letter}{rest[1:]}"


_outcomes = st.one_of(LETTERS.map(_variant), st.just("terms: [unclosed\n"), st.just("\ufeff\x00"),
                      st.just(None))


@settings(max_examples=examples(40, dev=20), deadline=None)
@given(steps=st.lists(_outcomes, min_size=1, max_size=6))
def test_the_cache_sees_every_rewrite_as_a_fresh_read_does(tmp_path_factory: pytest.TempPathFactory,
                                                          steps: list[str | None]) -> None:
    root = tmp_path_factory.mktemp("course") / "c"
    root.mkdir()
    run = _run(root)
    target = root / "glossary.yaml"
    tick = 1_700_000_000_000_000_000
    for text in steps:
        if text is None:
            target.unlink(missing_ok=True)
        else:
            target.write_bytes(text.encode("utf-8"))
            os.utime(target, ns=(tick, tick))  # every version in the same clock tick
        try:
            expected: object = load(target)
        except ArtefactLoadError as exc:
            expected = ("error", str(exc))
        try:
            seen: object = run.reader.load("glossary.yaml")
        except ArtefactLoadError as exc:
            seen = ("error", str(exc))
        assert seen == expected


def test_an_unchanged_file_is_parsed_once(tmp_path: Path) -> None:
    root = tmp_path / "c"
    shutil.copytree(SAMPLE, root)
    run = _run(root)
    assert run.reader.load("glossary.yaml") is run.reader.load("glossary.yaml")


# -- the plans, the layout and the introducers, remembered between writes --------------------

LESSONS = 6  # the sample's


def _fresh(root: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The slow path: every plan read from disk, and the introducers worked out anew."""
    curriculum = load(root / "curriculum.yaml", Curriculum)
    plans = plans_on_disk(root, curriculum)
    layout = CourseLayout(curriculum)  # a new layout remembers nothing
    return plans, {term: place.id for term, place in layout.introducers(plans).items()}


_steps = st.lists(st.one_of(
    st.tuples(st.just("terms"), st.integers(0, LESSONS - 1), st.integers(0, LESSONS - 1)),
    st.tuples(st.just("reorder"), st.integers(0, 1), st.just(0)),
), min_size=1, max_size=8)


@settings(max_examples=examples(30, dev=15), deadline=None)
@given(steps=_steps)
def test_remembered_plans_and_introducers_equal_a_fresh_read_after_every_write(
        tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, int]]) -> None:
    """Each step is what the pipeline does, through the run (``Run.write``): a plan
    rewritten with another lesson's new terms, or a module's lessons put in another order."""
    root = tmp_path_factory.mktemp("course") / SAMPLE.name
    shutil.copytree(SAMPLE, root)
    settings_ = Settings()
    state = open_course(root, Sources(Prompts.load(), settings_.models), settings_, REGISTRY)
    run = _run(root)
    run.walk.state = state
    run.reader.plans()  # remembered from the start
    for kind, first, second in steps:
        layout = CourseLayout(load(root / "curriculum.yaml", Curriculum))
        places = list(layout.lessons())
        if kind == "terms":
            target, donor = places[first], places[second]
            plan = load(root / layout.plan_path(target), LessonPlan)
            given_terms = load(root / layout.plan_path(donor), LessonPlan).new_terms
            run.writer.write({layout.plan_path(target): plan.model_copy(update={"new_terms": given_terms})})
        else:
            curriculum = layout.curriculum
            module = curriculum.modules[first]
            reordered = module.model_copy(update={"lessons": list(reversed(module.lessons))})
            modules = [reordered if m is module else m for m in curriculum.modules]
            run.writer.write({"curriculum.yaml": curriculum.model_copy(update={"modules": modules})})
        plans, introducers = _fresh(root)
        assert run.reader.plans() == plans
        assert {t: p.id for t, p in run.reader.layout.introducers(run.reader.plans()).items()} == introducers
