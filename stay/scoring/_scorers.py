"""The scorers together: the registry every list of scorers derives from (reports, tests,
docs' counts), what every scorer is, and running them over a course on disk."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from stay.scoring._core import CourseOnDisk, Judge, ModelScorer, ScoreResult
from stay.scoring.answer_cues import AnswerCues
from stay.scoring.answer_key import AnswerKey
from stay.scoring.consistency import Consistency
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


MODEL_JUDGED: tuple[type[ModelScorer], ...] = (OutcomeCoverage, DistractorQuality, ExerciseAlignment,
                                               RubricSpecificity, AnswerKey, Consistency)
"""The scorers a judge must read prose for: offline, each is "not judged (offline)"."""
JUDGE_FREE = (Validator, AnswerCues)
"""The scorers that need no judge: counted, scored offline as with a model."""
SCORERS = (*MODEL_JUDGED, *JUDGE_FREE)
JUDGE_FREE_NAMES = frozenset(scorer.name for scorer in JUDGE_FREE)
"""Whose results name no judge of the run's (a report's header judge is the others')."""


def default_scorers(judge: Judge, *, data_dir: Path | None = None) -> list[Scorer]:
    """Every scorer of the registry, judged by ``judge`` where a judge is needed; the
    validator's holds a course to the house style in ``data_dir`` (None: its default)."""
    return [*(scorer(judge) for scorer in MODEL_JUDGED), Validator(data_dir=data_dir), AnswerCues()]


def score_course(course_dir: str | os.PathLike[str] | CourseOnDisk,
                 scorers: Sequence[Scorer]) -> dict[str, ScoreResult]:
    """Run every scorer on a course on disk (nothing is regenerated)."""
    course = course_dir if isinstance(course_dir, CourseOnDisk) else CourseOnDisk.load(Path(course_dir))
    return {scorer.name: scorer.score(course) for scorer in scorers}


def scorer_versions(scorers: Sequence[Scorer]) -> dict[str, int]:
    return {scorer.name: scorer.version for scorer in sorted(scorers, key=lambda s: s.name)}
