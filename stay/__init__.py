"""stay: turn a course brief into a complete, pedagogically sound course.

The public surface is what ``__all__`` lists; everything else is private. Names
are imported on first use, so ``python -m stay.validate`` does not pay for the
pipeline's dependencies.
"""

from __future__ import annotations

import sys

if sys.argv[:1] == ["-m"] or (sys.argv[:1] and sys.argv[0].endswith(("/stay", "\\stay", "/stay.exe"))):
    # Starting as the ``stay`` program (``python -m stay.cli`` imports this package
    # first): Ctrl-C before the command line takes over ends quietly with 130, not a
    # traceback. stay.cli installs the normal handling once it runs.
    import os
    import signal

    def _interrupted_at_start(_signal: int, _frame: object) -> None:
        sys.stderr.write("interrupted\n")
        os._exit(130)

    signal.signal(signal.SIGINT, _interrupted_at_start)

from typing import TYPE_CHECKING

from stay._lazy import lazy_names
from stay._version import __version__

_EXPORTS = {
    "Backend": "stay.models",
    "Brief": "stay.artefacts",
    "Answered": "stay.pipeline",
    "BuildResult": "stay.pipeline",
    "Statuses": "stay.pipeline",
    "NotebookProgress": "stay.pipeline",
    "ProgressUpdate": "stay.pipeline",
    "adopt": "stay.pipeline",
    "approve": "stay.pipeline",
    "build_course": "stay.pipeline",
    "revise": "stay.pipeline",
    "status": "stay.pipeline",
    "Comparison": "stay.scoring",
    "compare_runs": "stay.scoring",
    "read_run": "stay.scoring",
    "CourseReport": "stay.validate",
    "Defect": "stay.validate",
    "Severity": "stay.validate",
    "ValidationReport": "stay.validate",
    "validate_courses": "stay.validate",
    "validate_course": "stay.validate",
    "AnswerError": "stay.errors",
    "ArtefactError": "stay.errors",
    "BriefError": "stay.errors",
    "BriefNotFound": "stay.errors",
    "BriefRejected": "stay.errors",
    "CostCapReached": "stay.errors",
    "CourseLocked": "stay.errors",
    "CourseNotFound": "stay.errors",
    "CoursePathError": "stay.errors",
    "DataFileError": "stay.errors",
    "EnvironmentProblem": "stay.errors",
    "GraphError": "stay.errors",
    "ModelError": "stay.errors",
    "ModelUnavailable": "stay.errors",
    "PipelineError": "stay.errors",
    "RefusalError": "stay.errors",
    "ReplayMiss": "stay.errors",
    "StayError": "stay.errors",
    "TruncationError": "stay.errors",
    "UnsafeId": "stay.errors",
    "UsageError": "stay.errors",
}

__all__ = [
    "AnswerError",
    "Answered",
    "ArtefactError",
    "Backend",
    "Brief",
    "BriefError",
    "BriefNotFound",
    "BriefRejected",
    "BuildResult",
    "Comparison",
    "CostCapReached",
    "CourseLocked",
    "CourseNotFound",
    "CoursePathError",
    "CourseReport",
    "DataFileError",
    "Defect",
    "EnvironmentProblem",
    "GraphError",
    "ModelError",
    "ModelUnavailable",
    "NotebookProgress",
    "PipelineError",
    "ProgressUpdate",
    "RefusalError",
    "ReplayMiss",
    "Severity",
    "Statuses",
    "StayError",
    "TruncationError",
    "UnsafeId",
    "UsageError",
    "ValidationReport",
    "__version__",
    "adopt",
    "approve",
    "build_course",
    "compare_runs",
    "read_run",
    "revise",
    "status",
    "validate_course",
    "validate_courses",
]

if TYPE_CHECKING:
    from stay.artefacts import Brief
    from stay.errors import (
        AnswerError,
        ArtefactError,
        BriefError,
        BriefNotFound,
        BriefRejected,
        CostCapReached,
        CourseLocked,
        CourseNotFound,
        CoursePathError,
        DataFileError,
        EnvironmentProblem,
        GraphError,
        ModelError,
        ModelUnavailable,
        PipelineError,
        RefusalError,
        ReplayMiss,
        StayError,
        TruncationError,
        UnsafeId,
        UsageError,
    )
    from stay.models import Backend
    from stay.pipeline import Answered, BuildResult, Statuses, adopt, approve, build_course, revise, status
    from stay.scoring import Comparison, compare_runs, read_run
    from stay.validate import (
        CourseReport,
        Defect,
        Severity,
        ValidationReport,
        validate_course,
        validate_courses,
    )


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__)
