"""sch: every file looked at must be UTF-8 YAML of the right shape. Every other rule treats an unusable file
as absent, so it is reported here only: once, with every problem listed."""

from __future__ import annotations

from collections.abc import Iterator

from stay.validate._course import Course, Finding, Severity, rule

FAIL = Severity.FAIL


@rule("sch001", FAIL, None, "not valid YAML")
def sch001(course: Course) -> Iterator[Finding]:
    """A file looked at is not UTF-8, or not YAML (``yaml.safe_load`` raises).

    Evaluated once per existing file looked at. Nothing else can be read from such a
    file, so this is its only defect; it is owned by the stage that writes the file.
    """
    for record in course.files.values():
        if record.exists:
            yield Finding(record.path, "-", not record.parsed, {}, record.owner)


@rule("sch002", FAIL, None, "schema: {problems}")
def sch002(course: Course) -> Iterator[Finding]:
    """A parsed file does not match its schema; one defect lists every problem.

    Listing every problem at once, in schema order, lets the writing stage fix the
    whole file in one repair instead of discovering problems one run at a time.
    """
    for record in course.files.values():
        if record.parsed:
            yield Finding(
                record.path, "-", bool(record.problems),
                {"problems": "; ".join(record.problems)}, record.owner,
            )
