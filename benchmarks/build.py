"""Benchmark: an offline build of a 12-lesson course, and a rebuild that has nothing to do.

    python benchmarks/build.py [--rounds 3]

Builds examples/briefs/sql-window-functions.yaml (5.5 hours: 4 modules, 12 lessons)
with the offline backend and --yes into a fresh directory, several rounds, then
rebuilds it once more (zero model calls). Prints the wall time of each, the
medians, and the ratio rebuild / build: the baseline is measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stay.pipeline import build_course  # noqa: E402

BRIEF = ROOT / "examples" / "briefs" / "sql-window-functions.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    builds, rebuilds = [], []
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            result = build_course(BRIEF, courses_dir=tmp, yes=True, progress=lambda _line: None)
            builds.append(time.perf_counter() - start)
            lessons = sum(1 for _ in Path(result.course_dir).glob("modules/*/*.md"))
            start = time.perf_counter()
            again = build_course(BRIEF, courses_dir=tmp, yes=True, progress=lambda _line: None)
            rebuilds.append(time.perf_counter() - start)
            assert result.validation is not None and not result.validation.defects
            assert again.calls == 0
            print(f"round {round_ + 1}: build {builds[-1]:.3f} s ({lessons} lessons, {result.calls} "
                  f"model calls), rebuild {rebuilds[-1]:.3f} s ({again.calls} calls)", flush=True)
    build, rebuild = statistics.median(builds), statistics.median(rebuilds)
    print(f"median: build {build:.3f} s, rebuild {rebuild:.3f} s, ratio rebuild/build {rebuild / build:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
