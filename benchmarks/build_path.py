"""Weight a reader meets: the stay modules an offline build imports, and those it crosses.

    python benchmarks/build_path.py [BRIEF]

Builds BRIEF (default: the sample) offline into a temporary directory through
``stay.build_course`` and prints three figures:

- imported: the stay modules in ``sys.modules`` after the build;
- to a lesson: the stay modules crossed from ``build_course`` to the first lesson file
  (``mNN-lNN.md``) moved into place: those on the call stack then, those on the stack of
  whatever handed the work to that thread, and every one called in that thread before
  (a module's own import left out);
- to every file: the private stay modules (a ``_`` in the dotted name) on the call stack of
  any file the build writes;
- run: the private stay modules any of whose functions the build calls, in any thread,
  what a newcomer following one build opens.

A stack is read at ``os.replace``, the last step of every atomic write.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LESSON = re.compile(r"m\d+-l\d+\.md$")


def _stack_modules(frame: FrameType | None) -> list[str]:
    found: list[str] = []
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if (name == "stay" or name.startswith("stay.")) and name not in found:
            found.append(name)
        frame = frame.f_back
    return found[::-1]


def measure(brief: Path) -> dict[str, list[str]]:
    to_lesson: list[str] = []
    every: set[str] = set()
    ran: set[str] = set()
    local = threading.local()  # per thread: the modules called in it, and its submitter's stack
    replace, submit = os.replace, ThreadPoolExecutor.submit

    def called(frame: FrameType, event: str, _arg: Any) -> None:
        name = str(frame.f_globals.get("__name__", ""))
        if (event == "call" and name.startswith("stay") and frame.f_code.co_name != "<module>"
                and name not in getattr(local, "called", [])):
            ran.add(name)
            local.__dict__.setdefault("called", []).append(name)

    def handed(pool: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        parent = _stack_modules(sys._getframe(1))

        def task() -> Any:
            local.parent, local.called = parent, []
            return fn(*args, **kwargs)

        return submit(pool, task)

    def watched(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        modules = _stack_modules(sys._getframe(1))
        every.update(modules)
        if not to_lesson and LESSON.search(os.fsdecode(dst)):
            crossed = [*getattr(local, "parent", []), *getattr(local, "called", []), *modules]
            to_lesson.extend(dict.fromkeys(crossed))
        replace(src, dst, *args, **kwargs)

    os.replace = watched  # type: ignore[assignment]
    ThreadPoolExecutor.submit = handed  # type: ignore[method-assign]
    sys.setprofile(called)
    threading.setprofile(called)
    try:
        import stay

        with tempfile.TemporaryDirectory() as courses:
            stay.build_course(brief, courses_dir=courses, yes=True, backend="offline")
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        os.replace, ThreadPoolExecutor.submit = replace, submit  # type: ignore[method-assign]
    imported = sorted(name for name in sys.modules if name == "stay" or name.startswith("stay."))
    return {"imported": imported, "to a lesson": to_lesson, "to every file": _private(every), "run": _private(ran)}


def _private(names: set[str]) -> list[str]:
    return sorted(name for name in names if "._" in name or name.startswith("stay._"))


def main(argv: list[str]) -> int:
    brief = Path(argv[0]) if argv else ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
    for figure, modules in measure(brief).items():
        print(f"{figure}: {len(modules)}")
        print("    " + ", ".join(modules))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
