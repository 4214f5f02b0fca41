"""``stay watch SLUG``: validation as you save. On every change the whole course is validated again (a third
of the rules are course-wide; the sample checks in ~50 ms) and only the difference is printed: ``+ <defect>``
new, ``- <defect>`` fixed. The rules and house style are every command's, so a watch agrees with the build."""

from __future__ import annotations

import os
import shlex
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from stay.artefacts import TEMPORARY
from stay.errors import StayError, UsageError
from stay.validate import Defect, HouseData, Severity, check_course

if TYPE_CHECKING:
    from watchfiles import Change

INSTALL_HINT = "pip install -e '.[watch]'"
"""How to get the extra, worded for a checkout, as the openai extra's hint is."""

RUN_STATE = (".state", ".runs")
"""stay's own directories in a course: its ledger, lock, cache and traces, never a course file."""

DEBOUNCE_MS = 300
"""A burst of writes (a save is often several) gathered before one validation; watchfiles' 1.6 s is too slow."""

TICK_MS = 250
"""How long the watcher waits before answering with no change: the delay before the first line."""


def defect_changes(before: Iterable[Defect], after: Iterable[Defect]) -> list[str]:
    """``- <defect>`` for each one fixed, then ``+ <defect>`` for each new one, in report order, counted as
    multisets; a defect whose message changed is fixed and new."""
    old, new = Counter(before), Counter(after)
    return ([f"- {defect.line()}" for defect in sorted((old - new).elements())]
            + [f"+ {defect.line()}" for defect in sorted((new - old).elements())])


def relevant(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> bool:
    """Whether a change at ``path`` is one to validate for: inside the course, not its run state, not an
    atomic write's temporary, not reached through a link that leads out (nothing outside is read)."""
    relative = Path(os.path.relpath(path, root))
    parts = relative.parts
    if not parts or parts[0] == os.pardir or parts[0] in RUN_STATE or TEMPORARY.fullmatch(relative.name):
        return False
    base = os.path.realpath(root)
    return os.path.commonpath([base, os.path.realpath(path)]) == base


def watch(slug: str, courses_dir: str | os.PathLike[str]) -> int:
    """Watch the course until Ctrl-C; returns 0. UsageError for no such course, or no ``watch`` extra."""
    from stay._words import no_course
    from stay.settings import Settings

    root = Path(courses_dir) / slug
    if not root.is_dir():
        raise UsageError(f"{no_course(slug, courses_dir)}; give the slug of a course, or --courses-dir")
    try:
        import watchfiles
    except ImportError:
        raise UsageError(f"stay watch needs the optional watchfiles package: {INSTALL_HINT}") from None
    data = HouseData.load(Settings.from_env().resolved_data_dir())
    ignored = watchfiles.DefaultFilter()  # editors' swap and backup files, .git, caches

    def wanted(change: Change, path: str) -> bool:
        return relevant(root, path) and ignored(change, path)

    # The watcher is armed when the generator first runs, so the course is checked after its
    # first answer (a quiet tick, or the first changes): a save made once the first line is
    # out always reaches the watcher, and what was saved before it is in that first check.
    changes = watchfiles.watch(root, watch_filter=wanted, debounce=DEBOUNCE_MS, rust_timeout=TICK_MS,
                               yield_on_timeout=True, raise_interrupt=True)
    try:
        next(changes)
        first = _check(root, data)
        defects = first if isinstance(first, tuple) else ()
        fails = sum(d.severity is Severity.FAIL for d in defects)
        now = ("cannot be checked now" if isinstance(first, str) else "no defect now" if not defects else
               f"{fails} FAIL, {len(defects) - fails} WARN now: `stay validate {shlex.quote(str(root))}` "
               "lists them")
        _say(f"watching {root} ({now}): + a new defect, - one fixed; Ctrl-C stops")
        if isinstance(first, str):
            _say(first)
        for changed in changes:
            if not changed:  # a quiet tick
                continue
            found = _check(root, data)
            if isinstance(found, str):  # cannot be read just now: the next good check is compared with the last
                _say(found)
                continue
            for line in defect_changes(defects, found):
                _say(line)
            defects = found
    except KeyboardInterrupt:
        _say(f"stopped watching {root}")
    return 0


def _check(root: Path, data: HouseData) -> tuple[Defect, ...] | str:
    """The course's defects now, or one ``! `` line saying why it cannot be checked (the watch goes on)."""
    try:
        return check_course(root, data).defects
    except StayError as exc:
        return f"! {' '.join(str(exc).split())}"


def _say(line: str) -> None:
    print(line, flush=True)  # a line at a time: the reader may be a pipe or a test
