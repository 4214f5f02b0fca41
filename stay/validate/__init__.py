"""The course validator: the rules of validator-rules.md, reproducible to the defect.

    >>> from stay.validate import validate_courses, validate_course
    >>> report = validate_courses("courses", strict=True)
    >>> report.ok, [d.line() for c in report.courses for d in c.defects]

Rules come in groups (``contract``, the reference's; ``stay``, ours), chosen with
``select``/``ignore``; with neither, every rule, as a build checks. It reads course files and the two
data files only; it never imports the pipeline or a model, so a hook or CI job can run
it without either. ``data_files`` and ``names_in`` are the ast rules' reading of a course's
data files (``assets/``) and of the text that names them, which the viewer offers alike.
"""

from __future__ import annotations

from stay.settings import packaged_data_dir
from stay.validate._check import (
    CONTRACT_VERSION,
    OWNER_HEAD,
    CourseReport,
    ValidationReport,
    check_course,
    find_courses,
    owner_rows,
    validate_course,
    validate_courses,
)
from stay.validate._cli import main
from stay.validate._data import HouseData, default_data_dir
from stay.validate._defect import OWNERS, Defect, Owner, Severity
from stay.validate._registry import Group, Rule
from stay.validate._rules import RULES, register, unregister
from stay.validate._select import DEFAULT_SELECT, selected
from stay.validate._text import normal_text, quoted_in
from stay.validate._yaml import safe_load
from stay.validate.rules.ast import ASSETS, data_files, names_in

__all__ = [
    "ASSETS",
    "CONTRACT_VERSION",
    "DEFAULT_SELECT",
    "OWNERS",
    "OWNER_HEAD",
    "RULES",
    "CourseReport",
    "Defect",
    "Group",
    "HouseData",
    "Owner",
    "Rule",
    "Severity",
    "ValidationReport",
    "check_course",
    "data_files",
    "default_data_dir",
    "find_courses",
    "main",
    "names_in",
    "normal_text",
    "owner_rows",
    "packaged_data_dir",
    "quoted_in",
    "register",
    "safe_load",
    "selected",
    "unregister",
    "validate_course",
    "validate_courses",
]
