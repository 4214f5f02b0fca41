"""Benchmark: the wave's makespan under two caps, against the ideal for those caps.

    python benchmarks/wave.py [--latency 0.5]

Plans a 12-lesson course offline (examples/briefs/sql-window-functions.yaml), then
for each cap setting (lessons in flight W, model calls in flight M) writes the wave
(12 lessons x 3 calls + the capstone = 37 calls) with the offline backend sleeping
``--latency`` seconds per call. Prints the measured makespan of the wave, the ideal
for those caps, and their ratio.

The ideal is the optimum for equal-length calls. At most min(M, 3W + 1) calls can
be in flight (W lessons of three calls each, and the capstone, which takes no
lesson slot), so (3n + 1) calls need ceil((3n + 1) / min(M, 3W + 1)) rounds. A
lesson holds its slot until its three calls are done, and can have at most
min(M, 3) of them in flight, so it needs ceil(3 / min(M, 3)) rounds, and n lessons
W at a time need ceil(n / W) times that:
    ideal = latency x max(ceil((3n + 1) / min(M, 3W + 1)), ceil(n / W) x ceil(3 / min(M, 3)))
(The earlier bound, max(ceil(37 / min(M, 3W + 1)), ceil(12 / W)), is exact only when
M >= 3: for W=1, M=2 the optimum is 24 rounds, not 19.) Before measuring, the
formula is checked against an exhaustive search of every schedule for small
courses (1 to 4 lessons, W 1 to 4, M 1 to 7).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stay.pipeline import build_course, run_command  # noqa: E402
from stay.testing import RiggedBackend  # noqa: E402

BRIEF = ROOT / "examples" / "briefs" / "sql-window-functions.yaml"
CAPS = [(4, 8), (2, 3), (1, 8), (1, 2), (8, 32), (4, 4)]


def ideal_rounds(lessons: int, width: int, models: int) -> int:
    calls = 3 * lessons + 1
    return max(math.ceil(calls / min(models, 3 * width + 1)),
               math.ceil(lessons / width) * math.ceil(3 / min(models, 3)))


def searched_rounds(lessons: int, width: int, models: int) -> int:
    """The fewest rounds of any schedule, by exhaustive search. A state is the sorted
    calls left of each started lesson, the lessons not started, and whether the capstone
    is done; each round runs at most ``models`` calls, from at most ``width`` lessons
    started and not finished, plus the capstone, which holds no lesson slot."""

    @functools.cache
    def best(started: tuple[int, ...], waiting: int, capstone: bool) -> int:
        if not started and not waiting and capstone:
            return 0
        options = []
        for new in range(0, min(waiting, width - len(started)) + 1):
            lanes = [*started, *([3] * new)]
            for take in itertools.product(*(range(0, left + 1) for left in lanes)):
                for cap in ((0, 1) if not capstone else (0,)):
                    if sum(take) + cap == 0 or sum(take) + cap > models:
                        continue
                    left = tuple(sorted(lane - t for lane, t in zip(lanes, take, strict=True) if lane - t))
                    options.append(1 + best(left, waiting - new, capstone or bool(cap)))
        return min(options)

    return best((), lessons, False)


def check_the_ideal() -> None:
    for lessons, width, models in itertools.product(range(1, 5), range(1, 5), range(1, 8)):
        found, formula = searched_rounds(lessons, width, models), ideal_rounds(lessons, width, models)
        assert found == formula, (lessons, width, models, found, formula)
    print("ideal: equals an exhaustive search of every schedule for 1-4 lessons, W 1-4, M 1-7")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    check_the_ideal()
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
                                 backend=RiggedBackend(latency=args.latency))
            wave = result.wave
            assert wave is not None and wave.calls == calls
            assert result.validation is not None and not result.validation.defects
            ideal = args.latency * ideal_rounds(lessons, width, models)
            print(f"{width:>3} {models:>3}  {wave.seconds:8.3f}s {ideal:6.2f}s {wave.seconds / ideal:6.3f}  "
                  f"({wave.max_lessons_in_flight}, {wave.max_calls_in_flight})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
