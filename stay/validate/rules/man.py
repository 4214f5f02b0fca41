"""man: course.yaml agrees with the directory: its status map, read by a static viewer and a diff, claims
no file that does not exist and omits none that does."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator

from stay.validate._course import Course, Finding, Severity, finding, rule
from stay.validate._text import show

FAIL, WARN = Severity.FAIL, Severity.WARN
C = "course.yaml"
STATUSES = ("missing", "current", "stale")


@rule("man001", FAIL, "manifest", "course.yaml is missing")
def man001(course: Course) -> Iterator[Finding]:
    """The course has no usable course.yaml: nothing says what the directory is."""
    yield finding(C, "-", not course.manifest_file.usable)


@rule("man002", FAIL, "manifest", "slug '{slug}' does not match the directory name '{dir}'")
def man002(course: Course) -> Iterator[Finding]:
    """The manifest's slug differs from the directory name, so links to it break."""
    if course.manifest_file.usable:
        slug = course.manifest_file.data["slug"]
        yield finding(C, "slug", slug != course.name, slug=slug, dir=course.name)


@rule("man003", FAIL, "manifest", "status '{value}' is not one of missing, current, stale")
def man003(course: Course) -> Iterator[Finding]:
    """An artefacts entry holds a status other than missing, current or stale."""
    if course.manifest_file.usable:
        for key, value in course.manifest_file.data["artefacts"].items():
            yield finding(C, show(key), value not in STATUSES, value=value)


@rule("man004", FAIL, "manifest", "{key} is marked current but does not exist")
def man004(course: Course) -> Iterator[Finding]:
    """An entry marked current names no usable file: the projection claims too much."""
    if not course.manifest_file.usable:
        return
    for key, value in course.manifest_file.data["artefacts"].items():
        if value == "current":
            path = key if isinstance(key, str) else show(key)
            there = os.path.isfile(course.root + os.sep + path)
            usable = there and posixpath.normpath(path) not in course.unusable
            yield finding(C, show(key), not usable, key=key)


@rule("man005", WARN, "manifest", "{path} exists but is not listed in the manifest")
def man005(course: Course) -> Iterator[Finding]:
    """A usable file looked at is missing from the artefacts map (mid-run, a WARN)."""
    if not course.manifest_file.usable:
        return
    artefacts = course.manifest_file.data["artefacts"]
    for path, record in course.files.items():
        if path != C and record.usable:
            yield finding(C, path, path not in artefacts, path=path)
