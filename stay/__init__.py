"""stay: turn a course brief into a complete, pedagogically sound course. The public surface is what
``__all__`` lists; names are imported on first use."""

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

from stay._lazy import lazy_package
from stay._version import __version__ as __version__

if TYPE_CHECKING:
    from stay.artefacts import Brief as Brief
    from stay.errors import AnswerError as AnswerError
    from stay.errors import ArtefactError as ArtefactError
    from stay.errors import BriefError as BriefError
    from stay.errors import BriefNotFound as BriefNotFound
    from stay.errors import BriefRejected as BriefRejected
    from stay.errors import CostCapReached as CostCapReached
    from stay.errors import CourseLocked as CourseLocked
    from stay.errors import CourseNotFound as CourseNotFound
    from stay.errors import CoursePathError as CoursePathError
    from stay.errors import DataFileError as DataFileError
    from stay.errors import EnvironmentProblem as EnvironmentProblem
    from stay.errors import GraphError as GraphError
    from stay.errors import ModelError as ModelError
    from stay.errors import ModelUnavailable as ModelUnavailable
    from stay.errors import PipelineError as PipelineError
    from stay.errors import RefusalError as RefusalError
    from stay.errors import ReplayMiss as ReplayMiss
    from stay.errors import StayError as StayError
    from stay.errors import TruncationError as TruncationError
    from stay.errors import UnsafeId as UnsafeId
    from stay.errors import UsageError as UsageError
    from stay.models import Backend as Backend
    from stay.pipeline import Answered as Answered
    from stay.pipeline import BuildResult as BuildResult
    from stay.pipeline import NotebookProgress as NotebookProgress
    from stay.pipeline import ProgressUpdate as ProgressUpdate
    from stay.pipeline import Statuses as Statuses
    from stay.pipeline import adopt as adopt
    from stay.pipeline import approve as approve
    from stay.pipeline import build_course as build_course
    from stay.pipeline import revise as revise
    from stay.pipeline import status as status
    from stay.scoring import Comparison as Comparison
    from stay.scoring import compare_runs as compare_runs
    from stay.scoring import read_run as read_run
    from stay.validate import CourseReport as CourseReport
    from stay.validate import Defect as Defect
    from stay.validate import Severity as Severity
    from stay.validate import ValidationReport as ValidationReport
    from stay.validate import validate_course as validate_course
    from stay.validate import validate_courses as validate_courses
    from stay.view import export as export

__getattr__, __dir__, __all__ = lazy_package(__name__, __file__, "__version__")
