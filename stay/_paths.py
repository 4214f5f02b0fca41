"""Nothing of a course is read or written through a symlink that leads outside it.

A course may hold links (a person's choice), but one that resolves outside the course (a
linked module directory, ``.state/``, ``.runs/``, a lesson file) would send lessons, the
ledger, the lock and traces elsewhere, and feed an outside file to the pipeline as the
course's own. So every command that opens a course first checks every link in it
(``check_links``), before it reads, locks or writes anything there: one walk, linear in
the course, that never follows a link. Inside means inside the course directory as it
resolves; a link that points within it is fine.

Light on purpose (only ``stay.errors``): the lock imports it.
"""

from __future__ import annotations

import os

from stay.errors import EnvironmentProblem


def _within(base: str, resolved: str) -> bool:
    return resolved == base or resolved.startswith(base.rstrip(os.sep) + os.sep)


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> str:
    """``path`` with every link resolved; EnvironmentProblem when that leaves ``root``."""
    resolved = os.path.realpath(path)
    if not _within(os.path.realpath(root), resolved):
        raise EnvironmentProblem(
            f"{os.fspath(path)}: a symlink leads outside the course (to {resolved}); stay reads and writes "
            f"nothing through it: replace the link with a real directory or file inside {os.fspath(root)}",
            path=path)
    return resolved


def check_links(root: str | os.PathLike[str]) -> None:
    """Every link under ``root`` (files and directories, at any depth) resolves inside
    ``root``, else EnvironmentProblem naming the first the walk meets (names sorted, so
    always the same one). A link is checked, never entered: one that stays inside the
    course points at what the walk sees anyway."""
    base = os.path.realpath(root)
    pending = [os.fspath(root)]
    while pending:
        try:
            entries = sorted(os.scandir(pending.pop()), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            continue  # not there (yet): nothing in it to send anywhere
        directories = []
        for entry in entries:
            if entry.is_symlink():
                if not _within(base, os.path.realpath(entry.path)):
                    inside(root, entry.path)  # raises, naming the link
            elif entry.is_dir(follow_symlinks=False):
                directories.append(entry.path)
        pending.extend(reversed(directories))
