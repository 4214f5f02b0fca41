"""Benchmark: what a huge curriculum and a huge lesson cost each command (issue 20, item 4).

Builds, in a temporary directory, copies of the sample course: one whose curriculum
has ``--lessons`` lessons (100 modules of 100 lessons by default, the most the id
format allows), and one whose first lesson is a sparse file of ``--lesson-mb`` MB.
Runs ``stay status``, ``stay view`` and ``stay validate`` on each, every command in a
process of its own, and prints its exit code, wall time and peak resident memory
(the child's own ``ru_maxrss``, from ``os.wait4``). The goals: status under 10 s and
500 MB at 10,000 lessons (a refusal at house style's limits counts), and no command
holding a 500 MB lesson in memory.

    python benchmarks/bounds.py [--lessons 10000] [--lesson-mb 500]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "courses" / "how-http-requests-travel"
LESSON = "modules/m01-from-url-to-connection/m01-l01.md"
GOAL_SECONDS, GOAL_MB = 10.0, 500


def _course(courses: Path, slug: str) -> Path:
    root = courses / slug
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".*"))  # no run state
    return root


def big_curriculum(courses: Path, lessons: int) -> str:
    root = _course(courses, "huge-curriculum")
    data = yaml.safe_load((root / "curriculum.yaml").read_text(encoding="utf-8"))
    module, lesson = data["modules"][0], data["modules"][0]["lessons"][0]
    modules = [{**module, "id": f"m{m:02d}", "slug": f"part-{m}", "lessons": [
        {**lesson, "id": f"m{m:02d}-l{n:02d}"} for n in range(min(100, lessons - 100 * m))]}
        for m in range((lessons + 99) // 100)]
    (root / "curriculum.yaml").write_text(yaml.safe_dump({"modules": modules}, sort_keys=False), encoding="utf-8")
    return root.name


def big_lesson(courses: Path, megabytes: int) -> str:
    root = _course(courses, "huge-lesson")
    with open(root / LESSON, "r+b") as handle:
        handle.truncate(megabytes * 2**20)  # sparse: costs no disk
    return root.name


def run(args: list[str]) -> tuple[int, float, float]:
    """Exit code, wall seconds and peak resident MB of ``stay <args>`` in its own process."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "stay.cli", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, time.perf_counter() - started, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--lesson-mb", type=int, default=500)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stay-bounds-") as temp:
        courses = Path(temp) / "courses"
        cases = [(f"{options.lessons:,} lessons", big_curriculum(courses, options.lessons)),
                 (f"a {options.lesson_mb} MB lesson", big_lesson(courses, options.lesson_mb))]
        missed = 0
        print(f"{'course':<20} {'command':<9} {'exit':>4} {'seconds':>8} {'peak MB':>8}")
        for name, slug in cases:
            for command in ("status", "view", "validate"):
                if command == "validate":
                    args = ["validate", str(courses / slug)]
                elif command == "view":
                    args = ["view", slug, "--courses-dir", str(courses), "--out", str(Path(temp) / f"site-{slug}")]
                else:
                    args = ["status", slug, "--courses-dir", str(courses)]
                code, seconds, peak = run(args)
                print(f"{name:<20} {command:<9} {code:>4} {seconds:>8.2f} {peak:>8.0f}")
                if command == "status" and (seconds > GOAL_SECONDS or peak > GOAL_MB):
                    missed += 1
    print(f"goal: status under {GOAL_SECONDS:.0f} s and {GOAL_MB} MB: {'met' if not missed else 'MISSED'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
