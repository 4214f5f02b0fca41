"""One writing command at a time per course: an exclusive lock on ``<course>/.runs/lock``.

Commands that write (new, build, plan, write, repair, approve, adopt) hold it for
their whole run; read-only ones (status, validate, graph) never take it. A second
writer does not wait: it is refused at once, naming the holder's process id, because
two concurrent builds would each pay for every call and call the other's files
"edited by hand". The lock lives under ``.runs/`` (a cache, git-ignored) rather than
``.state/`` (committed), so holding it never changes a committed byte. It is an
``flock``: the kernel releases it when the holder exits, however it exits.

Whoever holds the lock may also clean up after a killed run: a temporary file left by
an interrupted atomic write (``.<name>.stay-<16 hex digits>.tmp``, the form only stay
makes) is removed; a person's own ``*.tmp`` files are left alone.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from stay._paths import check_links
from stay.errors import CourseLocked

LOCK = ".runs/lock"


class CourseLock:
    """``with CourseLock(course_dir):`` holds the course's lock or raises CourseLocked."""

    def __init__(self, course_dir: Path) -> None:
        self.course_dir = course_dir
        self.path = course_dir / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        check_links(self.course_dir)  # before the lock file: a linked .runs/ would put it elsewhere
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise CourseLocked(f"course '{self.course_dir.name}' is being written by another stay command "
                               f"(pid {holder}); wait for it to finish, then run this again") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        sweep_temporaries(self.course_dir)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> CourseLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.release()


def sweep_temporaries(course_dir: Path) -> list[Path]:
    """Remove the temporary files a killed run left behind (only the lock holder may):
    exactly the names ``write_text_atomic`` makes, nothing else."""
    from stay.artefacts._io import TEMPORARY  # here, not at the top: the quick path imports this module

    removed = []
    for current, dirnames, filenames in os.walk(course_dir):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(current, d))]
        for name in filenames:
            if TEMPORARY.fullmatch(name):
                path = Path(current) / name
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed
