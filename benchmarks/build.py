"""Benchmark: offline builds at 12, 24, 48 and 60 lessons, per-lesson cost, and the CLI.

    python benchmarks/build.py [--rounds 3]

1. In-process: builds a copy of examples/briefs/sql-window-functions.yaml sized to
   12, 24, 48 and 60 lessons with the offline backend and --yes, in fresh directories,
   interleaving the sizes over ``--rounds`` rounds, and prints the best wall time per
   size, the cost per lesson, and the ratio of the per-lesson cost at 48 to that at 12
   (goal: at most 1.1, i.e. builds linear in lessons).
   Then one more, untimed build of each size counts the ledger's file hashes (calls, the
   files hashed, the most times one file was) and every ``os.fsync``: the work that grew
   faster than the lessons, counted rather than timed.
2. From the command line: ``stay build`` of the 12-lesson brief into a fresh directory,
   then again with nothing to do (it walks the pipeline and finds every file current),
   best of ``--rounds``, beside ``python -c pass`` (the interpreter's own start-up,
   measured in the same run) for scale.
Measured on 2 cores: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stay.artefacts import DEFAULT_LIMITS  # noqa: E402
from stay.pipeline import build_course  # noqa: E402

BRIEF = ROOT / "examples" / "briefs" / "sql-window-functions.yaml"
SIZES = (12, 24, 48, 60)


def brief_for(lessons: int, directory: Path) -> Path:
    """The SQL brief with the time that makes the offline curriculum ``lessons`` long: the
    offline curriculum fills 90% of the lessons' share with 25-minute lessons, and the share
    is what the house style's practice percentage leaves of the brief's time, so the time
    asked for is the shortest whose share is that long."""
    share = round(lessons * 25 / 0.9)
    minutes = next(m for m in itertools.count(share) if DEFAULT_LIMITS.lessons_share(m) >= share)
    data = yaml.safe_load(BRIEF.read_text())
    data["time_available"] = f"{minutes} minutes"
    path = directory / f"brief-{lessons}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def quiet(_line: str) -> None:
    pass


def in_process(rounds: int) -> None:
    wall: dict[int, float] = {}
    cpu: dict[int, float] = {}
    counted: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        briefs = {size: brief_for(size, Path(tmp)) for size in SIZES}
        build_course(briefs[12], courses_dir=Path(tmp) / "warm", yes=True, progress=quiet)  # imports, caches
        for round_ in range(rounds):
            for size in SIZES:
                courses = Path(tmp) / f"r{round_}-{size}"
                start, started = time.perf_counter(), time.process_time()
                result = build_course(briefs[size], courses_dir=courses, yes=True, progress=quiet)
                seconds, used = time.perf_counter() - start, time.process_time() - started
                assert result.complete and result.validation is not None and not result.validation.defects
                counted[size] = len(list(result.course_dir.glob("modules/*/*.plan.yaml")))
                wall[size] = min(wall.get(size, seconds), seconds)
                cpu[size] = min(cpu.get(size, used), used)
    print(f"{'lessons':>7} {'build':>8} {'per lesson':>11} {'CPU':>8} {'per lesson':>11}")
    for size in SIZES:
        print(f"{counted[size]:>7} {wall[size]:7.3f}s {1000 * wall[size] / counted[size]:9.2f}ms "
              f"{cpu[size]:7.3f}s {1000 * cpu[size] / counted[size]:9.2f}ms")

    def growth(best: dict[int, float]) -> float:
        return (best[48] / counted[48]) / (best[12] / counted[12])

    # CPU time too: on a shared machine the wall clock also counts other people's work
    print(f"per-lesson cost at {counted[48]} lessons / at {counted[12]}: {growth(wall):.2f} wall, "
          f"{growth(cpu):.2f} CPU (goal <= 1.1)")


@contextmanager
def counting(owner: Any, name: str, key: Callable[..., str]) -> Iterator[Counter[str]]:
    """Count the calls of ``owner.name`` (by ``key`` of their arguments) while inside."""
    real = getattr(owner, name)
    seen: Counter[str] = Counter()

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen[key(*args)] += 1
        return real(*args, **kwargs)

    setattr(owner, name, counted)
    try:
        yield seen
    finally:
        setattr(owner, name, real)


def counts() -> None:
    """One untimed build of each size, then a rebuild with nothing to do: the ledger's
    file hashes (calls, files hashed, the most times one file was) and the syncs."""
    print(f"{'':>7} {'build':>34} {'rebuild with nothing to do':>34}")
    print(f"{'lessons':>7} {'hashes':>8} {'files':>6} {'most':>5} {'fsyncs':>7} {'|':>6}"
          f"{'hashes':>8} {'files':>6} {'most':>5} {'fsyncs':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        briefs = {size: brief_for(size, Path(tmp)) for size in SIZES}
        for size in SIZES:
            row = []
            for target in (briefs[size], "sql-window-functions"):
                with counting(hashlib, "file_digest", lambda handle, _algorithm: handle.name) as hashed, \
                        counting(os, "fsync", lambda _fd: "fsync") as synced:
                    result = build_course(target, courses_dir=Path(tmp) / str(size), yes=True, progress=quiet)
                row.append(f"{hashed.total():>8} {len(hashed):>6} {max(hashed.values(), default=0):>5} "
                           f"{synced.total():>7}")
            lessons = len(list(result.course_dir.glob("modules/*/*.plan.yaml")))
            print(f"{lessons:>7} {row[0]} {'|':>6}{row[1]}")


def command_line(rounds: int) -> None:
    def timed(*args: str) -> float:
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, cwd=ROOT)
        return time.perf_counter() - start

    interpreter, builds, rebuilds = [], [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            interpreter.append(timed(sys.executable, "-c", "pass"))
            builds.append(timed(sys.executable, "-m", "stay.cli", "build", str(BRIEF), "--yes", "--courses-dir", tmp))
            rebuilds.append(timed(sys.executable, "-m", "stay.cli", "build", "sql-window-functions", "--yes",
                                  "--courses-dir", tmp))  # the pipeline walks and finds nothing to do
    print(f"stay build (12 lessons, offline): {min(builds):.3f} s (goal < 0.5 s); rebuild with nothing to do: "
          f"{min(rebuilds):.3f} s; python -c pass: {min(interpreter):.3f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    in_process(args.rounds)
    counts()
    command_line(args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
