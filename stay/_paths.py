"""Nothing of a course is read or written through a symlink leading outside it: every command checks every
link first (``check_links``), and under the lock every write walks from the course directory with
``O_NOFOLLOW | O_DIRECTORY`` (``parent_of``), so a link planted mid-run (issue 37) is never followed;
without ``dir_fd`` (Windows) the parent is re-checked just before the rename, a narrower window."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from typing import Any

from stay.errors import EnvironmentProblem

DIR_FD = ({os.open, os.mkdir, os.rename, os.link, os.unlink, os.stat} <= os.supports_dir_fd
          and hasattr(os, "O_DIRECTORY") and hasattr(os, "O_NOFOLLOW"))
"""Whether directories can be walked by descriptor (POSIX; ``os.replace`` takes ``dir_fd``
wherever ``os.rename`` does)."""

_WRITING: set[str] = set()
"""The course directories (absolute) whose lock this process holds: writes under them walk."""


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
    """Every link under ``root`` resolves inside it, else EnvironmentProblem naming the first one (sorted).
    A link is checked, never entered: one inside the course points at what the walk sees anyway."""
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


def writing(root: str | os.PathLike[str], held: bool) -> None:
    """Note that this process holds (or no longer holds) the lock of the course at ``root``."""
    (_WRITING.add if held else _WRITING.discard)(os.path.abspath(root))


def course_of(path: str | os.PathLike[str]) -> tuple[str, list[str]] | None:
    """The held course ``path`` lies in and the names from it to ``path``'s directory, or None."""
    full = os.path.abspath(path)
    for root in _WRITING:
        if full.startswith(root.rstrip(os.sep) + os.sep):
            return root, full[len(root.rstrip(os.sep)) + 1:].split(os.sep)[:-1]
    return None


def parent_of(path: str | os.PathLike[str]) -> int | None:
    """A descriptor of ``path``'s directory, opened from its held course one name at a time, never through a
    link (EnvironmentProblem naming it); None outside a held course or without a walk by descriptor."""
    found = course_of(path) if DIR_FD else None
    if found is None:
        return None
    root, names = found
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    walked = root
    for name in names:
        walked = os.path.join(walked, name)
        fd = _step(fd, name, walked, root)  # closes the fd it is given, whatever happens
    return fd


def at(parent: int | None, *keys: str) -> dict[str, Any]:
    """The ``dir_fd`` arguments of a call made relative to ``parent``, none without one (so a
    call on a plain path is the plain call)."""
    return {} if parent is None else dict.fromkeys(keys, parent)


@contextlib.contextmanager
def placed(path: str | os.PathLike[str]) -> Iterator[tuple[int | None, str]]:
    """``(dir_fd, name)`` for the writes that are not the one writer's (the journal, ``.state/retired/``):
    the walked directory and bare name, or None and the whole path, re-checked where there is no walk."""
    parent = parent_of(path)
    if parent is None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        recheck(path)
    try:
        yield parent, os.path.basename(path) if parent is not None else os.fspath(path)
    finally:
        if parent is not None:
            os.close(parent)


def recheck(path: str | os.PathLike[str]) -> None:
    """Where there is no walk by descriptor: ``path``'s directory, resolved just before the
    rename, must still be inside its held course (EnvironmentProblem naming it if not)."""
    found = None if DIR_FD else course_of(path)
    if found is not None:
        inside(found[0], os.path.dirname(os.path.abspath(path)))


def _step(fd: int, name: str, walked: str, root: str) -> int:
    """``name`` in the directory ``fd`` (made if missing), opened without following a link;
    ``fd`` is closed once the next one is open."""
    try:
        try:
            following = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):  # made meanwhile: opened, never through a link, below
                os.mkdir(name, 0o777, dir_fd=fd)
            following = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and stat.S_ISLNK(
                os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise EnvironmentProblem(
                f"{walked}: a symlink (to {os.path.realpath(walked)}) is on the way to a file stay "
                f"writes; stay writes nothing through a link: replace the link with a real directory "
                f"inside {root} and run the command again", path=walked) from None
        raise
    finally:
        os.close(fd)
    return following
