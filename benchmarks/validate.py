"""Benchmark: the library validator against the frozen reference, same corpus, same run.

Builds a corpus of N courses (copies of the sample, each with its own slug), then
validates the whole corpus with each validator as one process (``python -m
stay.validate`` and ``python tests/parity/validate.py``), several rounds,
alternating which goes first. Prints each wall time, the median of each, and the
ratio library / reference. Both outputs must be byte-identical, or the figures
mean nothing and the benchmark fails.

    python benchmarks/validate.py [--courses 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "courses" / "how-http-requests-travel"


def build_corpus(target: Path, count: int) -> None:
    manifest = (SAMPLE / "course.yaml").read_text(encoding="utf-8")
    for index in range(count):
        slug = f"{SAMPLE.name}-{index:03d}"
        shutil.copytree(SAMPLE, target / slug)
        text = manifest.replace(f"slug: {SAMPLE.name}\n", f"slug: {slug}\n", 1)
        (target / slug / "course.yaml").write_text(text, encoding="utf-8")


def timed(command: list[str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[1]} exited {done.returncode}: {done.stderr.decode().strip()}")
    return elapsed, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--courses", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "courses"
        corpus.mkdir()
        build_corpus(corpus, args.courses)
        commands = {
            "library": [sys.executable, "-m", "stay.validate", "--format", "json",
                        "--data-dir", "data", str(corpus)],
            "reference": [sys.executable, "tests/parity/validate.py", "--format", "json",
                          "--data-dir", "data", str(corpus)],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        outputs: dict[str, bytes] = {}
        print(f"corpus: {args.courses} courses, {sum(1 for _ in corpus.rglob('*.*'))} files")
        for round_ in range(args.rounds):
            order = list(commands) if round_ % 2 == 0 else list(reversed(commands))
            for name in order:
                elapsed, outputs[name] = timed(commands[name])
                times[name].append(elapsed)
                print(f"round {round_ + 1}: {name:9} {elapsed:7.3f} s", flush=True)
        if outputs["library"] != outputs["reference"]:
            print("FAILED: the two validators' JSON reports differ", file=sys.stderr)
            return 1
    library = statistics.median(times["library"])
    reference = statistics.median(times["reference"])
    print(f"median wall time: library {library:.3f} s, reference {reference:.3f} s")
    print(f"ratio library/reference: {library / reference:.3f} (target <= 0.300)")
    print("reports: byte-identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
