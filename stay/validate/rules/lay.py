"""lay: nothing stray sits in modules/.

A file under modules/ that no curriculum lesson owns and the manifest does not
list is a leftover (a renamed lesson, a stray draft) that the viewer would never show.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator

from stay.validate._course import Course
from stay.validate._registry import Finding, Severity, finding, rule

WARN = Severity.WARN


@rule("lay001", WARN, "manifest", "file is not part of the curriculum")
def lay001(course: Course) -> Iterator[Finding]:
    """A file under modules/ is none of the lesson files the curriculum looks at, nor one the manifest lists.

    Names starting with '.' are skipped at any depth; symlinked directories are
    not followed. An unusable lesson file is not reported again here.
    """
    top = os.path.join(course.root, "modules")
    if not os.path.isdir(top):
        return
    looked_at = {posixpath.normpath(p) for lesson in course.lessons for p in lesson.paths}
    manifest = course.manifest_file
    if manifest.usable:  # a file the build wrote and lists (a plug-in stage's) is part of the course
        looked_at.update(posixpath.normpath(str(p)) for p in manifest.data["artefacts"])
    found: list[str] = []
    for current, dirnames, filenames in os.walk(top):
        dirnames[:] = [name for name in dirnames if not name.startswith(".")]
        relative = os.path.relpath(current, top)
        prefix = "modules" if relative == os.curdir else "modules/" + relative.replace(os.sep, "/")
        found.extend(f"{prefix}/{name}" for name in filenames if not name.startswith("."))
    for path in sorted(found):
        normal = posixpath.normpath(path)
        if normal not in course.unusable:
            yield finding(path, "-", normal not in looked_at)
