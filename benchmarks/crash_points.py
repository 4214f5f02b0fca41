"""Benchmark: kill ``stay build`` at every write point, resume it, and count identical courses.

    python benchmarks/crash_points.py [--brief examples/briefs/incident-postmortems.yaml]
                                      [--signal KILL|INT|both] [--every 1]

A write point is just before or just after one ``os.replace`` or ``os.fsync`` (any
thread); they are counted in a run never killed. At each (or every ``--every``-th) the
build is killed (SIGKILL, or Ctrl-C: SIGINT to the main thread), run again, and its course
compared byte for byte with the run never killed, ``.state/`` included (``.runs/`` and
the run log left out: tests/crash_probe.py says why). Prints, per signal,
"N of M kill points resumed identical", each point that did not, and the wall time.
The suite runs a sample of the same points (tests/pipeline/test_faults.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "crash_probe.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brief", default="examples/briefs/incident-postmortems.yaml")
    parser.add_argument("--signal", choices=("KILL", "INT", "both"), default="both")
    parser.add_argument("--every", type=int, default=1)
    ns = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    if os.access("/dev/shm", os.W_OK):
        env.setdefault("TMPDIR", "/dev/shm")  # a kill is not a power cut: real syncs change nothing here
    failed = False
    for kind in (("KILL", "INT") if ns.signal == "both" else (ns.signal,)):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(PROBE), "--signal", kind, "--every", str(ns.every),
                               "--", "build", ns.brief, "--yes"], cwd=ROOT, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"the probe failed: {done.stderr.strip()}")
        head, *points = [json.loads(line) for line in done.stdout.splitlines()]
        bad = [p for p in points if p["resumed"] != 0 or p["differs"]]
        print(f"SIG{kind}: {len(points) - len(bad)} of {len(points)} kill points resumed identical "
              f"({head['points']} write points in all; {time.perf_counter() - started:.0f} s)")
        for point in bad:
            print(f"  point {point['point']} ({point['where']}): resumed with exit {point['resumed']}, "
                  f"differs: {', '.join(point['differs']) or '-'}")
        failed = failed or bool(bad)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
