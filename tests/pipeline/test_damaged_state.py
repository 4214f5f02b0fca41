"""A damaged `.state/` file (a FIFO, a file far past anything stay writes, a link, not
UTF-8) ends a command in one line with exit 2, never a hang, a traceback or a read of the
whole file: the ledgers, the journal and the run log are read like every stored file
(stay._bounds: a regular file, at most 16 MB, shallow)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from stay._bounds import MAX_STORED_BYTES
from tests.damage import assert_one_line, stay_process

SLUG = "how-http-requests-travel"


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)  # a read with no writer would block for ever


def _huge(path: Path) -> None:
    with path.open("ab") as handle:
        handle.truncate(MAX_STORED_BYTES + 1)  # sparse: no disk, but far past what stay writes


def _link(path: Path) -> None:
    target = path.with_name(path.name + ".real")
    path.rename(target)
    path.symlink_to(target.name)  # inside the course, but not the file stay wrote


DAMAGES: dict[str, Callable[[Path], None]] = {"fifo": _fifo, "huge": _huge, "link": _link}
FILES = ("hashes.json", "gates.json", "run-log.md")


@pytest.mark.sweep
@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("name", FILES)
def test_a_damaged_state_file_is_one_line_not_a_hang(courses: Path, name: str, damage: str) -> None:
    path = courses / SLUG / ".state" / name
    DAMAGES[damage](path)
    done = stay_process("build", SLUG, "--yes", "--courses-dir", str(courses), cwd=courses, timeout=60)
    line = assert_one_line(done, (2,))
    assert name in line, line
