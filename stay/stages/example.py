"""The course's running example, after the design gate and before lesson planning: one
case, its people and its data files, written once and read by every module's planning
call, so every lesson of the course works on the same case and names the same files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stay.artefacts import Artefact, CourseExample, DurationLimits
from stay.errors import AnswerError
from stay.stages import _offline
from stay.stages._stage import BriefInput, FileInput, Stage
from stay.validate.rules.ast import parse_problem


def _files_read(made: Sequence[Artefact], _inputs: Mapping[str, Any], _limits: DurationLimits) -> None:
    """Each data file reads as its type (the validator's ast004, on the answer): a CSV whose
    rows do not match its header is asked for again before anything is written, as repair
    never rewrites the example after the plans are made from it."""
    (example,) = made
    assert isinstance(example, CourseExample)
    for index, file in enumerate(example.files):
        problem = parse_problem(file.path, file.text.encode("utf-8"))
        if problem is not None:
            raise AnswerError(f"stage example: example.yaml files[{index}] ({file.path}) does not read as its "
                              f"type: {problem}; ask again")

STAGE = Stage(
    name="example", role="planning", phase="plan", scope="course", answer=CourseExample,
    offline=_offline.example,
    inputs=(("brief", BriefInput()), ("audience", FileInput("audience.yaml")),
            ("curriculum", FileInput("curriculum.yaml"))),
    needs=("example-design.md",),
    check=_files_read,
)
