"""Deliver a Ctrl-C at chosen points of ``stay``'s own start-up and exit, one child each.

Run as ``python tests/sigint_probe.py ARG...`` from the repository root, never imported
by the suite. The process forks a child per point before anything of stay is imported;
each child traces the lines stay's code executes, sends itself SIGINT when it reaches
its point (the signal is delivered right there, as if Ctrl-C had landed on that line),
and runs ``stay ARG...`` as the program. One JSON line per point goes to stdout:
``{"point": n, "where": "file:function:line", "code": exit status, "stderr": text}``.
The first line is ``{"points": total}``: how many lines stay runs for that command.
"""

from __future__ import annotations

import argparse  # noqa: F401  (the stdlib modules stay imports, loaded once before forking)
import contextlib  # noqa: F401
import dataclasses  # noqa: F401
import json
import os
import runpy
import signal
import sys
import traceback
import typing  # noqa: F401
from types import FrameType
from typing import Any

ROOT = os.getcwd()
STAY = os.path.join(ROOT, "stay") + os.sep
sys.path.insert(0, ROOT)


def _run(target: int, args: list[str], seen: list[str]) -> None:
    """Run ``stay ARGS`` as the program, each line stay runs appended to ``seen``;
    SIGINT at the ``target``-th line (0: never)."""

    def local(frame: FrameType, event: str, _arg: Any) -> Any:
        if event == "line":
            seen.append(f"{frame.f_code.co_filename[len(STAY):]}:{frame.f_code.co_name}:{frame.f_lineno}")
            if len(seen) == target:
                os.kill(os.getpid(), signal.SIGINT)
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local(frame, event, arg) if frame.f_code.co_filename.startswith(STAY) else None

    sys.argv = [os.path.join(ROOT, "stay"), *args]  # as the console script starts it
    sys.settrace(tracer)
    try:
        runpy.run_module("stay.cli", run_name="__main__")
    finally:
        sys.settrace(None)


def _child(target: int, args: list[str], write: int) -> int:
    """The child's exit status, as the interpreter would give it: an uncaught exception
    prints its traceback (130 for Ctrl-C, 1 otherwise)."""
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(write, 2)  # the child's stderr is the parent's pipe
    os.dup2(quiet, 1)
    try:
        _run(target, args, [])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:
        traceback.print_exc()
        sys.stderr.flush()
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    return 0


def main() -> None:
    args = sys.argv[1:]
    points = _count(args)
    print(json.dumps({"points": len(points)}), flush=True)
    for target in _chosen(points):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            os._exit(_child(target, args, write))
        os.close(write)
        with os.fdopen(read, encoding="utf-8", errors="replace") as pipe:
            stderr = pipe.read()
        _pid, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        print(json.dumps({"point": target, "where": points[target - 1], "code": code, "stderr": stderr}),
              flush=True)


def _count(args: list[str]) -> list[str]:
    """The lines stay runs for ``stay ARGS``, in order (a child with no signal)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        seen: list[str] = []
        try:
            _run(0, args, seen)
        except SystemExit:
            pass
        finally:
            os.write(write, json.dumps(seen).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read, encoding="utf-8") as pipe:
        found: list[str] = json.loads(pipe.read())
    os.waitpid(pid, 0)
    return found


def _chosen(points: list[str]) -> list[int]:
    """Every line at a seam, where the handling of Ctrl-C changes hands: stay/__init__
    up to two lines past its handler, the cli module, ``main`` and ``_command``; and
    every 25th line elsewhere."""
    installed = next((n for n, where in enumerate(points, start=1)
                      if where.startswith("__init__.py:<module>:") and int(where.rsplit(":", 1)[1]) >= _INSTALL),
                     len(points))
    seams = ("cli.py:<module>:", "cli.py:main:", "cli.py:_command:")
    return [n for n, where in enumerate(points, start=1)
            if n <= installed + 2 or where.startswith(seams) or n % 25 == 0]


def _install_line() -> int:
    """The line of stay/__init__.py that installs the start-up handler."""
    with open(os.path.join(STAY, "__init__.py"), encoding="utf-8") as handle:
        return next(n for n, line in enumerate(handle, start=1) if "signal.signal(" in line)


_INSTALL = _install_line()


if __name__ == "__main__":
    main()
