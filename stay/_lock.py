"""One writing command at a time per course; a second is refused at once, naming the holder's pid. The lock
is filelock's on the course directory itself, not a file under the deletable ``.runs/`` (deleting one let a
second writer in), freed by the kernel however the holder exits (Windows: ``.runs/lock.held``). A new course
is locked from its first byte (issue 37, ``create=True``); a lock is kept only if the path still names it."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

with warnings.catch_warnings():  # without fcntl it warns of its soft lock, which no supported platform takes
    warnings.filterwarnings("ignore", "only soft file lock is available")
    import filelock

from stay._paths import check_links, writing
from stay.errors import CourseLocked

FLOCK = filelock.has_fcntl
LOCK = ".runs/lock"
"""The note of the holder's pid (the lock itself is the directory's)."""
HELD = ".runs/lock.held"
"""The file locked without flock (never the note: a refused writer could not read a locked file's pid)."""


class CourseLock:
    """``with CourseLock(course_dir):`` holds the course's lock or raises CourseLocked."""

    def __init__(self, course_dir: Path, *, create: bool = False) -> None:
        self.course_dir = course_dir
        self.path = course_dir / LOCK
        self._release: Callable[[], None] | None = None
        self._create = create
        self._made: list[Path] = []  # the directories acquire made, deepest last

    def acquire(self) -> None:
        if self._create:
            self._made = _make_dirs(self.course_dir)
        check_links(self.course_dir)  # before any note: a linked .runs/ would put it elsewhere
        release = (_directory_lock if FLOCK else _file_lock)(self.course_dir)  # None: another holds it
        if release is None:
            raise CourseLocked(f"course '{self.course_dir.name}' is being written by another stay command "
                               f"(pid {self._holder()}); wait for it to finish, then run this again")
        self._release = release
        writing(self.course_dir, True)  # from here every write in the course is walked to
        self._note()
        sweep_temporaries(self.course_dir)

    def _note(self) -> None:
        """The holder's pid, never written through a link (a linked .runs/ would write elsewhere)."""
        if self.path.parent.is_symlink():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        note = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            os.write(note, f"{os.getpid()}\n".encode())
        finally:
            os.close(note)

    def _holder(self) -> str:
        try:
            note = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return "unknown"
        try:
            text = os.read(note, 32).decode("ascii", "replace").strip()
        finally:
            os.close(note)
        return text if text.isdigit() else "unknown"

    @property
    def held(self) -> bool:
        return self._release is not None

    def release(self) -> None:
        if self._release is not None:
            release, self._release = self._release, None
            writing(self.course_dir, False)
            if self._made and not (self.course_dir / "course.yaml").exists():
                self._tidy()  # under the lock: no writer can be between its lock and its note
            release()
            if self._made and not FLOCK:  # filelock's file goes with its release: then .runs/ is empty
                self._tidy()

    def _tidy(self) -> None:
        self.path.unlink(missing_ok=True)
        for directory in [self.path.parent, *reversed(self._made)]:
            try:
                directory.rmdir()
            except OSError:
                return

    def __enter__(self) -> CourseLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.release()


def _make_dirs(course_dir: Path) -> list[Path]:
    """Make the course directory and missing parents; the ones this call made (only ours to remove)."""
    missing = [p for p in [course_dir, *course_dir.parents] if not os.path.lexists(p)]
    made = []
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except FileExistsError:
            continue
        made.append(directory)
    return made


def _directory_lock(course_dir: Path) -> Callable[[], None] | None:
    fd = os.open(course_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        locked = filelock.lock_descriptor(fd, blocking=False)
    except BaseException:
        os.close(fd)
        raise
    try:
        same = locked and os.path.samestat(os.fstat(fd), os.stat(course_dir, follow_symlinks=False))
    except OSError:
        same = False
    if not same:  # held by another, or removed (a new course's refused run) after we opened it
        os.close(fd)
        return None

    def release() -> None:
        filelock.unlock_descriptor(fd)
        os.close(fd)
    return release


def _file_lock(course_dir: Path) -> Callable[[], None] | None:
    """The lock on ``.runs/lock.held`` (a directory cannot be locked on Windows); check_links has
    held links under the course inside it, and filelock opens the file without following one."""
    held = course_dir / HELD
    held.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(os.fspath(held), timeout=0)  # one try: a second writer never waits
    try:
        lock.acquire()
    except filelock.Timeout:
        return None
    return lock.release


def sweep_temporaries(course_dir: Path) -> list[Path]:
    """Remove the temporary files a killed run left (only the lock holder may), never a person's ``*.tmp``."""
    from stay.artefacts import TEMPORARY  # here, not at the top: importing the lock stays light (stdlib, _paths)

    removed = []
    for current, dirnames, filenames in os.walk(course_dir):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(current, d))]
        for name in filenames:
            if TEMPORARY.fullmatch(name):
                path = Path(current) / name
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed
