"""Stages are pure, their reference sets are pinned, and their requests are snapshotted."""

from __future__ import annotations

import builtins
import hashlib
import random
import time
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

import stay.artefacts as artefacts
from stay.artefacts import (
    Artefact,
    Assessment,
    Audience,
    Brief,
    CourseExample,
    Curriculum,
    LessonPlan,
    Outcomes,
    RunningExample,
)
from stay.models import ModelAnswer, ModelRequest, OfflineBackend
from stay.pipeline._layout import DATA_CHARS
from stay.stages import (
    COMMON_REFERENCES,
    SHARED_TEMPLATES,
    STAGES,
    AllPlansInput,
    DataFilesInput,
    DefinitionsInput,
    EarlierLessonsInput,
    EarlierPlansInput,
    LessonOutcomesInput,
    ModuleIdInput,
    Prompts,
    Stage,
)
from tests.conftest import ROOT, SAMPLE

PROMPTS = Prompts.load()


def test_every_stage_holds_the_common_references_so_every_call_shares_one_prefix() -> None:
    """course-state.md and the two data files are sent first, as one cached block: a stage
    without one of them starts its own prefix, and the cross-stage cache reads nothing."""
    requests = _sample_requests()
    missing = {name: [ref for ref in COMMON_REFERENCES if ref not in PROMPTS.reference_set(STAGES[name])] for name in STAGES}
    assert {name: refs for name, refs in missing.items() if refs} == {}
    assert len({request.system[1].text for request in requests.values()}) == 1


def test_every_reference_document_is_used_by_some_stage() -> None:
    """Each stage's own set is pinned by its request's snapshot (``references``)."""
    assert {name for stage in STAGES.values() for name in PROMPTS.reference_set(stage)} == set(PROMPTS.references)


@pytest.mark.parametrize("name", ["bloom-verbs.yaml", "house-style.yaml"])
def test_the_verb_table_a_stage_is_told_is_the_table_it_is_checked_against(name: str) -> None:
    assert PROMPTS.references[name] == (ROOT / "data" / name).read_text(encoding="utf-8")
    assert not (ROOT / "prompts" / "reference" / name).exists()  # one copy: the data directory's


def test_reference_documents_have_substance() -> None:
    for name in PROMPTS.references:
        if name.endswith(".md"):
            text = PROMPTS.references[name]
            assert text.startswith("# ") and len(text.split()) > 500, name


def test_one_template_per_stage() -> None:
    assert set(PROMPTS.templates) == {*STAGES, *SHARED_TEMPLATES}


def _sample_inputs() -> dict[str, Any]:
    """The sample brief and the sample course's artefacts: the stages' inputs."""
    def load(rel: str, model: type[Any]) -> Any:
        return artefacts.load(SAMPLE / rel, model)

    brief = Brief.from_yaml(ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml")
    audience = load("audience.yaml", Audience)
    curriculum = load("curriculum.yaml", Curriculum)
    outcomes = load("outcomes.yaml", Outcomes)
    assessment = load("assessment.yaml", Assessment)
    module = curriculum.modules[1]
    prefix = f"modules/{module.id}-{module.slug}"
    first = [load(f"modules/{curriculum.modules[0].id}-{curriculum.modules[0].slug}/{x.id}.plan.yaml",
                  LessonPlan) for x in curriculum.modules[0].lessons]
    plan = load(f"{prefix}/{module.lessons[0].id}.plan.yaml", LessonPlan)
    own = [o for o in outcomes.outcomes if o.lesson == plan.lesson]
    earlier = [{"lesson": p.lesson, "title": p.title, "new_terms": [t.term for t in p.new_terms]} for p in first]
    defined = {t.term: {"term": t.term, "definition": t.definition, "lesson": p.lesson}
               for p in first for t in p.new_terms}
    definitions = [defined[t] for t in dict.fromkeys([*plan.prerequisites, *plan.revisits]) if t in defined]
    return dict(brief=brief, audience=audience, curriculum=curriculum, outcomes=outcomes,
                assessment=assessment, module=module, prefix=prefix, first=first, plan=plan, own=own,
                earlier=earlier, definitions=definitions)


INPUTS = _sample_inputs()


def _typed_inputs(inputs: dict[str, Any] = INPUTS) -> dict[str, dict[str, Any]]:
    """Every stage's named inputs for the sample brief, as the runner would resolve them:
    each stage's declared inputs, found by their kind (no stage's inputs written out here).
    Files are read once, into ``inputs["files"]`` (the first call is at import)."""
    files = inputs.setdefault("files", {})  # each read from the sample (or made) as a declaration names its kind
    return {stage.name: _resolve(stage, inputs, files) for stage in STAGES.values()}


def _resolve(stage: Stage, inputs: dict[str, Any], files: dict[str, Any]) -> dict[str, Any]:
    first = inputs["first"]
    by_kind: dict[type, Any] = {
        ModuleIdInput: inputs["module"].id, EarlierPlansInput: first,
        AllPlansInput: first, LessonOutcomesInput: inputs["own"],
        EarlierLessonsInput: inputs["earlier"], DefinitionsInput: inputs["definitions"],
    }
    lesson = f"{inputs['prefix']}/{inputs['plan'].lesson}"
    return {name: _kind(source, lesson, inputs, files) if isinstance(source, type)
            else _data_files(source, lesson, inputs, files) if isinstance(source, DataFilesInput)
            else by_kind[type(source)] for name, source in stage.inputs}


def _kind(kind: type[Artefact], lesson: str, inputs: dict[str, Any], files: dict[str, Any]) -> Any:
    """A kind's sample: the brief, the sample lesson's plan, the running example as plans carry it, or its file."""
    if kind in (Brief, LessonPlan):
        return inputs["brief" if kind is Brief else "plan"]
    if kind is RunningExample:
        return _sample_file(CourseExample.FILE, inputs, files).running()
    return _sample_file(str(kind.FILE).format(lesson=lesson), inputs, files)


def _data_files(source: DataFilesInput, lesson: str, inputs: dict[str, Any], files: dict[str, Any]) -> dict[str, str]:
    """The example's data files the sample lesson's files name, by path, their text cut as a request cuts it."""
    said = "".join(artefacts.dump(_sample_file(str(kind.FILE).format(lesson=lesson), inputs, files))
                   for kind in source.named_in)
    return {data.path: data.text[:DATA_CHARS] for data in _sample_file(CourseExample.FILE, inputs, files).files
            if data.path in said}


def _sample_file(path: str, inputs: dict[str, Any], files: dict[str, Any]) -> Any:
    """A course file a stage reads: the sample course's, or, for a kind the sample has none
    of (a stage added since it was written), what its stage makes offline from its own
    sample inputs; so a new stage's sample inputs are derived, never written out here."""
    if path not in files:
        if (SAMPLE / path).is_file():
            files[path] = artefacts.load(SAMPLE / path)
        else:
            (maker,) = [stage for stage in STAGES.values() if stage.output == path]
            typed = _resolve(maker, inputs, files)
            answer = ModelAnswer(data=maker.answer_offline(maker.request(typed, PROMPTS, path).inputs),
                                 model="offline")
            (files[path],) = maker.artefacts(answer, typed, path)
    return files[path]


def _artefact(stage: Stage, inputs: dict[str, Any] = INPUTS) -> str:
    """The file a sample call of ``stage`` is for: a lesson's (a module's, for module scope)
    in the sample's second module, or the course file."""
    if stage.scope == "course":
        return stage.output
    lesson = inputs["plan"].lesson if stage.scope == "lesson" else "*"
    return f"{inputs['prefix']}/{stage.output.format(lesson=lesson)}"


_typed_inputs()  # every file the stages read, read now: the test of purity forbids reading later


def _sample_requests(inputs: dict[str, Any] = INPUTS) -> dict[str, ModelRequest]:
    """Every stage's request for the sample brief: no file is read here."""
    return {name: STAGES[name].request(typed, PROMPTS, _artefact(STAGES[name], inputs))
            for name, typed in _typed_inputs(inputs).items()}


@pytest.mark.parametrize("stage", list(STAGES))
def test_rendered_request_for_the_sample_brief(stage: str, snapshot: SnapshotAssertion) -> None:
    request = _sample_requests()[stage]
    assert request.stage == stage and request.role == STAGES[stage].role
    # preamble, the references every stage shares (cached: one prefix across stages), the stage's
    # instructions, its own references (cached only for a stage called more than once a run)
    (instructions,) = [b for b in request.system if b.label == "the stage instructions (prompt template)"]
    documents = [b for b in request.system if b.label == "the reference documents"]
    assert not instructions.cache and request.system[0].text == PROMPTS.templates["common"].strip()
    own = [name for name in PROMPTS.reference_set(STAGES[stage]) if name not in COMMON_REFERENCES]
    assert [b.cache for b in documents] == [True] + ([bool(request.shared)] if own else [])  # no own: no block
    text = "\n\n".join(b.text for b in documents)
    names = [line.split('"')[1] for line in text.splitlines() if line.startswith("<reference ")]
    assert sorted(names) == sorted(PROMPTS.reference_set(STAGES[stage])) and len(names) == len(set(names))
    assert {
        "role": request.role, "artefact": request.artefact, "output": request.output_name,
        "schema_fields": sorted(request.output_schema["properties"]),
        "instructions": instructions.text, "references": names,
        "references_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "shared": request.shared, "user": request.user, "max_tokens": request.max_tokens,
    } == snapshot


def test_the_stable_prefix_is_the_same_for_every_lesson_of_the_wave() -> None:
    plans, outcomes, audience = INPUTS["first"], INPUTS["outcomes"], INPUTS["audience"]
    for stage in ("content", "exercises", "quiz"):
        requests = []
        for plan in plans:
            inputs = {"plan": plan, "outcomes": [o for o in outcomes.outcomes if o.lesson == plan.lesson],
                      "audience": audience, "earlier_lessons": [], "definitions": []}
            requests.append(STAGES[stage].request(inputs, PROMPTS, f"{plan.lesson}.x"))
        assert len({r.user for r in requests}) == len(plans)  # each lesson asks something different
        assert len({(r.system, r.shared) for r in requests}) == 1  # behind one shared, cached prefix


def test_stages_do_no_io_clock_or_randomness(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _sample_requests()
    backend = OfflineBackend()
    answers: dict[str, ModelAnswer] = {s: backend.complete(r, "offline") for s, r in requests.items()}

    def forbidden(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a stage touched I/O, the clock or randomness")

    for target, name in ((builtins, "open"), (Path, "read_text"), (Path, "read_bytes"),
                         (time, "time"), (time, "monotonic"), (random, "random")):
        monkeypatch.setattr(target, name, forbidden)
    again = _sample_requests()
    assert again == requests  # same inputs, same request
    typed = _typed_inputs()
    for name, answer in answers.items():
        made = STAGES[name].artefacts(answer, typed[name], requests[name].artefact)
        assert made and all(isinstance(m, artefacts.Artefact) for m in made)
