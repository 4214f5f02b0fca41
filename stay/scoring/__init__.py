"""Scorers: opinions about a course that counting cannot settle, for comparing prompt
changes across a fixed set of courses. They never gate a build.

    from stay.scoring import default_scorers, score_course, OfflineJudge
    results = score_course("courses/how-http-requests-travel", default_scorers(OfflineJudge()))

Offline, the scorers a model must judge are "not judged (offline)"; the validator and
answer_cues, which count, are scored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stay._lazy import lazy_names

# Names are imported on first use: ``stay --help`` builds the ``evals`` parser from
# here, and must not pay for pydantic and the model layer.
_EXPORTS = {
    "DEFAULT_EPOCHS": "stay.scoring._defaults",
    "CourseOnDisk": "stay.scoring._core",
    "ItemResult": "stay.scoring._core",
    "Judge": "stay.scoring._core",
    "JudgeReply": "stay.scoring._core",
    "ModelJudge": "stay.scoring._core",
    "ScoreResult": "stay.scoring._core",
    "judge_request": "stay.scoring._core",
    "content_hash": "stay.scoring._core",
    "judge_name": "stay.scoring._judges",
    "relative_course": "stay.scoring._judges",
    "session_id": "stay.scoring._judges",
    "OfflineJudge": "stay.scoring._core",
    "ModelScorer": "stay.scoring._core",
    "AnswerCues": "stay.scoring.answer_cues",
    "AnswerKey": "stay.scoring.answer_key",
    "Consistency": "stay.scoring.consistency",
    "SCORERS": "stay.scoring._scorers",
    "DistractorQuality": "stay.scoring.distractor_quality",
    "ExerciseAlignment": "stay.scoring.exercise_alignment",
    "OutcomeCoverage": "stay.scoring.outcome_coverage",
    "RubricSpecificity": "stay.scoring.rubric_specificity",
    "Validator": "stay.scoring.validator",
    "Scorer": "stay.scoring._scorers",
    "default_scorers": "stay.scoring._scorers",
    "score_course": "stay.scoring._scorers",
    "registered": "stay.scoring._scorers",
    "scorer": "stay.scoring._core",
    "scorer_versions": "stay.scoring._scorers",
    "ComparePage": "stay.scoring._compare_page",
    "Comparison": "stay.scoring._compare",
    "compare_runs": "stay.scoring._compare",
    "read_run": "stay.scoring._compare",
    "compare_page": "stay.scoring._compare_page",
    "OFFLINE": "stay.scoring._report",
    "ledger_built_with": "stay.scoring._report",
    "course_built_by": "stay.scoring._report",
    "checked_backend": "stay.settings",
    "QUALITY_RECORD": "stay.scoring._report",
    "recorded_quality": "stay.scoring._report",
    "provenance_notes": "stay.scoring._report",
    "build_entry": "stay.scoring._report",
    "failed_entry": "stay.scoring._report",
    "report": "stay.scoring._report",
    "write_report": "stay.scoring._report",
    "evals_parser": "stay.scoring._cli",
    "evals_main": "stay.scoring._cli",
    "epochs_warning": "stay.scoring._plan",
}

__all__ = [
    "DEFAULT_EPOCHS",
    "OFFLINE",
    "QUALITY_RECORD",
    "SCORERS",
    "AnswerCues",
    "AnswerKey",
    "ComparePage",
    "Comparison",
    "Consistency",
    "CourseOnDisk",
    "DistractorQuality",
    "ExerciseAlignment",
    "ItemResult",
    "Judge",
    "JudgeReply",
    "ModelJudge",
    "ModelScorer",
    "OfflineJudge",
    "OutcomeCoverage",
    "RubricSpecificity",
    "ScoreResult",
    "Scorer",
    "Validator",
    "build_entry",
    "checked_backend",
    "compare_page",
    "compare_runs",
    "content_hash",
    "course_built_by",
    "default_scorers",
    "epochs_warning",
    "evals_main",
    "evals_parser",
    "failed_entry",
    "judge_name",
    "judge_request",
    "ledger_built_with",
    "provenance_notes",
    "read_run",
    "recorded_quality",
    "registered",
    "relative_course",
    "report",
    "score_course",
    "scorer",
    "scorer_versions",
    "session_id",
    "write_report",
]

if TYPE_CHECKING:
    from stay.scoring._cli import evals_main, evals_parser
    from stay.scoring._compare import Comparison, compare_runs, read_run
    from stay.scoring._compare_page import ComparePage, compare_page
    from stay.scoring._core import (
        CourseOnDisk,
        ItemResult,
        Judge,
        JudgeReply,
        ModelJudge,
        ModelScorer,
        OfflineJudge,
        ScoreResult,
        content_hash,
        judge_request,
        scorer,
    )
    from stay.scoring._defaults import DEFAULT_EPOCHS
    from stay.scoring._judges import judge_name, relative_course, session_id
    from stay.scoring._plan import epochs_warning
    from stay.scoring._report import (
        OFFLINE,
        QUALITY_RECORD,
        build_entry,
        course_built_by,
        failed_entry,
        ledger_built_with,
        provenance_notes,
        recorded_quality,
        report,
        write_report,
    )
    from stay.scoring._scorers import SCORERS, Scorer, default_scorers, registered, score_course, scorer_versions
    from stay.scoring.answer_cues import AnswerCues
    from stay.scoring.answer_key import AnswerKey
    from stay.scoring.consistency import Consistency
    from stay.scoring.distractor_quality import DistractorQuality
    from stay.scoring.exercise_alignment import ExerciseAlignment
    from stay.scoring.outcome_coverage import OutcomeCoverage
    from stay.scoring.rubric_specificity import RubricSpecificity
    from stay.scoring.validator import Validator
    from stay.settings import checked_backend


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__)
