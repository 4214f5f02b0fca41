"""The validator's findings about given course files: what a write-time check sends
back to the model, what a gate summary lists, and what ``--yes`` refuses to approve.

One function over the one validator, so the check after a write, the gate summary and
the gate's refusal can never disagree about which defects a file holds; and every
validation of a run (the validate node, each round of repair) goes through
``course_report``, against the run's own house style (``Settings.resolved_data_dir``,
the one resolution): ``validate_course`` alone falls back to the environment's.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from stay.settings import Settings
from stay.validate import CourseReport, Defect, Severity, validate_course


def course_report(root: Path, settings: Settings) -> CourseReport:
    """The validator's report on a course, against the house style ``settings`` choose."""
    return validate_course(root, data_dir=settings.resolved_data_dir())


def defects_in(root: Path, settings: Settings, paths: Iterable[str], *,
               fails_only: bool = False) -> tuple[Defect, ...]:
    """The defects the validator finds in ``paths`` (course-relative), in report order.

    The whole course is validated (cross-file rules need it), then the defects are kept
    whose path is one of ``paths``. Mid-run, a file not written yet is a WARN of its own
    path, so it never shows up against a file that exists; ``fails_only`` keeps FAILs.
    """
    wanted = set(paths)
    report = course_report(root, settings)
    return tuple(d for d in report.defects
                 if d.path in wanted and (not fails_only or d.severity == Severity.FAIL))
