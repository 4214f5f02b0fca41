"""The tour runs as written (issue 26): every shell block of README.md and docs/*.md, pasted
in order into a fresh clone, works.

The blocks are the fenced ones tagged ``bash``, ``sh``, ``shell`` or ``console`` (of a
``console`` block, the ``$ `` lines), README.md first, then docs/*.md in sorted order, each
file's blocks in file order in ONE ``bash`` of its own (``set -eo pipefail``: a variable one
block sets, the next uses), in one fresh ``git clone`` made here. A block whose fence is
directly under ``<!-- tour: skip (the reason) -->`` is left out: it needs an API key, serves
or watches until stopped, needs a browser, or (the README's set-up) is what CI runs around
this very test. The clone is of HEAD of the repository this test runs from: edits not yet
committed are not in it, so commit before trusting a pass.

The commands run the clone's code (PYTHONPATH is the clone, and ``stay`` and ``python`` on
PATH are this interpreter), with HOME and TMPDIR inside tmp_path, no API keys or stay
settings in the environment, and no network (every proxy variable names a closed port and
pip has no index). Afterwards the clone must be exactly as cloned: the tour never writes the
committed sample, nor anything else into the checkout.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

FENCE = re.compile(r"^```(\w*)\s*$")
SHELLS = ("bash", "sh", "shell", "console")
SKIP = re.compile(r"^<!-- tour: skip \((?P<reason>[^)]+)\) -->$")
FAILED = "tour-failed:"  # the ERR trap's mark: line, exit code, command
SECONDS_PER_FILE = 150


@dataclass(frozen=True)
class Block:
    line: int  # of its first command line, 1-based, in its file
    lines: tuple[str, ...]
    skipped: str | None  # the reason, when the fence is directly under a tour: skip comment


def blocks(text: str) -> list[Block]:
    """The shell blocks of one Markdown text, in order."""
    found: list[Block] = []
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        opened = FENCE.match(lines[number])
        if opened is None:
            number += 1
            continue
        end = next(i for i in range(number + 1, len(lines)) if lines[i].startswith("```"))
        if opened.group(1) in SHELLS:
            skip = SKIP.match(lines[number - 1]) if number else None
            body = lines[number + 1:end]
            if opened.group(1) == "console":
                body = [line[2:] if line.startswith("$ ") else "" for line in body]
            found.append(Block(number + 2, tuple(body), skip.group("reason") if skip else None))
        number = end + 1
    return found


def script(text: str) -> str:
    """One file's runnable blocks as a bash script whose line N is the file's line N, so a
    failure's $LINENO is where to look in the Markdown."""
    out = [""] * (len(text.splitlines()) + 1)
    out[0] = (f"set -eo pipefail; trap 'echo \"{FAILED} $LINENO $? $BASH_COMMAND\" >&2' ERR")
    for block in blocks(text):
        if block.skipped is None:
            for offset, line in enumerate(block.lines):
                out[block.line - 1 + offset] = line
    return "\n".join(out) + "\n"


def tour_files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def test_a_skip_names_its_reason_and_a_console_block_runs_its_commands() -> None:
    """The extraction itself, on a text made here: what runs, what is skipped and why."""
    text = "\n".join(["# t", "```bash", "echo one", "```", "<!-- tour: skip (serves forever) -->", "```sh",
                      "stay view x --serve", "```", "```console", "$ echo two", "two", "```", "```text",
                      "not run", "```", "```python", "print(3)", "```"])
    found = blocks(text)
    assert [(b.line, b.lines, b.skipped) for b in found] == [
        (3, ("echo one",), None), (7, ("stay view x --serve",), "serves forever"), (10, ("echo two", ""), None)]
    lines = script(text).splitlines()
    assert lines[2] == "echo one" and lines[9] == "echo two" and "stay view" not in script(text)


def test_every_skip_comment_is_directly_above_a_shell_block() -> None:
    """A skip comment that drifted away from its fence would silently stop skipping."""
    for path in tour_files(ROOT):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.startswith("<!-- tour:"):
                assert SKIP.match(line), f"{path.name}:{number + 1}: write <!-- tour: skip (the reason) -->"
                following = FENCE.match(lines[number + 1]) if number + 1 < len(lines) else None
                assert following and following.group(1) in SHELLS, \
                    f"{path.name}:{number + 1}: a tour: skip comment must sit directly above a shell block's fence"


def _clone(tmp_path: Path) -> Path:
    if shutil.which("git") is None or subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                                     check=False).returncode != 0:
        pytest.skip("not a git checkout: the tour runs in a fresh clone of one")
    clone = tmp_path / "clone"
    for command in (["git", "clone", "-q", "--no-checkout", str(ROOT), str(clone)],
                    ["git", "-C", str(clone), "fetch", "-q", str(ROOT), "HEAD"],  # HEAD even when detached
                    ["git", "-C", str(clone), "checkout", "-q", "--detach", "FETCH_HEAD"]):
        subprocess.run(command, check=True, capture_output=True, timeout=120)
    return clone


def _environment(tmp_path: Path, clone: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, run in (("stay", f'"{sys.executable}" -m stay'), ("python", f'"{sys.executable}"')):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec {run} "$@"\n')
        (bin_dir / name).chmod(0o755)
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir()
    drop = ("ANTHROPIC_", "OPENAI_", "OTEL_", "STAY_", "PYTHON")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    dead = "http://127.0.0.1:9"  # the discard port: nothing answers, so nothing leaves
    env.update({
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "PYTHONPATH": str(clone),
        "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
        "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "", "NO_PROXY": "", "no_proxy": "",
        **{name: dead for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")},
    })
    return env


def _run(text: str, name: str, clone: Path, env: dict[str, str]) -> tuple[int, str]:
    """One file's script: its exit code and stderr. It runs in a process group of its own,
    which is killed when it ends or times out, so a block that started a server (or
    anything left in the background) never outlives the test."""
    process = subprocess.Popen(["bash", "-c", text, name], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, stderr = process.communicate(timeout=SECONDS_PER_FILE)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate()
        stderr += (f"\n{FAILED} ? timeout still running after {SECONDS_PER_FILE} s: a command that serves or "
                   "watches belongs under <!-- tour: skip (the reason) -->")
        code = -1
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the group is the script's alone (start_new_session)
    return code, stderr


@pytest.mark.slow
def test_the_tour_runs_as_written_in_a_fresh_clone(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    env = _environment(tmp_path, clone)
    failures = []
    for path in tour_files(clone):
        text = path.read_text()
        if not any(block.skipped is None for block in blocks(text)):
            continue
        code, stderr = _run(script(text), path.name, clone, env)
        if code != 0:
            marks = [line for line in stderr.splitlines() if line.startswith(FAILED)]
            where = marks[-1].split(maxsplit=3)[1:] if marks else ["?", str(code), "?"]
            said = "\n    ".join(line for line in stderr.splitlines()[-25:] if not line.startswith(FAILED))
            failures.append(f"{path.relative_to(clone)}:{where[0]}: exit {where[1]}: "
                            f"{where[2] if len(where) > 2 else '?'}\n    {said}")
    assert not failures, "\n".join(failures)
    changed = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=clone, capture_output=True,
                             text=True, check=True).stdout
    assert changed == "", f"the tour wrote into the clone:\n{changed}"
