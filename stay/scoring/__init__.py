"""Scorers: opinions about a course that counting cannot settle, for comparing prompt changes across a
fixed set of courses; they never gate a build. ``score_course(course_dir, default_scorers(judge))``
scores a saved course; offline, only the validator and answer_cues, which count, are scored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stay._lazy import lazy_package

# Names are imported on first use: ``stay --help`` builds the ``evals`` parser from
# here, and must not pay for pydantic and the model layer.
if TYPE_CHECKING:
    from stay.scoring._cli import evals_main as evals_main
    from stay.scoring._cli import evals_parser as evals_parser
    from stay.scoring._compare import Comparison as Comparison
    from stay.scoring._compare import compare_runs as compare_runs
    from stay.scoring._compare import read_run as read_run
    from stay.scoring._compare_page import ComparePage as ComparePage
    from stay.scoring._compare_page import compare_page as compare_page
    from stay.scoring._core import CourseOnDisk as CourseOnDisk
    from stay.scoring._core import ItemResult as ItemResult
    from stay.scoring._core import Judge as Judge
    from stay.scoring._core import JudgeReply as JudgeReply
    from stay.scoring._core import ModelJudge as ModelJudge
    from stay.scoring._core import ModelScorer as ModelScorer
    from stay.scoring._core import OfflineJudge as OfflineJudge
    from stay.scoring._core import ScoreResult as ScoreResult
    from stay.scoring._core import content_hash as content_hash
    from stay.scoring._core import judge_request as judge_request
    from stay.scoring._core import scorer as scorer
    from stay.scoring._defaults import DEFAULT_EPOCHS as DEFAULT_EPOCHS
    from stay.scoring._judges import judge_name as judge_name
    from stay.scoring._judges import relative_course as relative_course
    from stay.scoring._judges import session_id as session_id
    from stay.scoring._report import OFFLINE as OFFLINE
    from stay.scoring._report import QUALITY_RECORD as QUALITY_RECORD
    from stay.scoring._report import build_entry as build_entry
    from stay.scoring._report import course_built_by as course_built_by
    from stay.scoring._report import failed_entry as failed_entry
    from stay.scoring._report import ledger_built_with as ledger_built_with
    from stay.scoring._report import provenance_notes as provenance_notes
    from stay.scoring._report import recorded_quality as recorded_quality
    from stay.scoring._report import report as report
    from stay.scoring._report import write_report as write_report
    from stay.scoring._stats import epochs_warning as epochs_warning
    from stay.scoring.scorers import SCORERS as SCORERS
    from stay.scoring.scorers import AnswerCues as AnswerCues
    from stay.scoring.scorers import AnswerKey as AnswerKey
    from stay.scoring.scorers import Consistency as Consistency
    from stay.scoring.scorers import DistractorQuality as DistractorQuality
    from stay.scoring.scorers import ExerciseAlignment as ExerciseAlignment
    from stay.scoring.scorers import OutcomeCoverage as OutcomeCoverage
    from stay.scoring.scorers import RubricSpecificity as RubricSpecificity
    from stay.scoring.scorers import Scorer as Scorer
    from stay.scoring.scorers import Validator as Validator
    from stay.scoring.scorers import default_scorers as default_scorers
    from stay.scoring.scorers import registered as registered
    from stay.scoring.scorers import score_course as score_course
    from stay.scoring.scorers import scorer_versions as scorer_versions
    from stay.settings import checked_backend as checked_backend

__getattr__, __dir__, __all__ = lazy_package(__name__, __file__)
