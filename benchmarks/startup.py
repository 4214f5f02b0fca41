"""Benchmark: how long the command line takes to start, against the interpreter's own start.

    python benchmarks/startup.py [--rounds 7]

Times ``python -c pass`` (the baseline, measured in the same run), ``stay --help``,
``stay --version``, a usage error, and ``stay validate`` of an empty directory of
courses (start-up plus almost no work), each the best of ``--rounds`` interleaved
runs, and prints each and its difference from the baseline. Goals on a quiet 2-core
machine: ``--help``, ``--version`` and a usage error within 0.1 s; ``validate`` within
0.1 s plus its work. Python's bytecode cache is on (PYTHONDONTWRITEBYTECODE unset), as
on a user's machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "stay --help": [sys.executable, "-m", "stay.cli", "--help"],
    "stay --version": [sys.executable, "-m", "stay.cli", "--version"],
    "stay frobnicate (usage error)": [sys.executable, "-m", "stay.cli", "frobnicate"],
    "stay validate EMPTY": [sys.executable, "-m", "stay.cli", "validate", "{empty}"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as empty:
        for _ in range(args.rounds + 1):  # the first round only warms the bytecode cache
            for name, command in CASES.items():
                argv = [part.format(empty=empty) for part in command]
                start = time.perf_counter()
                subprocess.run(argv, env=env, capture_output=True, check=False)
                seconds = time.perf_counter() - start
                best[name] = min(best.get(name, float("inf")), seconds) if _ else float("inf")
    baseline = best["python -c pass"]
    for name, seconds in best.items():
        extra = "" if name == "python -c pass" else f"   (+{seconds - baseline:.3f} s over the interpreter)"
        print(f"{name:32} {seconds:.3f} s{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
