"""Benchmark: the library validator against the frozen reference, same corpora, same run.

Builds two corpora of N courses each: copies of the sample course, and copies of a
long-lesson course (the sample with each lesson's own paragraphs repeated until the
lesson is 12-14 KB). Each corpus is validated as one process by the reference
(``tests/parity/validate.py``), by the library on one process (``--jobs 1``) and by
the library on ``--jobs`` processes, in rounds that rotate which goes first. CPU
time is the children's user + system time (``resource.getrusage``), so other work
on the machine does not count; wall time is what a user waits. The best of the
rounds is kept. The three JSON reports must be byte-identical, or the figures mean
nothing and the benchmark fails.

Also printed: start-up (validating an empty directory), what the YAML parity routing
costs, and the time to read 100 KB heading lines of the shapes the contract's
expression backtracks on.

    python benchmarks/validate.py [--courses 100] [--rounds 3] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "courses" / "how-http-requests-travel"
sys.path.insert(0, str(ROOT))

LONG_LESSON = (12_000, 14_000)
"""The size, in bytes, each lesson of the long-lesson course is grown to."""

# Targets from the issue (13, item 1), as fractions of the reference.
CPU_TARGET = 0.15
WALL_TARGET = 0.10
ROUTING_TARGET = 0.01


def _paragraph_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each block of plain prose lines outside code: a paragraph."""
    blocks: list[tuple[int, int]] = []
    code = False
    start = None
    for index, line in enumerate([*lines, ""]):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            code = not code
        plain = (not code and stripped != "" and stripped[0].isalpha()
                 and not stripped.startswith(("```", "~~~")))
        if plain and start is None:
            start = index
        elif not plain and start is not None:
            blocks.append((start, index))
            start = None
    return blocks


def grow_lesson(text: str, low: int = LONG_LESSON[0], high: int = LONG_LESSON[1]) -> str:
    """The lesson with its own paragraphs repeated, each after itself, until it is
    between ``low`` and ``high`` bytes: the same headings, terms and sentences, longer."""
    head, sep, body = text.partition("\n---\n")
    lines = body.split("\n")
    blocks = _paragraph_blocks(lines)
    if not blocks:
        return text
    turn = 0
    while len((head + sep + "\n".join(lines)).encode()) < low:
        start, end = blocks[turn % len(blocks)]
        copy = ["", *lines[start:end]]
        if len((head + sep + "\n".join(lines)).encode()) + len("\n".join(copy).encode()) > high:
            break
        lines[end:end] = copy
        shift = len(copy)
        blocks = [(s + shift, e + shift) if s >= end else (s, e) for s, e in blocks]
        turn += 1
    return head + sep + "\n".join(lines)


def long_lesson_course(target: Path) -> None:
    """The sample course, each lesson grown to 12-14 KB from its own paragraphs."""
    shutil.copytree(SAMPLE, target)
    for lesson in sorted(target.glob("modules/*/*.md")):
        lesson.write_text(grow_lesson(lesson.read_text(encoding="utf-8")), encoding="utf-8")


def build_corpus(template: Path, target: Path, count: int) -> None:
    """``count`` copies of the course at ``template``, each with its own slug."""
    target.mkdir(parents=True)
    manifest = (template / "course.yaml").read_text(encoding="utf-8")
    for index in range(count):
        slug = f"{SAMPLE.name}-{index:03d}"
        shutil.copytree(template, target / slug)
        text = manifest.replace(f"slug: {SAMPLE.name}\n", f"slug: {slug}\n", 1)
        (target / slug / "course.yaml").write_text(text, encoding="utf-8")


@dataclass
class Timing:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str]) -> tuple[float, float, bytes]:
    """Wall and CPU seconds of one run of ``command`` (and its children), and its stdout."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command[1:3])} exited {done.returncode}: {done.stderr.decode().strip()}")
    return wall, _children_cpu() - cpu, done.stdout


def _commands(corpus: Path, jobs: int) -> dict[str, list[str]]:
    common = ["--format", "json", "--data-dir", "data", str(corpus)]
    return {
        "reference": [sys.executable, "tests/parity/validate.py", *common],
        "library": [sys.executable, "-m", "stay.validate", "--jobs", "1", *common],
        f"library --jobs {jobs}": [sys.executable, "-m", "stay.validate", "--jobs", str(jobs), *common],
    }


def measure(corpora: dict[str, Path], jobs: int, rounds: int) -> dict[str, dict[str, Timing]]:
    """Every command on every corpus, ``rounds`` times, interleaved and rotated."""
    results: dict[str, dict[str, Timing]] = {}
    outputs: dict[tuple[str, str], bytes] = {}
    for round_ in range(rounds):
        for corpus_name, corpus in corpora.items():
            commands = _commands(corpus, jobs)
            names = list(commands)
            order = names[round_ % len(names):] + names[:round_ % len(names)]
            for name in order:
                wall, cpu, out = timed(commands[name])
                timing = results.setdefault(corpus_name, {}).setdefault(name, Timing())
                timing.wall.append(wall)
                timing.cpu.append(cpu)
                outputs[corpus_name, name] = out
                print(f"  round {round_ + 1} {corpus_name:6} {name:18} wall {wall:6.3f} s  cpu {cpu:6.3f} s",
                      flush=True)
    for corpus_name in corpora:
        reports = {outputs[corpus_name, name] for name in results[corpus_name]}
        if len(reports) != 1:
            raise SystemExit(f"FAILED: the {corpus_name} corpus's JSON reports differ between validators")
    return results


def startup(jobs: int, rounds: int) -> dict[str, float]:
    """Best wall and CPU seconds to validate an empty directory: start-up and imports."""
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as empty:
        commands = {"python -c pass": [sys.executable, "-c", "pass"],
                    **{name: [*command[:-1], empty] for name, command in _commands(Path(empty), jobs).items()}}
        for _ in range(max(rounds, 5)):
            for name, command in commands.items():
                wall, cpu, _out = timed(command)
                best[f"{name} wall"] = min(best.get(f"{name} wall", wall), wall)
                best[f"{name} cpu"] = min(best.get(f"{name} cpu", cpu), cpu)
    return best


def routing_cost(corpus: Path) -> tuple[float, int]:
    """CPU seconds the YAML parity checks take over every file the validator parses
    in ``corpus`` (best of 5), and how many of those files they send to the pure parser."""
    from stay.validate._text import _pure_only, split_lines

    texts = []
    for path in sorted(corpus.rglob("*")):
        if path.suffix == ".yaml":
            texts.append(path.read_text(encoding="utf-8"))
        elif path.suffix == ".md":
            lines = split_lines(path.read_text(encoding="utf-8"))
            close = next((i for i in range(1, len(lines)) if lines[i] == "---"), 0)
            texts.append("\n".join(lines[1:close]))
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        routed = sum(1 for text in texts if _pure_only(text))
        best = min(best, time.process_time() - start)
    return best, routed


HEADING_SHAPES = {
    "blanks inside": "# x" + " " * 100_000 + "y",
    "blanks, then a closing run": "# x" + " \t" * 50_000 + "#",
    "blanks only": "#" + " " * 100_000,
    "alternating ' #'": "# a" + " #" * 50_000 + " b",
    "trailing blanks": "# t" + " " * 100_000,
}


def heading_times() -> tuple[dict[str, float], float]:
    """Best seconds to read each 100 KB shape with ``heading``, and the contract's
    expression on a 4 KB line of the first shape (it is quadratic: 100 KB takes minutes)."""
    from stay.validate._text import CONTRACT_HEADING, heading

    times = {}
    for name, line in HEADING_SHAPES.items():
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            heading(line)
            best = min(best, time.perf_counter() - start)
        times[name] = best
    start = time.perf_counter()
    CONTRACT_HEADING.match("# x" + " " * 4_000 + "y")
    return times, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--courses", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        long_course = Path(tmp) / "template" / SAMPLE.name
        long_course_dir = long_course.parent
        long_course_dir.mkdir()
        long_lesson_course(long_course)
        corpora = {"sample": Path(tmp) / "sample", "long": Path(tmp) / "long"}
        build_corpus(SAMPLE, corpora["sample"], args.courses)
        build_corpus(long_course, corpora["long"], args.courses)
        for name, corpus in corpora.items():
            sizes = [p.stat().st_size for p in corpus.glob("*/modules/*/*.md")]
            print(f"corpus {name}: {args.courses} courses, {sum(1 for _ in corpus.rglob('*.*'))} files, "
                  f"lessons {min(sizes):,}-{max(sizes):,} bytes")
        print(f"machine: {os.cpu_count()} cores; best of {args.rounds} rounds, interleaved")
        results = measure(corpora, args.jobs, args.rounds)
        routing = {name: routing_cost(corpus) for name, corpus in corpora.items()}
    parallel = f"library --jobs {args.jobs}"
    print()
    print(f"{'corpus':8} {'command':20} {'wall s':>8} {'cpu s':>8}")
    for corpus_name, timings in results.items():
        for name, timing in timings.items():
            print(f"{corpus_name:8} {name:20} {min(timing.wall):8.3f} {min(timing.cpu):8.3f}")
    print()
    for corpus_name, timings in results.items():
        ref_cpu, ref_wall = min(timings["reference"].cpu), min(timings["reference"].wall)
        cpu_ratio = min(timings["library"].cpu) / ref_cpu
        wall_ratio = min(timings[parallel].wall) / ref_wall
        routed_s, routed_files = routing[corpus_name]
        print(f"{corpus_name:6} library/reference CPU, one process:  {cpu_ratio:.3f} (target <= {CPU_TARGET})")
        print(f"{corpus_name:6} library/reference wall, --jobs {args.jobs}:    {wall_ratio:.3f} "
              f"(target <= {WALL_TARGET} at 2 cores)")
        print(f"{corpus_name:6} YAML parity routing: {routed_s * 1e3:.1f} ms = {routed_s / ref_cpu:.4f} of the "
              f"reference's CPU (target <= {ROUTING_TARGET}); {routed_files} files sent to the pure parser")
    print(f"reports: byte-identical (reference, --jobs 1, --jobs {args.jobs})")
    print()
    for name, seconds in startup(args.jobs, args.rounds).items():
        print(f"start-up (empty directory) {name:28} {seconds * 1e3:7.1f} ms")
    print()
    times, contract = heading_times()
    for name, seconds in times.items():
        print(f"heading(), 100 KB line, {name:28} {seconds * 1e3:7.3f} ms (target < 50 ms)")
    print(f"the contract's expression on a 4 KB line of the first shape: {contract * 1e3:.0f} ms (quadratic)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
