"""One writing command at a time per course: an exclusive lock on the course directory.

Commands that write (new, build, plan, write, repair, approve, adopt) hold it for
their whole run; read-only ones (status, validate, graph) never take it. A second
writer does not wait: it is refused at once, naming the holder's process id, because
two concurrent builds would each pay for every call and call the other's files
"edited by hand". The lock is an ``flock`` on the course directory itself, not on a file
in it: a file under ``.runs/`` (a cache a person may delete at any time) was dropped
with it, and the next writer locked a new file beside a run still writing. Holding it
never changes a byte of the course, and the kernel releases it when the holder exits,
however it exits. The holder's process id is noted in ``.runs/lock`` for the refusal's
message only; deleting it loses the note, never the lock.

Where there is no ``flock`` (Windows: no ``fcntl``) the lock is ``filelock``'s on the file
``.runs/lock.held`` instead (``LockFileEx`` on Windows, which the system also releases when
the holder dies, and which keeps the open file from being deleted meanwhile); the file is
removed on release. A platform with neither gets filelock's soft lock (the file's existence
is the lock), which a killed holder leaves behind: no platform stay supports takes that path.

A new course is locked from its first byte: the build that starts it makes the course
directory (``create=True``) and locks it before its input screen, scaffold or anything
else of the course is written, so a second build of the same new course is refused at
whatever point it arrives, not only once ``course.yaml`` exists (issue 37: a second build
that found ``course.yaml`` made by the first ran unlocked). A run that ends before writing
``course.yaml`` (a refused brief) removes the directories it made, so nothing is left. A
lock is only kept if the path still names the directory locked: a writer that opened the
directory just before such a removal would otherwise lock a directory no longer there.

Whoever holds the lock may also clean up after a killed run: a temporary file left by
an interrupted atomic write (``.<name>.stay-<16 hex digits>.tmp``, the form only stay
makes) is removed; a person's own ``*.tmp`` files are left alone.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

try:
    import fcntl
except ImportError:  # Windows: the portable lock below; macOS and Linux have flock
    FLOCK = False
else:
    FLOCK = True

from stay._paths import check_links, writing
from stay.errors import CourseLocked

LOCK = ".runs/lock"
"""The note of the holder's process id (the lock itself is the directory's)."""

HELD = ".runs/lock.held"
"""The file locked where there is no flock (never the note: Windows locks are mandatory,
and a refused writer could not read the pid from a locked file)."""


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
        release = try_lock(self.course_dir)
        if release is None:
            raise CourseLocked(f"course '{self.course_dir.name}' is being written by another stay command "
                               f"(pid {self._holder()}); wait for it to finish, then run this again")
        self._release = release
        writing(self.course_dir, True)  # from here every write in the course is walked to
        self._note()
        sweep_temporaries(self.course_dir)

    def _note(self) -> None:
        """The holder's pid, for a refused writer to name (never through a link: the note is
        the course's own file, and a linked .runs/ or lock file would write elsewhere)."""
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
        """Remove what acquire made for a course that never got its course.yaml: the pid
        note and the directories, each only if empty (a file a run did write is kept)."""
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
    """Make the course directory and any missing parent; the ones this call made, outermost
    first (one another process made is not ours to remove)."""
    missing = [p for p in [course_dir, *course_dir.parents] if not os.path.lexists(p)]
    made = []
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except FileExistsError:
            continue
        made.append(directory)
    return made


def try_lock(course_dir: Path) -> Callable[[], None] | None:
    """The course's lock, held (the function that releases it), or None when another
    command holds it."""
    return _flock(course_dir) if FLOCK else _portable_lock(course_dir)


def _flock(course_dir: Path) -> Callable[[], None] | None:
    """An flock on an open descriptor of the directory itself."""
    fd = os.open(course_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(course_dir, follow_symlinks=False))
    except OSError:
        same = False
    if not same:  # the directory was removed (a new course's refused run) after we opened it
        os.close(fd)
        return None

    def release() -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    return release


def _portable_lock(course_dir: Path) -> Callable[[], None] | None:
    """filelock's lock on ``.runs/lock.held`` (a directory cannot be locked on Windows).
    check_links has held any link under the course inside it; filelock opens the file
    itself without following a link (a reparse point on Windows)."""
    with warnings.catch_warnings():  # off Windows without fcntl it says it is the soft lock: the docstring says so
        warnings.filterwarnings("ignore", "only soft file lock is available")
        import filelock  # here: only the path without flock needs it
    held = course_dir / HELD
    held.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(os.fspath(held), timeout=0)  # timeout 0: one try, a second writer never waits
    try:
        lock.acquire()
    except filelock.Timeout:
        return None
    return lock.release


def sweep_temporaries(course_dir: Path) -> list[Path]:
    """Remove the temporary files a killed run left behind (only the lock holder may):
    exactly the names ``write_text_atomic`` makes, nothing else."""
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
