"""The course lock where there is no flock (the path Windows takes), proven on Linux.

Each process here runs with ``fcntl`` unimportable (``sys.modules["fcntl"] = None``, set
before stay is imported: the import then raises ImportError, as it does on Windows), so
stay must import and lock through filelock. On Linux without fcntl filelock's own choice
is its soft lock, not Windows' LockFileEx; what is proven here is stay's side: the import,
the build under the lock, the one-line refusal, the release on exit and on Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from stay._lock import HELD, LOCK
from stay.errors import CourseLocked, exit_code
from tests.conftest import ROOT
from tests.parity.harness import reference_report

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
SLUG = "how-http-requests-travel"
TIMEOUT = 120  # seconds: an offline build takes a few; a hang fails instead of blocking the suite

NO_FCNTL = 'import sys; sys.modules["fcntl"] = None\n'
"""Prepended to every script: what makes this process lack flock."""

STAY = NO_FCNTL + "from stay.cli import main\nsys.exit(main())\n"
"""``stay ARGS`` (main() reads sys.argv, so Ctrl-C is handled as the real command's)."""

HOLDER = NO_FCNTL + """\
from pathlib import Path
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job inherits Ctrl-C ignored
import stay._lock
assert not stay._lock.FLOCK, "the flock path was taken"
with stay._lock.CourseLock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""
"""Holds the course's lock, on the portable path, until a line arrives on stdin (or Ctrl-C)."""


def env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}, "PYTHONPATH": str(ROOT)}


def stay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", STAY, *args], cwd=ROOT, env=env(), capture_output=True,
                          text=True, check=False, timeout=TIMEOUT)


def hold(course: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(course)], cwd=ROOT, env=env(), text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n", holder.communicate(timeout=TIMEOUT)
    return holder


def test_without_fcntl_stay_builds_under_the_lock_refuses_a_second_writer_and_releases(tmp_path: Path) -> None:
    course = tmp_path / SLUG
    built = stay("new", str(HTTP), "--courses-dir", str(tmp_path))
    assert built.returncode == 0, built.stderr
    built = stay("build", SLUG, "--yes", "--courses-dir", str(tmp_path))
    assert built.returncode == 0, built.stderr
    assert reference_report(course, strict=True)["summary"]["fail"] == 0
    assert not (course / HELD).exists()  # released on exit, and the held file with it
    assert (course / LOCK).read_text().strip().isdigit()  # the pid note stays, as on the flock path

    holder = hold(course)
    assert (course / HELD).exists()
    refused = stay("build", SLUG, "--yes", "--courses-dir", str(tmp_path))
    assert refused.returncode == exit_code(CourseLocked("")), refused.stderr
    lines = [line for line in refused.stderr.splitlines() if not line.startswith("backend: ")]  # the usual preamble
    assert len(lines) == 1 and "being written by another stay command" in lines[0], lines  # one line, no traceback
    assert f"(pid {holder.pid})" in lines[0]
    holder.communicate("\n", timeout=TIMEOUT)
    assert holder.returncode == 0 and not (course / HELD).exists()

    holder = hold(course)
    holder.send_signal(signal.SIGINT)  # Ctrl-C, to this one child only
    holder.wait(timeout=TIMEOUT)  # before stdin closes: an end of input that came first would let it exit 0
    holder.communicate(timeout=TIMEOUT)
    assert holder.returncode != 0 and not (course / HELD).exists()  # interrupted, and released
    again = stay("build", SLUG, "--yes", "--courses-dir", str(tmp_path))
    assert again.returncode == 0, again.stderr


SAME_PROCESS = NO_FCNTL + """\
from pathlib import Path
from stay._lock import CourseLock
from stay.errors import CourseLocked
course = Path(sys.argv[1])
with CourseLock(course):
    try:
        CourseLock(course).acquire()
    except CourseLocked:
        print("refused")
with CourseLock(course):
    print("free again")
"""


def test_without_fcntl_a_second_lock_in_the_same_process_is_refused_too(tmp_path: Path) -> None:
    """filelock's locks count re-entries of one object; a second CourseLock is another writer
    (the build's threads and the test suite take locks in one process)."""
    ran = subprocess.run([sys.executable, "-c", SAME_PROCESS, str(tmp_path)], cwd=ROOT, env=env(),
                         capture_output=True, text=True, check=False, timeout=TIMEOUT)
    assert ran.returncode == 0 and ran.stdout.split("\n") == ["refused", "free again", ""], ran
