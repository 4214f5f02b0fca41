"""Kill ``stay ARG...`` at chosen write points, resume it, and compare with a run never killed.

Run as ``python tests/crash_probe.py [--signal KILL|INT] [--where RE] [--every N | --sample N] -- ARG...``
from the repository root (the suite and ``benchmarks/crash_points.py`` run it; never
imported by them). A write point is just before or just after one ``os.replace`` or
``os.fsync`` call, in any thread: where a crash can leave the disk between two states.
The points are counted in a run never killed, whose course is the reference; for each
chosen point a child (forked, stay already imported) runs the command afresh and sends
itself the signal there: SIGKILL as the kernel kills, or SIGINT to the main thread as
Ctrl-C does, which stay's own handler answers. Another child then runs the command again,
untouched, and its course is compared byte for byte with the reference, ``.state/``
included; only ``.runs/`` (caches and traces) and ``.state/run-log.md`` (it lists each
run: a resumed course has two) are left out.

Every file the command writes goes under ``--courses-dir``, which the probe chooses: ARG
must not give one. One JSON line per point on stdout: ``{"points": total, "chosen": n}`` first, then
``{"point": n, "where": ..., "code": ..., "resumed": ..., "differs": [...]}``, where
``differs`` lists the files not as in the reference (missing, extra or other bytes). Every
run passes as many points (the walk decides each write, not which thread finishes first),
though the wave's threads may take them in another order.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = os.getcwd()
sys.path.insert(0, ROOT)
os.environ.setdefault("SOURCE_DATE_EPOCH", "1780000000")  # timestamps the same in every run
os.environ.pop("ANTHROPIC_API_KEY", None)  # offline: the model answers the same every time

import stay.cli  # noqa: E402  (loaded once, before forking: each child starts at once)
import stay.pipeline  # noqa: E402

SKIPPED = ("run-log.md",)


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` by its hash, but ``.runs/`` and the run log."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and path.name not in SKIPPED and ".runs" not in relative.parts:
            found[relative.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


class Points:
    """Counts write points; at the ``target``-th, ``strike`` is called (0: never)."""

    def __init__(self, target: int, strike: Callable[[], None]) -> None:
        self.target = target
        self.strike = strike
        self.seen: list[str] = []
        self._lock = threading.Lock()

    def reach(self, where: str) -> None:
        with self._lock:
            self.seen.append(where)
            hit = len(self.seen) == self.target
        if hit:
            self.strike()

    def install(self) -> None:
        replace, fsync = os.replace, os.fsync

        def counted_replace(src: Any, dst: Any, **kwargs: Any) -> None:
            where = f"replace {os.path.basename(os.fspath(dst))}"
            self.reach(f"before {where}")
            replace(src, dst, **kwargs)
            self.reach(f"after {where}")

        def counted_fsync(fd: Any) -> None:
            where = f"fsync {_name_of(fd)}"
            self.reach(f"before {where}")
            fsync(fd)
            self.reach(f"after {where}")

        os.replace = counted_replace  # type: ignore[assignment]
        os.fsync = counted_fsync  # type: ignore[assignment]


def _name_of(fd: Any) -> str:
    number = fd if isinstance(fd, int) else fd.fileno()
    try:
        return os.path.basename(os.readlink(f"/proc/self/fd/{number}"))
    except OSError:
        return f"fd {number}"


def _strike(kind: str) -> Callable[[], None]:
    if kind == "KILL":
        return lambda: os.kill(os.getpid(), signal.SIGKILL)
    main = threading.main_thread().ident
    assert main is not None
    # to the main thread, as a terminal's Ctrl-C reaches a process that blocks it nowhere
    return lambda: signal.pthread_kill(main, signal.SIGINT)


def _child(args: list[str], courses: Path, points: Points | None, report: int) -> None:
    """Run ``stay ARGS --courses-dir COURSES`` as the program would, then leave at once."""
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    code = 1
    try:
        if points is not None:
            points.install()
        sys.argv = ["stay", *args, "--courses-dir", str(courses)]
        code = stay.cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        code = 1
    finally:
        if points is not None:
            os.write(report, json.dumps(points.seen).encode())
        os._exit(code)


def run(args: list[str], courses: Path, points: Points | None = None) -> tuple[int, list[str]]:
    """The exit status of one child, and the write points it reached (when counted)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(args, courses, points, write)
    os.close(write)
    with os.fdopen(read, encoding="utf-8") as pipe:
        text = pipe.read()
    _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), (json.loads(text) if text else [])


def chosen(seen: list[str], where: str, every: int, sample: int) -> list[int]:
    """The points whose place matches ``where``: every ``every``-th from the first, or
    ``sample`` of them spread evenly (the first and the last among them)."""
    found = [n for n, place in enumerate(seen, start=1) if re.search(where, place)]
    if sample:
        count = min(sample, len(found))
        return sorted({found[round(i * (len(found) - 1) / max(count - 1, 1))] for i in range(count)})
    return found[::every]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--signal", choices=("KILL", "INT"), default="KILL")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--where", default="", help="only points whose place matches this regular expression")
    parser.add_argument("args", nargs="+")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stay-crash-") as scratch:
        reference = Path(scratch) / "reference"
        code, seen = run(ns.args, reference, Points(0, lambda: None))
        if code != 0:
            raise SystemExit(f"the run never killed exited {code}")
        expected = {course.name: tree(course) for course in reference.iterdir()}
        targets = chosen(seen, ns.where, ns.every, ns.sample)
        print(json.dumps({"points": len(seen), "chosen": len(targets)}), flush=True)
        for target in targets:
            courses = Path(scratch) / f"point-{target}"
            code, _ = run(ns.args, courses, Points(target, _strike(ns.signal)))
            resumed, _ = run(ns.args, courses)
            found = {course.name: tree(course) for course in courses.iterdir()} if courses.exists() else {}
            differs = sorted(f"{name}/{path}" for name in expected.keys() | found.keys()
                             for path in expected.get(name, {}).keys() | found.get(name, {}).keys()
                             if expected.get(name, {}).get(path) != found.get(name, {}).get(path))
            print(json.dumps({"point": target, "where": seen[target - 1], "code": code, "resumed": resumed,
                              "differs": differs}), flush=True)
            shutil.rmtree(courses, ignore_errors=True)


if __name__ == "__main__":
    main()
