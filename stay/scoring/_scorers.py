"""The scorers together: what every scorer is, and running them over a course on disk."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from stay.scoring._core import CourseOnDisk, Judge, ScoreResult
from stay.scoring.distractor_quality import DistractorQuality
from stay.scoring.exercise_alignment import ExerciseAlignment
from stay.scoring.outcome_coverage import OutcomeCoverage
from stay.scoring.rubric_specificity import RubricSpecificity
from stay.scoring.validator import Validator


class Scorer(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int:
        """Bumped whenever the scorer's instructions or logic change; recorded in reports,
        and two runs whose scorer versions differ are not compared unless allowed."""
        ...

    def score(self, course: CourseOnDisk) -> ScoreResult: ...


def default_scorers(judge: Judge, *, data_dir: Path | None = None) -> list[Scorer]:
    """Every scorer, judged by ``judge`` where a judge is needed; the validator's holds a
    course to the house style in ``data_dir`` (None: the validator's default)."""
    return [OutcomeCoverage(judge), DistractorQuality(judge), ExerciseAlignment(judge),
            RubricSpecificity(judge), Validator(data_dir=data_dir)]


def score_course(course_dir: str | os.PathLike[str] | CourseOnDisk,
                 scorers: Sequence[Scorer]) -> dict[str, ScoreResult]:
    """Run every scorer on a course on disk (nothing is regenerated)."""
    course = course_dir if isinstance(course_dir, CourseOnDisk) else CourseOnDisk.load(Path(course_dir))
    return {scorer.name: scorer.score(course) for scorer in scorers}


def scorer_versions(scorers: Sequence[Scorer]) -> dict[str, int]:
    return {scorer.name: scorer.version for scorer in sorted(scorers, key=lambda s: s.name)}
