"""Benchmark: the wave's makespan under two caps, against the ideal for those caps.

    python benchmarks/wave.py [--latency 0.5]

Plans a 12-lesson course offline (examples/briefs/sql-window-functions.yaml), then
for each cap setting (lessons in flight W, model calls in flight M) writes the wave
(12 lessons x 3 calls + the capstone = 37 calls) with the offline backend sleeping
``--latency`` seconds per call. Prints the measured makespan of the wave, the ideal
for those caps, and their ratio.

The ideal is a lower bound: at most min(M, 3W + 1) calls can be in flight (W
lessons of three calls each, and the capstone, which takes no lesson slot), and
equal-length calls on k slots need ceil(calls / k) rounds; no lesson can finish in
less than one round, and only W lessons run at once:
    ideal = latency x max(ceil(37 / min(M, 3W + 1)), ceil(12 / W))
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stay.models import OfflineBackend  # noqa: E402
from stay.pipeline import build_course, run_command  # noqa: E402

BRIEF = ROOT / "examples" / "briefs" / "sql-window-functions.yaml"
CAPS = [(4, 8), (2, 3), (1, 8), (8, 32), (4, 4)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    quiet = lambda _line: None  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        course = build_course(BRIEF, courses_dir=tmp, yes=True, progress=quiet).course_dir
        lessons = len(list(course.glob("modules/*/*.plan.yaml")))
        calls = 3 * lessons + 1
        print(f"wave: {lessons} lessons, {calls} calls, {args.latency:.2f} s per call")
        print(f"{'W':>3} {'M':>3}  {'measured':>9} {'ideal':>7} {'ratio':>6}  "
              "most in flight (lessons, calls)")
        for width, models in CAPS:
            for path in [*course.glob("modules/*/*.md"), *course.glob("modules/*/*.exercises.yaml"),
                         *course.glob("modules/*/*.quiz.yaml"), course / "project.yaml"]:
                path.unlink()
            os.environ["STAY_WAVE_CONCURRENCY"] = str(width)
            os.environ["STAY_MODEL_CONCURRENCY"] = str(models)
            result = run_command("write", course.name, courses_dir=tmp, progress=quiet,
                                 backend=OfflineBackend(latency=args.latency))
            wave = result.wave
            assert wave is not None and wave.calls == calls
            assert result.validation is not None and not result.validation.defects
            ideal = args.latency * max(math.ceil(calls / min(models, 3 * width + 1)),
                                       math.ceil(lessons / width))
            print(f"{width:>3} {models:>3}  {wave.seconds:8.3f}s {ideal:6.2f}s {wave.seconds / ideal:6.3f}  "
                  f"({wave.max_lessons_in_flight}, {wave.max_calls_in_flight})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
