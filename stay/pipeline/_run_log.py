"""The run log, ``.state/run-log.md``: one entry a run that wrote anything, appended.

It stays with the course, where a reviewer reads what each run did (what it wrote,
retired, revised and fixed, and how it ended); a run's number, which names its
``.state/retired/run-<n>/``, is the count of entries before it, plus one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from stay._bounds import Damaged, read_stored
from stay._display import terminal_text
from stay.artefacts import write_text_atomic
from stay.errors import EnvironmentProblem
from stay.pipeline._ledger import RETIRED, RUN_LOG


def _text(root: Path) -> str | None:
    """The run log's text, read bounded (None when there is none yet); a log that is not
    what stay writes (a link, a FIFO, past 16 MB) is one line naming the fix."""
    path = root / RUN_LOG
    if not os.path.lexists(path):
        return None
    try:
        return read_stored(path).decode("utf-8", "replace")
    except Damaged as exc:
        raise EnvironmentProblem(f"{exc}; move it aside (stay starts a new one) and run the command again") \
            from None


def next_run_number(root: Path) -> int:
    return (_text(root) or "").count("\n## run ") + 1


def log_run(root: Path, command: str, backend: str, written: list[str], stopped: str | None,
            retired: list[str] | None = None, revised: Mapping[str, str] | None = None,
            fixed: Sequence[str] = (), failed: str | None = None, unscreened: str | None = None) -> None:
    """Append one run to .state/run-log.md, if it wrote, retired or revised anything (a
    revision that changed no byte still records its note); stable order. ``fixed``
    is what the run's fixes changed, as lines (``Change.log_lines``), in the order made;
    ``failed`` says why a run that raised ended (it did not complete); ``unscreened`` why
    nothing screened its brief."""
    if not written and not retired and not revised:
        return
    path = root / RUN_LOG
    text = _text(root) or "# Run log\n"
    number = text.count("\n## run ") + 1
    lines = [f"## run {number}: {command} ({backend})", ""]
    lines += [f"- wrote {p}" for p in sorted(set(written))]
    lines += [f"- retired {p} to {RETIRED}/run-{number}/{p}" for p in sorted(retired or [])]
    lines += [f"- revised {p} with note {hashlib.sha256(n.encode()).hexdigest()[:16]}: "
              f"{' '.join(n.split())[:80]!r}" for p, n in sorted((revised or {}).items())]
    lines += fixed
    if unscreened:
        lines.append(f"- the brief was screened by nothing: {unscreened}")
    ending = f"- failed: {' '.join(failed.split())[:200]}" if failed else (
        f"- stopped at {stopped}" if stopped else "- completed")
    lines.append(ending)
    # read in a terminal, and a retired path may hold any bytes (not UTF-8, an escape)
    shown = "\n".join(terminal_text(line) for line in lines)
    write_text_atomic(path, text.rstrip("\n") + "\n\n" + shown + "\n")
