"""Every file a stage's texts tell it to read reaches the stage (issue 19 item 4).

The texts of a stage are what its request carries as instructions: the common preamble,
its prompt template and its Markdown references. Wherever they name a course file or a
data file as a source ("recorded in `audience.yaml`", "take the setting from
`audience.yaml`", "the limits come from `house-style.yaml`", "house style's limits"),
the stage must receive that file: a course file as one of its declared inputs, a data
file as one of its reference documents. Everything is derived from ``REGISTRY`` and the
texts; the file names are the stages' own outputs and the YAML reference documents.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from stay.artefacts import Brief, RunningExample
from stay.stages import (
    REGISTRY,
    STAGES,
    AllPlansInput,
    DataFilesInput,
    DefinitionsInput,
    EarlierLessonsInput,
    EarlierPlansInput,
    LessonOutcomesInput,
    ModuleIdInput,
    Prompts,
    Source,
    Stage,
    View,
)

PROMPTS = Prompts.load()
DATA_FILES = tuple(name for name in PROMPTS.references if name.endswith(".yaml"))
COURSE_FILES = tuple(stage.output for stage in REGISTRY)
"""Each as its stage declares it: ``audience.yaml``, ``{lesson}.plan.yaml``, ..."""


def _spellings(file: str) -> list[str]:
    """How the texts write a file: ``<lesson>.plan.yaml`` or ``plan.yaml`` for a lesson
    file, and a data file also in prose (``house style``, as in "house style's limits")."""
    if "{lesson}" in file:
        return [file.replace("{lesson}", "<lesson>"), file.replace("{lesson}.", "")]
    if file in DATA_FILES:
        return [file, file.removesuffix(".yaml").replace("-", " ")]
    return [file]


_NAME = "|".join(rf"(?<![\w<>.-]){re.escape(s)}(?![\w-])" for f in (*COURSE_FILES, *DATA_FILES)
                 for s in sorted(_spellings(f), key=len, reverse=True))
_ONE = rf"`?(?:{_NAME})`?"
# A source cue: the name is what something is read from or found in ("come from", "recorded
# in", "listed ... in", "in ... which is the authority", "Respect ..."), or it owns what is
# used ("house style's limits"). A list ("X and Y", "X or Y") counts name by name.
_FROM = re.compile(rf"\b(?:from|in|at|respect)\s+(?:the\s+)?({_ONE}(?:\s*(?:,|and|or)\s*{_ONE})*)", re.I)
_OWNS = re.compile(rf"({_ONE})'s\b", re.I)


def _file(spelled: str) -> str:
    bare = spelled.strip("`").lower()
    return next(f for f in (*COURSE_FILES, *DATA_FILES) if bare in _spellings(f))


def _texts(stage: Stage) -> Iterator[tuple[str, str]]:
    yield "common.md", PROMPTS.templates["common"]
    yield f"{stage.prompt}.md", PROMPTS.template(stage.prompt)
    for name in PROMPTS.reference_set(stage):
        if name.endswith(".md"):
            yield f"reference/{name}", PROMPTS.references[name]


def named(stage: Stage) -> dict[str, str]:
    """file -> the first line of the stage's texts that names it as a source. Table rows and
    headings are left out: they describe the course's files, they instruct no stage."""
    found: dict[str, str] = {}
    for where, text in _texts(stage):
        for line in text.splitlines():
            if line.lstrip().startswith(("|", "#")):
                continue
            for match in (*_FROM.finditer(line), *_OWNS.finditer(line)):
                for spelled in re.findall(_NAME, match.group(1), re.I):
                    found.setdefault(_file(spelled), f"{where}: {line.strip()}")
    return found


def written_before(stage: Stage) -> set[str]:
    """The course files that exist when the stage runs: those of the stages before it, in
    the registry's order, save the wave's, whose stages run side by side. A text naming a
    later file ("pick methods in `assessment.yaml`" in a reference the curriculum shares)
    speaks to the stage that writes it, not to this one."""
    index = REGISTRY.index(stage)
    return {earlier.output for earlier in REGISTRY[:index] if "wave" not in (earlier.phase, stage.phase)
            or earlier.phase != stage.phase}  # the review runs after the wave, and reads it


PLANS = STAGES["plan"].output
_READS: dict[type, str | None] = {
    LessonOutcomesInput: STAGES["outcomes"].output, DataFilesInput: STAGES["example"].output,
    DefinitionsInput: PLANS, EarlierLessonsInput: PLANS, EarlierPlansInput: PLANS, AllPlansInput: PLANS, ModuleIdInput: None,
}


def _reads(source: Source) -> str | None:
    if isinstance(source, type):  # a kind: its FILE (the brief is course.yaml's; the running example, example.yaml)
        return "course.yaml" if source is Brief else STAGES["example"].output if source is RunningExample \
            else source.FILE
    return _READS[type(source)]


def received(stage: Stage) -> set[str]:
    """What reaches the stage: its declared inputs' files and its data-file references."""
    files = {_reads(source) for _name, source in stage.inputs}
    return {f for f in files if f} | {name for name in PROMPTS.reference_set(stage) if name in DATA_FILES}


def test_every_source_kind_says_what_it_reads() -> None:
    assert set(_READS) == set(View.__args__)  # type: ignore[attr-defined]


@pytest.mark.parametrize("stage", REGISTRY, ids=lambda stage: stage.name)
def test_a_stage_receives_every_file_its_texts_tell_it_to_read(stage: Stage) -> None:
    wanted = {file: line for file, line in named(stage).items()
              if file in DATA_FILES or file in written_before(stage)}
    missing = {file: line for file, line in wanted.items() if file not in received(stage)}
    assert missing == {}, f"stage {stage.name} is told to read files it never receives: {missing}"


def test_the_finder_sees_the_instructions_the_issue_quotes() -> None:
    """The three the issue found by reading, so the finder cannot silently find nothing:
    "pitch each lesson at the prior knowledge recorded in audience.yaml" (planning),
    "take the setting from audience.yaml" (planning), and "draw distractors first from
    audience.yaml misconceptions" (assessment, capstone)."""
    audience = STAGES["audience"].output
    lines = [named(STAGES[name])[audience] for name in ("plan", "assessment", "capstone")]
    assert "recorded in `audience.yaml`" in lines[0] or "from `audience.yaml`" in lines[0]
    assert all("audience.yaml" in line for line in lines)
    assert "house-style.yaml" in named(STAGES["quiz"])


def test_every_request_shows_the_model_each_file_its_stage_reads(tmp_path: Path) -> None:
    """In the requests themselves, as the model reads them: every call of a stage that reads
    audience.yaml (planning, assessment and the capstone among them) shows it, whole."""
    from stay.artefacts import Audience, load, to_data
    from stay.pipeline import build_course
    from tests.pipeline.test_build import quiet
    from tests.pipeline.test_running_example import BRIEF, Recording, shown

    backend = Recording()
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    audience = to_data(load(result.course_dir / STAGES["audience"].output, Audience))
    from tests.expected import OFFLINE  # the stages an offline build asks: no review

    readers = {stage.name: name for stage in OFFLINE for name, source in stage.inputs
               if source is Audience}
    assert {"plan", "assessment", "capstone"} <= set(readers)
    asked = [request for request, _answer in backend.seen if request.stage in readers]
    assert {request.stage for request in asked} == set(readers)
    for request in asked:
        assert shown(request)[readers[request.stage]] == audience, (request.stage, request.artefact)
