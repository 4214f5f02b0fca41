"""Nothing outside the course is read or written through a link in it, and the sweep after
a killed run removes only the temporary files stay itself made.

Each kind of link the adversarial pass used (a linked module directory, ``.state/``,
``.runs/``, a linked lesson file) is planted in a finished course, with a lesson's quiz
deleted so that a build must write into the module, the ledger, the lock and the traces.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stay._lock import CourseLock
from stay.artefacts import TEMPORARY, temporary_name, write_text_atomic
from stay.errors import EnvironmentProblem, StayError, exit_code
from stay.models import ModelRequest
from stay.pipeline import build_course, status
from stay.pipeline._state import append_journal
from stay.testing import RiggedBackend
from stay.testing._backend import _lesson_of
from tests.conftest import ROOT, run_stay
from tests.pipeline.test_build import quiet

SLUG = "how-http-requests-travel"
HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"


def _hashes(top: Path) -> dict[str, str]:
    """Every file under ``top`` (links not followed), by content hash, and every link by target."""
    found = {}
    for current, dirnames, filenames in os.walk(top):
        for name in sorted(dirnames + filenames):
            path = Path(current) / name
            relative = path.relative_to(top).as_posix()
            if path.is_symlink():
                found[relative] = f"-> {os.readlink(path)}"
            elif path.is_file():
                found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _first_module(course: Path) -> Path:
    return sorted(p for p in (course / "modules").iterdir() if p.is_dir())[0]


def _move_out(course: Path, relative: str, outside: Path) -> Path:
    """Move ``course/relative`` to ``outside`` and leave a link to it in its place."""
    source = course / relative
    target = outside / source.name
    if source.exists():
        shutil.move(source, target)
    else:
        target.mkdir()
    source.symlink_to(target, target_is_directory=target.is_dir())
    return source


def _module(course: Path, outside: Path) -> Path:
    return _move_out(course, _first_module(course).relative_to(course).as_posix(), outside)


def _state(course: Path, outside: Path) -> Path:
    return _move_out(course, ".state", outside)


def _runs(course: Path, outside: Path) -> Path:
    return _move_out(course, ".runs", outside)


def _lesson(course: Path, outside: Path) -> Path:
    lesson = sorted(_first_module(course).glob("*.md"))[0]
    return _move_out(course, lesson.relative_to(course).as_posix(), outside)


LINKS: list[Callable[[Path, Path], Path]] = [_module, _state, _runs, _lesson]


@pytest.mark.parametrize("plant", LINKS, ids=lambda f: f.__name__.strip("_"))
def test_a_link_out_of_the_course_is_refused_in_one_line_and_nothing_outside_is_touched(
        courses: Path, tmp_path: Path, plant: Callable[[Path, Path], Path]) -> None:
    course, outside = courses / SLUG, tmp_path / "outside"
    outside.mkdir()
    next(_first_module(course).glob("*.quiz.yaml")).unlink()  # a build has to write into the module
    link = plant(course, outside)
    before, inside = _hashes(outside), _hashes(course)
    for command in (["build", SLUG, "--yes"], ["status", SLUG], ["approve", SLUG, "design"], ["adopt", SLUG]):
        result = run_stay(*command, "--courses-dir", str(courses))
        assert result.returncode == 2, (command, result.stderr)
        line = result.stderr.strip()
        assert "\n" not in line and "Traceback" not in line, (command, result.stderr)
        assert str(link) in line and "symlink leads outside the course" in line, (command, line)
    validated = run_stay("validate", str(course))
    assert validated.returncode == 2 and validated.stderr.count("\n") == 1 and str(link) in validated.stderr
    assert _hashes(outside) == before  # nothing written, deleted or swept out there
    assert _hashes(course) == inside  # refused before anything was locked or written


def test_links_that_stay_inside_the_course_are_fine(courses: Path) -> None:
    """Only where a link leads matters: one that points within the course is no escape."""
    course = courses / SLUG
    (course / "notes.md").symlink_to(course / "course.yaml")
    (course / ".state" / "latest").symlink_to(course / ".state" / "hashes.json")
    statuses = status(SLUG, courses_dir=courses)
    assert statuses and all(s.state == "current" for s in statuses.values())
    result = build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert result.complete and not result.written


def test_the_sweep_removes_only_the_temporary_files_stay_makes(courses: Path) -> None:
    course = courses / SLUG
    module = _first_module(course)
    theirs = [course / "notes.tmp", course / ".draft.tmp", module / ".m01-l01.md.a1b2c3.tmp",
              course / ".course.yaml.k3j2h1.tmp", course / ".state" / ".hashes.json.zz9.tmp",
              course / ".course.yaml.stay-0123.tmp"]  # stay's form, but not its random part
    ours = [course / temporary_name("course.yaml"), module / temporary_name("m01-l01.md"),
            course / ".state" / temporary_name("hashes.json")]
    assert all(TEMPORARY.fullmatch(p.name) for p in ours)
    assert not any(TEMPORARY.fullmatch(p.name) for p in theirs)
    for path in theirs + ours:
        path.write_text("half a file")
    build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert all(path.read_text() == "half a file" for path in theirs)
    assert not any(path.exists() for path in ours)


class _Planting(RiggedBackend):
    """Before the wave's first answer (the module's plans written, none of its lessons), moves
    the first module out of the course and leaves a link in its place: the attack of issue 37."""

    def __init__(self, course: Path, outside: Path) -> None:
        super().__init__()
        self.course, self.outside, self.planted = course, outside, False
        self.moved: dict[str, str] = {}

    def answer(self, request: ModelRequest) -> dict[str, Any]:
        with self._lock:
            if not self.planted and _lesson_of(request) is not None:
                self.planted = True
                self.moved = _hashes(_module(self.course, self.outside).resolve())
        return super().answer(request)


def test_a_module_swapped_for_a_link_mid_build_carries_no_lesson_out(tmp_path: Path) -> None:
    courses, outside = tmp_path / "courses", tmp_path / "outside"
    outside.mkdir()
    backend = _Planting(courses / SLUG, outside)
    with pytest.raises(StayError) as caught:
        build_course(HTTP, courses_dir=courses, yes=True, backend=backend, progress=quiet)
    link = _first_module(courses / SLUG)
    assert backend.moved and _hashes(outside / link.name) == backend.moved  # nothing written through the link
    assert isinstance(caught.value, EnvironmentProblem) and exit_code(caught.value) == 2
    assert str(caught.value).startswith(f"{link}: a symlink") and "\n" not in str(caught.value)


def test_the_journal_is_never_appended_through_a_link_planted_under_the_lock(tmp_path: Path) -> None:
    course, outside = tmp_path / "course", tmp_path / "outside"
    course.mkdir()
    outside.mkdir()
    with CourseLock(course):
        (course / ".state").symlink_to(outside, target_is_directory=True)  # after the check at open
        for write in (lambda p: append_journal(p, {"run": 1}), lambda p: write_text_atomic(p, "{}\n")):
            with pytest.raises(EnvironmentProblem, match=r"/\.state: a symlink \(to .*\) is on the way"):
                write(course / ".state" / "journal.jsonl")
    assert not any(outside.iterdir())
