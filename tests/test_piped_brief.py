"""A brief piped in (``/dev/stdin``, ``<(...)``) is read, by every command that takes one,
once: a pipe cannot be read twice, so nothing before the pipeline may drain it. An empty
one is refused in words that say so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.damage import assert_one_line, stay_process
from tests.models.helpers import HTTP


@pytest.mark.parametrize("command", ["new", "build"])
def test_a_brief_piped_through_dev_stdin_is_read(tmp_path: Path, command: str) -> None:
    done = stay_process(command, "/dev/stdin", "--courses-dir", str(tmp_path / "c"), "--backend", "offline",
                        *(("--yes",) if command == "build" else ()), cwd=tmp_path, stdin=HTTP.read_text())
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-1500:]
    assert (tmp_path / "c" / "how-http-requests-travel" / "course.yaml").is_file()


def test_a_brief_from_process_substitution_is_read(tmp_path: Path) -> None:
    """``stay build <(cat brief)``: bash hands stay a /dev/fd path to a pipe."""
    script = f'PYTHONPATH={ROOT} exec python -m stay.cli build <(cat "$1") --courses-dir "$2" --backend offline --yes'
    done = subprocess.run(["bash", "-c", script, "bash", str(HTTP), str(tmp_path / "c")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-1500:]
    assert (tmp_path / "c" / "how-http-requests-travel" / "course.yaml").is_file()


def test_an_empty_pipe_is_refused_as_empty(tmp_path: Path) -> None:
    done = stay_process("build", "/dev/stdin", "--courses-dir", str(tmp_path / "c"), "--backend", "offline",
                        cwd=tmp_path, stdin="")
    assert "the brief is empty" in assert_one_line(done, (2,))
