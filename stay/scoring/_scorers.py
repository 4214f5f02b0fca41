"""The scorers' registry: ``@scorer`` declares a scorer (its name, the key its judge answers
in, what each item is judged on); stay's own and installed plug-ins are found through the
``stay.scorers`` entry points, and every list of scorers (reports, fakes, tests) derives from it."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from stay.errors import UsageError
from stay.models import ModelRequest
from stay.scoring._core import REGISTRY, CourseOnDisk, Declared, Judge, ScoreResult

SCORER_GROUP = "stay.scorers"
BUILTIN_SCORERS: Mapping[str, str] = {
    "outcome_coverage": "stay.scoring.builtin:OutcomeCoverage",
    "distractor_quality": "stay.scoring.builtin:DistractorQuality",
    "exercise_alignment": "stay.scoring.builtin:ExerciseAlignment",
    "rubric_specificity": "stay.scoring.builtin:RubricSpecificity",
    "answer_key": "stay.scoring.builtin:AnswerKey",
    "consistency": "stay.scoring.builtin:Consistency",
    "validator": "stay.scoring.builtin:Validator",
    "answer_cues": "stay.scoring.builtin:AnswerCues",
}
"""stay's own scorers, as pyproject.toml declares them (a test holds the two equal)."""


class Scorer(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int:
        """Bumped whenever the instructions or logic change: runs of two versions are not compared."""
        ...

    def score(self, course: CourseOnDisk) -> ScoreResult: ...


def registered() -> dict[str, Declared]:
    """Every scorer: stay's own, then installed ``stay.scorers`` plug-ins (a built-in name is stay's)."""
    return dict(_registered(tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _registered(path: tuple[str, ...]) -> tuple[tuple[str, Declared], ...]:
    from importlib.metadata import EntryPoint, entry_points

    points = [EntryPoint(name, value, SCORER_GROUP) for name, value in BUILTIN_SCORERS.items()]
    points += sorted((p for p in entry_points(group=SCORER_GROUP) if p.name not in BUILTIN_SCORERS),
                     key=lambda p: p.name)
    found = []
    for point in points:
        cls = point.load()
        declared = REGISTRY.get(point.name)
        if declared is None or declared.cls is not cls:
            raise UsageError(f"the {SCORER_GROUP} entry point {point.name} = {point.value} is not a class "
                             f"declared @scorer({point.name!r})")
        found.append((point.name, declared))
    return tuple(found)


def declared(request: ModelRequest) -> Declared:
    """The scorer a judge's request is from (its stage is ``judge-NAME``)."""
    return registered()[request.stage.removeprefix("judge-")]


SCORERS = tuple(d.cls for d in registered().values())
JUDGE_FREE_NAMES = frozenset(d.name for d in registered().values() if d.field is None)  # they count, no judge


def default_scorers(judge: Judge, *, data_dir: Path | None = None) -> list[Scorer]:
    """Every registered scorer, judged by ``judge`` where one is needed; ``data_dir``: the house style."""
    return [declared.make(judge, data_dir) for declared in registered().values()]


def score_course(course_dir: str | os.PathLike[str] | CourseOnDisk,
                 scorers: Sequence[Scorer]) -> dict[str, ScoreResult]:
    course = course_dir if isinstance(course_dir, CourseOnDisk) else CourseOnDisk.load(Path(course_dir))
    return {scorer.name: scorer.score(course) for scorer in scorers}


def scorer_versions(scorers: Sequence[Scorer]) -> dict[str, int]:
    return {scorer.name: scorer.version for scorer in sorted(scorers, key=lambda s: s.name)}
