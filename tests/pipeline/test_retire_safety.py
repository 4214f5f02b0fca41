"""The copy a forced revision keeps of a hand-edited file (``stay revise --force`` and
``stay revise --keep --force``, into ``.state/retired/run-<n>/``) is written like every
other file: whole or not at all, never through a link, never read through one, bounded.
A refusal is one line and changes nothing, in the course or outside it."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from stay._bounds import MAX_FILE_BYTES
from stay.errors import EnvironmentProblem, StayError
from stay.pipeline import adopt, build_course, revise
from stay.pipeline._state import GATES_FILE, RETIRED, next_run_number
from tests.conftest import run_stay
from tests.pipeline.test_build import quiet

SLUG = "how-http-requests-travel"
NOTE = "Tighter."
PARAGRAPH = "\nA person's paragraph, with a word of their own: caf\u00e9.\n".encode()


def _force(courses: Path, rel: str) -> None:
    revise(SLUG, [rel], note=NOTE, force=True, courses_dir=courses, progress=quiet)


def _keep_force(courses: Path, rel: str) -> None:
    revise(SLUG, [rel], keep=True, force=True, courses_dir=courses, progress=quiet)


FORCING: dict[str, Callable[[Path, str], None]] = {"revise --force": _force, "revise --keep --force": _keep_force}
"""The two commands that replace a hand-edited file, keeping its bytes first."""


@pytest.fixture(params=sorted(FORCING))
def forcing(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _edit(courses: Path, forcing: str, data: bytes | None = None) -> tuple[str, bytes]:
    """Edit a lesson by hand (a paragraph added, or ``data``) and, for --keep, show a
    proposal for it; its course path and its edited bytes."""
    root = courses / SLUG
    lesson = next(root.glob("modules/*/m02-l01.md"))
    rel = lesson.relative_to(root).as_posix()
    data = lesson.read_bytes() + PARAGRAPH if data is None else data
    lesson.write_bytes(data)
    if forcing == "revise --keep --force":
        revise(SLUG, [rel], note=NOTE, show=True, force=True, courses_dir=courses, progress=quiet)
    return rel, data


def _retired_copy(courses: Path, rel: str) -> Path:
    """Where the forcing command about to run keeps the edited bytes."""
    root = courses / SLUG
    return root / RETIRED / f"run-{next_run_number(root)}" / rel


def _snapshot(top: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``top`` as it is on disk, links not followed: a link by where it
    points, a file by its bytes' hash, a directory by its name. ``.runs/`` is left out: a
    refused run's trace is kept there (traces and caches, never course content)."""
    found: dict[str, tuple[str, str]] = {}
    for place, dirs, files in os.walk(top):
        dirs[:] = [name for name in dirs if name != ".runs"]
        for name in dirs + files:
            path = Path(place) / name
            key = path.relative_to(top).as_posix()
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = ("dir", "")
            else:
                found[key] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def _refused(courses: Path, forcing: str, rel: str, said: str) -> None:
    """The forcing command is refused in one line saying ``said``, and nothing changed
    anywhere under the test's directory (the course, and beside it)."""
    everything = courses.parent
    before = _snapshot(everything)
    with pytest.raises(EnvironmentProblem, match=said) as refusal:
        FORCING[forcing](courses, rel)
    assert "\n" not in str(refusal.value)
    assert _snapshot(everything) == before


# A link that leads outside the course is refused when any command opens it (``_paths``);
# these links stay inside it, which a course may hold, but a copy must not go through one.


@pytest.mark.parametrize("planted", ["retired directory", "run directory", "copy itself"])
def test_a_link_planted_where_the_copy_goes_is_refused_and_nothing_changes(
        courses: Path, forcing: str, planted: str) -> None:
    rel, _edited = _edit(courses, forcing)
    root = courses / SLUG
    target = _retired_copy(courses, rel)
    run_dir = target.parents[len(Path(rel).parts) - 1]
    link = {"retired directory": run_dir.parent, "run directory": run_dir, "copy itself": target}[planted]
    if link == target:  # written through, it would overwrite another lesson
        points = next(root.glob("modules/*/m01-l01.md"))
    else:
        points = root / "elsewhere"
        points.mkdir()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(points, target_is_directory=points.is_dir())
    _refused(courses, forcing, rel, rf"{link.name} is a symbolic link; .*remove the link")


def test_a_file_where_the_copy_needs_a_directory_is_refused_and_nothing_changes(
        courses: Path, forcing: str) -> None:
    rel, _edited = _edit(courses, forcing)
    run_dir = _retired_copy(courses, rel).parents[len(Path(rel).parts) - 1]
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    run_dir.write_text("a person's note, not a directory\n")
    _refused(courses, forcing, rel, rf"{run_dir.name} is not a directory, .*move it out of {RETIRED}/")


def test_an_edited_file_that_is_a_link_is_refused_and_nothing_is_read_through_it(
        courses: Path, forcing: str) -> None:
    rel, _edited = _edit(courses, forcing)
    lesson = courses / SLUG / rel
    draft = courses / SLUG / "draft.md"
    draft.write_bytes(lesson.read_bytes())  # the bytes a --keep proposal was made against
    lesson.unlink()
    lesson.symlink_to(draft)
    _refused(courses, forcing, rel, rf"{lesson.name} is a symbolic link; stay never reads a course file")


def test_an_edited_file_over_the_bound_is_refused_and_nothing_changes(courses: Path) -> None:
    """``revise --force`` only: no proposal can be shown for a file over the bound (the
    stage reads it bounded too), so there is none to keep."""
    rel, _edited = _edit(courses, "revise --force", b"x" * (MAX_FILE_BYTES + 1))
    _refused(courses, "revise --force", rel, rf"not a regular file of at most .* cannot be kept in {RETIRED}/")


def test_the_refusal_is_one_line_on_the_command_line(courses: Path) -> None:
    rel, _edited = _edit(courses, "revise --force")
    other = next((courses / SLUG).glob("modules/*/m01-l01.md"))
    before = other.read_bytes()
    target = _retired_copy(courses, rel)
    target.parent.mkdir(parents=True)
    target.symlink_to(other)
    result = run_stay("revise", SLUG, rel, "--note", NOTE, "--force", "--courses-dir", str(courses))
    *_progress, said = result.stderr.strip().splitlines()
    assert result.returncode == 2 and said.startswith("error: ") and "is a symbolic link" in said, result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("error") == 1
    assert other.read_bytes() == before


def test_a_copy_cut_off_halfway_leaves_no_half_file_and_the_edit_in_place(
        courses: Path, forcing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills when half the copy's bytes are written, however the copy writes them
    (``sendfile``, as ``shutil.copy2`` does, or a write then ``fsync``): what is kept under
    .state/retired/ is the whole edit or nothing, and the edited file is not replaced."""
    rel, edited = _edit(courses, forcing)
    root = courses / SLUG
    real_sendfile, real_fsync = os.sendfile, os.fsync

    def retiring(fd: int) -> bool:
        return f"/{RETIRED}/" in os.readlink(f"/proc/self/fd/{fd}")

    def sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        if retiring(out_fd):
            os.write(out_fd, os.pread(in_fd, len(edited) // 2, 0))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_sendfile(out_fd, in_fd, offset, count)

    def fsync(fd: int) -> None:
        if retiring(fd):
            os.ftruncate(fd, len(edited) // 2)
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "sendfile", sendfile)
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(StayError, match="no space left on the device"):
        FORCING[forcing](courses, rel)
    kept = [p for p in (root / RETIRED).rglob("*") if p.is_file()]
    assert all(p.read_bytes() == edited for p in kept), [p.name for p in kept]
    assert (root / rel).read_bytes() == edited
    monkeypatch.undo()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    target = _retired_copy(courses, rel)
    FORCING[forcing](courses, rel)  # room again: the same command keeps the whole edit
    assert target.read_bytes() == edited and (root / rel).read_bytes() != edited


def test_a_forced_revision_keeps_the_edited_bytes_exactly(courses: Path, forcing: str) -> None:
    rel, edited = _edit(courses, forcing)
    target = _retired_copy(courses, rel)
    FORCING[forcing](courses, rel)
    assert target.read_bytes() == edited and not target.is_symlink()
    assert not list((courses / SLUG / RETIRED).rglob("*.tmp"))
    assert (courses / SLUG / rel).read_bytes() != edited


# -- what else stay sets aside in .state/retired/ ---------------------------------------------


def _retired_links_inside(root: Path) -> None:
    """``.state/retired`` made a link to a directory of the course: allowed in a course, but
    nothing stay sets aside may go through it."""
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    (root / RETIRED).symlink_to(elsewhere, target_is_directory=True)


def test_an_orphan_is_not_moved_through_a_link_in_retired(courses: Path) -> None:
    root = courses / SLUG
    stray = next(root.glob("modules/*/m01-l01.md")).with_name("stray.md")
    stray.write_text("A file of no lesson.\n")
    _retired_links_inside(root)
    before = _snapshot(courses.parent)
    with pytest.raises(EnvironmentProblem, match=r"retired is a symbolic link; .*remove the link"):
        build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert _snapshot(courses.parent) == before


def test_a_damaged_gates_file_is_not_moved_through_a_link_in_retired(courses: Path) -> None:
    root = courses / SLUG
    (root / GATES_FILE).write_text("{ not json\n")
    _retired_links_inside(root)
    before = _snapshot(courses.parent)
    with pytest.raises(EnvironmentProblem, match=r"retired is a symbolic link; .*remove the link"):
        adopt(SLUG, courses_dir=courses)
    assert _snapshot(courses.parent) == before
