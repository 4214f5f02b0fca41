"""Running ``stay`` as its own process against damaged data, and what every such run must
end in: exit 2 or 5, one line saying so on stderr, no traceback, and never a hang (a
timeout, so a read that blocks fails the test instead of stalling the suite)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

VERDICTS = ("error: ", "refused: ", "internal error: ", "unavailable: ")
"""How each line that ends a command begins (stay.cli._report): a run says one of them."""


def stay_process(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60,
                 stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m stay.cli ARGS`` in a process of its own, this checkout first on the path,
    with no API key. Output is decoded as UTF-8 with replacement: what the process wrote,
    whatever its encoding."""
    environment = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    environment.update({"PYTHONPATH": str(ROOT), **(env or {})})
    done = subprocess.run([sys.executable, "-m", "stay.cli", *args], cwd=cwd, env=environment, timeout=timeout,
                          capture_output=True, input=(stdin or "").encode(), check=False)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("utf-8", "replace"),
                                       done.stderr.decode("utf-8", "replace"))


def assert_one_line(result: subprocess.CompletedProcess[str], codes: tuple[int, ...] = (2, 5)) -> str:
    """The run ended in one of ``codes`` with exactly one verdict line on stderr (its
    last), and no traceback; that line."""
    assert "Traceback" not in result.stderr, result.stderr
    verdicts = [line for line in result.stderr.splitlines() if line.startswith(VERDICTS)]
    assert result.returncode in codes, (result.returncode, result.stderr[-2000:])
    assert len(verdicts) == 1 and result.stderr.splitlines()[-1] == verdicts[0], result.stderr[-2000:]
    return verdicts[0]
