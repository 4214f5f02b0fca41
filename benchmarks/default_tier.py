"""Benchmark: the CPU-seconds of the README's test command, the default tier.

    python benchmarks/default_tier.py [pytest arguments]

Runs ``python -m pytest -n 2`` with CI unset (so the slow tiers are deselected and the
hypothesis profile is the developer's) and prints the user+sys seconds of the whole
process tree, pytest, its workers and every process a test starts, and the wall time.
Goal: at most 300 CPU-seconds. A collection first warms Python's bytecode cache
(PYTHONDONTWRITEBYTECODE unset, as on a user's machine); it is not counted.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(args: list[str]) -> int:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE", "PYTHONDONTWRITEBYTECODE")}
    command = [sys.executable, "-m", "pytest", "-n", "2", "-q", *args]
    subprocess.run([*command, "--collect-only"], cwd=ROOT, env=env, capture_output=True, check=False)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    code = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    print(f"default tier: {user + system:.0f} CPU-seconds (user {user:.0f}, sys {system:.0f}), "
          f"wall {wall:.0f} s on {os.cpu_count()} cores; pytest exited {code}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
