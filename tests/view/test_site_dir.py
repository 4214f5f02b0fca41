"""The site directory: ``stay view`` overwrites and deletes only files whose bytes it wrote,
whatever a planted ``.stay-site`` says, and a render interrupted anywhere can be run again."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stay.errors import EXIT_INTERRUPTED, UsageError
from stay.view import write_site
from stay.view._site import MARKER
from tests.conftest import ROOT, SAMPLE, run_stay
from tests.fixtures.rules.ast import SAMPLE_DATA

# a small site stands in for a course's: write_site writes whatever it is given
OLD = {"index.html": b"<p>old home</p>", "m01-l01.html": b"<p>lesson one</p>", "m01-l02.html": b"<p>dropped</p>",
       "style.css": b"p{}"}
NEW = {"index.html": b"<p>new home</p>", "m01-l01.html": b"<p>lesson one</p>", "m01-l03.html": b"<p>added</p>",
       "style.css": b"p{color:red}"}
PERSONS = {"keep.txt": b"a file of the person's", "notes.tmp": b"a .tmp of the person's",
           ".index.html.tmp": b"not a name stay makes"}


def snapshot(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _start(tmp: Path, state: str) -> Path:
    """A course directory and an --out in ``state``: absent, or an earlier site with a
    person's files beside it."""
    (tmp / "course").mkdir(parents=True, exist_ok=True)
    out = tmp / "out"
    if state == "earlier site":
        write_site(OLD, out, tmp / "course")
        for name, data in PERSONS.items():
            (out / name).write_bytes(data)
    return out


class Interrupt:
    """Ctrl-C at the ``at``-th file-system change (a rename or a deletion), just before it
    or just after it; ``at=None`` only counts them."""

    def __init__(self, at: int | None, after: bool) -> None:
        self.at, self.after, self.seen, self.fired = at, after, 0, False

    def wrap(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def changed(*args: Any, **kwargs: Any) -> Any:
            if self.fired:  # the clean-up on the way out is not a point
                return real(*args, **kwargs)
            hit = self.seen == self.at
            self.seen += 1
            if hit and not self.after:
                self.fired = True
                raise KeyboardInterrupt
            result = real(*args, **kwargs)
            if hit:
                self.fired = True
                raise KeyboardInterrupt
            return result
        return changed


def _points(tmp: Path, state: str, monkeypatch: pytest.MonkeyPatch, changes: tuple[str, ...] = ("replace", "unlink")
            ) -> tuple[int, dict[str, bytes]]:
    """How many file-system ``changes`` an uninterrupted render makes, and what it leaves."""
    out = _start(tmp, state)
    counter = Interrupt(None, after=False)
    with monkeypatch.context() as patch:
        for change in changes:
            patch.setattr(os, change, counter.wrap(getattr(os, change)))
        write_site(NEW, out, tmp / "course")
    return counter.seen, snapshot(out)


def _every_point() -> Iterator[tuple[str, bool]]:
    for state in ("absent", "earlier site"):
        for after in (False, True):
            yield state, after


@pytest.mark.parametrize(("state", "after"), list(_every_point()))
def test_a_render_interrupted_at_any_change_is_run_again_to_the_same_site(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str, after: bool) -> None:
    points, expected = _points(tmp_path / "reference", state, monkeypatch)
    assert points >= len(NEW) + 2  # every page and the marker twice: the loop below covers each
    for at in range(points):
        tmp = tmp_path / f"at-{at}"
        out = _start(tmp, state)
        interrupt = Interrupt(at, after)
        with monkeypatch.context() as patch:
            patch.setattr(os, "replace", interrupt.wrap(os.replace))
            patch.setattr(os, "unlink", interrupt.wrap(os.unlink))
            with pytest.raises(KeyboardInterrupt):
                write_site(NEW, out, tmp / "course")
        write_site(NEW, out, tmp / "course")  # the rerun the interrupt message asks for
        assert snapshot(out) == expected, f"interrupted {'after' if after else 'before'} change {at}"


_KILLER = """
import os, signal, sys
from pathlib import Path
from stay.view import write_site
at, seen, real = int(sys.argv[1]), [0], os.replace
def replace(*args):
    if seen[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)
    seen[0] += 1
    return real(*args)
os.replace = replace
write_site({k: v.encode() for k, v in eval(sys.argv[2]).items()}, Path(sys.argv[3]), Path(sys.argv[4]))
"""


@pytest.mark.slow
def test_a_render_killed_mid_write_leaves_no_temporary_once_run_again(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    points, expected = _points(tmp_path / "reference", "earlier site", monkeypatch, changes=("replace",))
    site = repr({name: data.decode() for name, data in NEW.items()})
    for at in (0, points // 2, points - 1):  # the first page, one in the middle, the final marker
        tmp = tmp_path / f"kill-{at}"
        out = _start(tmp, "earlier site")
        killed = subprocess.run([sys.executable, "-c", _KILLER, str(at), site, str(out), str(tmp / "course")],
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=60,
                                check=False)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert any(name.endswith(".tmp") and name not in PERSONS for name in os.listdir(out))
        write_site(NEW, out, tmp / "course")
        assert snapshot(out) == expected


def _planted(out: Path, marker: object) -> None:
    out.mkdir()
    for name, data in PERSONS.items():
        (out / name).write_bytes(data)
    (out / MARKER).write_text(json.dumps(marker))


@pytest.mark.parametrize("form", ["a list of names", "names with other hashes", "paths that leave the site"])
def test_a_planted_marker_deletes_nothing_of_the_persons(tmp_path: Path, form: str) -> None:
    outside = tmp_path / "settings.json"
    outside.write_bytes(b'{"mine": true}')
    names = [*PERSONS, "../settings.json", str(outside)]
    marker: object = {
        "a list of names": {"files": names},
        "names with other hashes": {"files": {name: sha(b"other") for name in names}},
        "paths that leave the site": {"files": {"../settings.json": sha(outside.read_bytes()),
                                                str(outside): sha(outside.read_bytes()),
                                                "sub/../../settings.json": sha(outside.read_bytes()),
                                                "assets/../../settings.json": sha(outside.read_bytes())}},
    }[form]
    out = tmp_path / "out"
    _planted(out, marker)
    (tmp_path / "course").mkdir()
    write_site(NEW, out, tmp_path / "course")
    assert outside.read_bytes() == b'{"mine": true}'
    assert {name: snapshot(out)[name] for name in PERSONS} == PERSONS
    assert snapshot(out).keys() == {*PERSONS, *NEW, MARKER}


@pytest.mark.parametrize("kind", ["a file of the person's", "a page edited since", "a symlink", "a directory"])
def test_a_file_stay_did_not_write_is_never_overwritten(tmp_path: Path, kind: str) -> None:
    (tmp_path / "course").mkdir()
    outside = tmp_path / "elsewhere.html"
    outside.write_bytes(b"the person's page")
    out = tmp_path / "out"
    write_site(OLD, out, tmp_path / "course")
    target = out / "index.html"
    target.unlink()
    if kind == "a file of the person's":  # a planted marker claims it, with the hash of another file
        target.write_bytes(b"mine")
        (out / MARKER).write_text(json.dumps({"files": {"index.html": sha(b"theirs")}}))
    elif kind == "a page edited since":
        target.write_bytes(OLD["index.html"] + b"<p>my note</p>")
    elif kind == "a symlink":
        target.symlink_to(outside)
    else:
        target.mkdir()
    before = snapshot(out) if kind != "a directory" else None
    with pytest.raises(UsageError) as refused:
        write_site(NEW, out, tmp_path / "course")
    assert "holds 'index.html'" in str(refused.value) and "\n" not in str(refused.value)
    assert outside.read_bytes() == b"the person's page"
    if before is not None:
        assert snapshot(out) == before  # refused before anything was written
    assert target.is_symlink() == (kind == "a symlink")


@pytest.mark.parametrize("kind", ["a symlink", "a directory", "a FIFO"])
def test_a_marker_that_is_not_a_file_is_refused_and_never_followed(tmp_path: Path, kind: str) -> None:
    outside = tmp_path / "planted.json"
    outside.write_text(json.dumps({"files": ["keep.txt"]}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_bytes(b"mine")
    marker = out / MARKER
    if kind == "a symlink":
        marker.symlink_to(outside)
    elif kind == "a directory":
        marker.mkdir()
    else:
        os.mkfifo(marker)
    (tmp_path / "course").mkdir()
    with pytest.raises(UsageError) as refused:
        write_site(NEW, out, tmp_path / "course")
    assert MARKER in str(refused.value)
    assert (out / "keep.txt").read_bytes() == b"mine" and not (out / "index.html").exists()


def test_the_marker_records_the_hash_of_every_file_it_wrote(tmp_path: Path) -> None:
    (tmp_path / "course").mkdir()
    out = write_site(NEW, tmp_path / "out", tmp_path / "course")
    assert json.loads((out / MARKER).read_text()) == {"files": {name: sha(data) for name, data in NEW.items()}}


def test_stay_view_interrupted_then_run_again_renders_the_course(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    courses = tmp_path / "courses"
    shutil.copytree(SAMPLE, courses / SAMPLE.name)
    monkeypatch.chdir(tmp_path)
    args = ("view", SAMPLE.name, "--courses-dir", str(courses))
    assert run_stay(*args, "--out", "whole").returncode == 0
    interrupt = Interrupt(3, after=True)
    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", interrupt.wrap(os.replace))
        stopped = run_stay(*args, "--out", "again")
    assert stopped.returncode == EXIT_INTERRUPTED and "run the command again" in stopped.stderr
    rerun = run_stay(*args, "--out", "again")
    assert rerun.returncode == 0, rerun.stderr
    whole, again = tmp_path / "whole", tmp_path / "again"  # every file, the sample's data files among them
    assert tree(again) == tree(whole) and set(SAMPLE_DATA) <= set(tree(whole))
    assert (again / MARKER).read_bytes() == (whole / MARKER).read_bytes()


def test_a_page_the_course_dropped_is_kept_when_the_person_edited_it(tmp_path: Path) -> None:
    (tmp_path / "course").mkdir()
    out = write_site(OLD, tmp_path / "out", tmp_path / "course")
    edited = OLD["m01-l02.html"] + b"<p>my notes</p>"
    (out / "m01-l02.html").write_bytes(edited)  # NEW no longer has this page
    write_site(NEW, out, tmp_path / "course")
    assert (out / "m01-l02.html").read_bytes() == edited
    assert snapshot(out).keys() == {*NEW, "m01-l02.html", MARKER}


def test_the_command_refuses_a_persons_page_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").write_bytes(b"my own home page")
    (out / MARKER).write_text(json.dumps({"files": ["index.html"]}))  # planted, or an older viewer's
    monkeypatch.chdir(tmp_path)
    done = run_stay("view", SAMPLE.name, "--courses-dir", str(SAMPLE.parent), "--out", str(out))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "holds 'index.html'" in done.stderr
    assert snapshot(out) == {MARKER: (out / MARKER).read_bytes(), "index.html": b"my own home page"}


# a site with data files in its one folder, assets/ (as the course holds them)
OLD_DATA = {**OLD, "assets/log.csv": b"a,b\n1,2\n", "assets/gone.json": b"{}\n"}
NEW_DATA = {**NEW, "assets/log.csv": b"a,b\n3,4\n", "assets/added.txt": b"new\n"}


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` by its path there, the marker left out."""
    return {path.relative_to(directory).as_posix(): path.read_bytes() for path in sorted(directory.rglob("*"))
            if path.is_file() and path.name != MARKER}


def test_data_files_sit_in_their_folder_and_only_the_viewers_own_are_replaced_or_removed(tmp_path: Path) -> None:
    (tmp_path / "course").mkdir()
    out = write_site(OLD_DATA, tmp_path / "out", tmp_path / "course")
    assert tree(out) == OLD_DATA
    (out / "assets" / "mine.csv").write_bytes(b"mine")
    write_site(NEW_DATA, out, tmp_path / "course")
    assert tree(out) == {**NEW_DATA, "assets/mine.csv": b"mine"}
    assert json.loads((out / MARKER).read_text()) == {"files": {name: sha(data) for name, data in NEW_DATA.items()}}
    write_site(NEW, out, tmp_path / "course")  # the course dropped its data files: the person's keeps the folder
    assert tree(out) == {**NEW, "assets/mine.csv": b"mine"}
    (out / "assets" / "mine.csv").unlink()
    write_site(NEW, out, tmp_path / "course")
    assert not os.path.lexists(out / "assets")


@pytest.mark.parametrize("after", [False, True])
def test_a_render_with_data_files_interrupted_at_any_change_is_run_again_to_the_same_site(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: bool) -> None:
    (tmp_path / "reference" / "course").mkdir(parents=True)
    expected = tree(write_site(NEW_DATA, write_site(OLD_DATA, tmp_path / "reference" / "out",
                                                    tmp_path / "reference" / "course"),
                               tmp_path / "reference" / "course"))
    counted = write_site(OLD_DATA, tmp_path / "count" / "out", tmp_path / "reference" / "course")
    counter = Interrupt(None, after=False)
    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", counter.wrap(os.replace))
        patch.setattr(os, "unlink", counter.wrap(os.unlink))
        write_site(NEW_DATA, counted, tmp_path / "reference" / "course")
    points = counter.seen
    changed = {n for n in NEW_DATA if OLD_DATA.get(n) != NEW_DATA[n]} | (OLD_DATA.keys() - NEW_DATA.keys())
    assert points >= len(changed) + 2  # every file written or removed, and the marker twice
    for at in range(points):
        out = write_site(OLD_DATA, tmp_path / f"at-{at}", tmp_path / "reference" / "course")
        with monkeypatch.context() as patch:
            interrupt = Interrupt(at, after)
            patch.setattr(os, "replace", interrupt.wrap(os.replace))
            patch.setattr(os, "unlink", interrupt.wrap(os.unlink))
            with pytest.raises(KeyboardInterrupt):
                write_site(NEW_DATA, out, tmp_path / "reference" / "course")
        write_site(NEW_DATA, out, tmp_path / "reference" / "course")
        assert tree(out) == expected, f"interrupted {'after' if after else 'before'} change {at}"


@pytest.mark.parametrize("kind", ["a link to a folder", "a file"])
def test_an_assets_that_is_no_folder_is_refused_and_nothing_is_written_or_removed_through_it(tmp_path: Path,
                                                                                        kind: str) -> None:
    """The folder swapped for a link to a copy of it (the same bytes, so every hash the
    marker records still matches there), or for a file: a render with data files refuses in
    one line, and one without leaves the recorded files where the link leads alone."""
    (tmp_path / "course").mkdir()
    out = write_site(OLD_DATA, tmp_path / "out", tmp_path / "course")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(out / "assets", elsewhere)
    if kind == "a file":
        (out / "assets").write_bytes(b"a person's file")
    else:
        (out / "assets").symlink_to(elsewhere)
    kept = tree(elsewhere)
    with pytest.raises(UsageError) as refused:
        write_site(NEW_DATA, out, tmp_path / "course")
    assert "holds 'assets'" in str(refused.value) and "\n" not in str(refused.value)
    write_site(NEW, out, tmp_path / "course")
    assert tree(elsewhere) == kept
    assert (out / "assets").is_symlink() == (kind != "a file")


@pytest.mark.slow
def test_a_render_with_data_files_killed_mid_write_leaves_no_temporary_in_the_folder_once_run_again(
        tmp_path: Path) -> None:
    (tmp_path / "course").mkdir()
    expected = tree(write_site(NEW_DATA, write_site(OLD_DATA, tmp_path / "reference", tmp_path / "course"),
                               tmp_path / "course"))
    site = repr({name: data.decode() for name, data in NEW_DATA.items()})
    left, at = [], 0
    while True:  # killed at each rename in turn, until the render finishes before the kill
        out = write_site(OLD_DATA, tmp_path / f"kill-{at}", tmp_path / "course")
        killed = subprocess.run([sys.executable, "-c", _KILLER, str(at), site, str(out), str(tmp_path / "course")],
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=60,
                                check=False)
        if killed.returncode == 0:
            break
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        left += [name for name in tree(out) if name.startswith("assets/") and name.endswith(".tmp")]
        write_site(NEW_DATA, out, tmp_path / "course")
        assert tree(out) == expected, f"killed at change {at}"
        at += 1
    assert left and at > len(left)  # kills left half-written data files, and the reruns swept them
