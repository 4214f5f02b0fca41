"""A damaged request-cache entry is a miss, never exit 3, a hang, a MemoryError or a
negative cost: every kind of damage from the table, planted in every entry of a built
course, then the course's lessons are asked for again."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from stay._bounds import MAX_STORED_BYTES, MAX_STORED_DEPTH, Damaged, load_stored_json
from tests.conftest import run_stay
from tests.damage import assert_one_line, stay_process
from tests.models.helpers import HTTP

SLUG = "how-http-requests-travel"


def _write(text: str | bytes) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        path.write_bytes(text.encode() if isinstance(text, str) else text)
    return damage


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)  # nobody ever writes to it: a read of it blocks for ever


def _endless(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")  # a read of it never ends


def _negative(path: Path) -> None:
    entry = json.loads(path.read_text())
    entry["reported"] = False  # unreported usage is what the next run counts
    entry["answer"]["usage"] = dict.fromkeys(entry["answer"]["usage"], -10**9)
    path.write_text(json.dumps(entry))


def _sparse(path: Path) -> None:
    with path.open("r+b") as handle:  # larger than the limit, without using the disk
        handle.truncate(MAX_STORED_BYTES + 1)


DAMAGES: dict[str, Callable[[Path], None]] = {
    "nested": _write("[" * (MAX_STORED_DEPTH * 1000) + "]" * (MAX_STORED_DEPTH * 1000)),
    "fifo": _fifo,
    "endless": _endless,
    "negative usage": _negative,
    "wrong type": _write('{"answer": [1, 2], "request": 3, "model": {}}'),
    "not UTF-8": _write(b'{"answer": "\xff\xfe"}'),
    "truncated": _write('{"model": "m", "answer": {"data": {'),
    "huge": _sparse,
}
UNENDING = {"fifo", "endless"}
"""The damages whose read, unguarded, blocks for ever or never ends."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course built offline with the request cache on: one entry per call."""
    where = tmp_path_factory.mktemp("cached")
    done = run_stay("build", str(HTTP), "--courses-dir", str(where), "--yes", "--backend", "offline",
                    env={"STAY_CACHE": "1"})
    assert done.returncode == 0, done.stderr
    return where


def _damaged(built: Path, tmp_path: Path, kind: str) -> Path:
    courses = tmp_path / "courses"
    shutil.copytree(built, courses, symlinks=True)
    entries = sorted((courses / SLUG / ".runs" / "cache").glob("*.json"))
    assert entries
    for entry in entries:
        DAMAGES[kind](entry)
    for lesson in (courses / SLUG / "modules").glob("*/*.md"):
        lesson.unlink()  # the wave asks for every lesson again
    return courses


@pytest.mark.sweep
@pytest.mark.parametrize("kind", sorted(DAMAGES))
def test_a_replay_over_a_damaged_entry_is_a_miss_in_one_line(built: Path, tmp_path: Path, kind: str) -> None:
    courses = _damaged(built, tmp_path, kind)
    args = ("build", SLUG, "--courses-dir", str(courses), "--yes", "--backend", "offline", "--replay")
    # A read that would block or never end runs in a process of its own: at worst it stalls that process.
    done = (stay_process(*args, cwd=tmp_path, env={"STAY_CACHE": "1"}) if kind in UNENDING
            else run_stay(*args, env={"STAY_CACHE": "1"}))
    if kind == "endless":  # a link out of the course: refused when the course is opened, before any read
        line = assert_one_line(done, (2,))
        assert "a symlink leads outside the course (to /dev/zero)" in line, line
        return
    line = assert_one_line(done, (5,))
    assert line.startswith("refused: replay has no answer") and "is damaged (" in line, line


@pytest.mark.parametrize("kind", ["fifo", "negative usage"])
def test_a_run_over_a_damaged_entry_asks_again_and_never_counts_a_negative_cost(
        built: Path, tmp_path: Path, kind: str) -> None:
    courses = _damaged(built, tmp_path, kind)
    done = stay_process("build", SLUG, "--courses-dir", str(courses), "--yes", "--backend", "offline",
                        cwd=tmp_path, env={"STAY_CACHE": "1"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    usage = next(line for line in done.stdout.splitlines() if line.startswith("usage:"))
    assert not re.search(r"-\d", usage), usage
    assert int(usage.split()[1]) > 0  # the lessons were asked for again, and paid for
    asked_again = []
    for entry in (courses / SLUG / ".runs" / "cache").glob("*.json"):
        try:
            asked_again.append(load_stored_json(entry))
        except Damaged:
            continue  # planted in an entry this run did not need
    # each answer asked for again was stored whole, over its damaged entry
    assert any(min(e["answer"]["usage"].values()) >= 0 for e in asked_again if isinstance(e, dict))
