"""The course validator: the rules of validator-rules.md, reproducible to the defect
(``validate_courses("courses", strict=True)``). It reads course files and the two data files only,
never the pipeline or a model, so a hook or CI job can run it without either."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stay._lazy import lazy_package

if TYPE_CHECKING:
    from stay.settings import packaged_data_dir as packaged_data_dir
    from stay.validate._check import CONTRACT_VERSION as CONTRACT_VERSION
    from stay.validate._check import DEFAULT_SELECT as DEFAULT_SELECT
    from stay.validate._check import OWNER_HEAD as OWNER_HEAD
    from stay.validate._check import RULES as RULES
    from stay.validate._check import CourseReport as CourseReport
    from stay.validate._check import ValidationReport as ValidationReport
    from stay.validate._check import check_course as check_course
    from stay.validate._check import find_courses as find_courses
    from stay.validate._check import owner_rows as owner_rows
    from stay.validate._check import register as register
    from stay.validate._check import selected as selected
    from stay.validate._check import unregister as unregister
    from stay.validate._check import validate_course as validate_course
    from stay.validate._check import validate_courses as validate_courses
    from stay.validate._cli import main as main
    from stay.validate._course import BLOOM_FILE as BLOOM_FILE
    from stay.validate._course import HOUSE_FILE as HOUSE_FILE
    from stay.validate._course import OWNERS as OWNERS
    from stay.validate._course import Defect as Defect
    from stay.validate._course import Group as Group
    from stay.validate._course import HouseData as HouseData
    from stay.validate._course import Owner as Owner
    from stay.validate._course import Rule as Rule
    from stay.validate._course import Severity as Severity
    from stay.validate._course import default_data_dir as default_data_dir
    from stay.validate._text import normal_text as normal_text
    from stay.validate._text import quoted_in as quoted_in
    from stay.validate._text import safe_load as safe_load
    from stay.validate.rules.ast import ASSETS as ASSETS
    from stay.validate.rules.ast import data_files as data_files
    from stay.validate.rules.ast import names_in as names_in

__getattr__, __dir__, __all__ = lazy_package(__name__, __file__)
