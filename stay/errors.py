"""Every exception stay raises on purpose, and the exit code each one means (``EXIT_CODES``: the most
specific class wins); each message is one line saying what went wrong, where and how to fix it. Python's
own classes are bases where they apply. The tree: docs/commands.md, "Exit codes"."""

from __future__ import annotations

import os

__all__ = [
    "EXIT_BUG", "EXIT_CODES", "EXIT_FAIL", "EXIT_GATE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_REFUSED",
    "EXIT_UNAVAILABLE", "EXIT_USAGE", "AnswerError", "ArtefactError", "BriefError", "BriefNotFound",
    "BriefRejected", "CostCapReached", "CourseLocked", "CourseNotFound", "CoursePathError", "DataFileError",
    "EnvironmentProblem", "GraphError", "InvalidRun", "ModelError", "ModelUnavailable", "PipelineError",
    "RefusalError", "ReplayMiss", "RunsNotComparable", "StayError", "TruncationError", "Unreachable", "UnsafeId",
    "UsageError", "exit_code",
]

EXIT_OK = 0
"""Done, the validator reporting no FAIL; or stopped at the gate the command ends at (new, plan)."""
EXIT_FAIL = 1
"""The run finished and the validator reports at least one FAIL."""
EXIT_USAGE = 2
"""A usage or environment problem: a bad option, a bad brief, a full disk."""
EXIT_BUG = 3
"""A bug in stay: one line, and every file written so far is whole."""
EXIT_GATE = 4
"""Stopped at a gate short of the command's end (build), waiting for an answer."""
EXIT_REFUSED = 5
"""Refused: a guard, moderation, an unsafe id, an answer that cannot be used."""
EXIT_UNAVAILABLE = 6
"""The model service was unavailable after retries: rerun to continue."""
EXIT_INTERRUPTED = 130


class StayError(Exception):
    """``path`` and ``field`` are keyword-only, so the message stays the one positional argument."""

    path: str | None
    field: str | None

    def __init__(self, *args: object, path: str | os.PathLike[str] | None = None, field: str | None = None) -> None:
        super().__init__(*args)
        self.path = None if path is None else os.fspath(path)
        self.field = field


class UsageError(StayError, ValueError):
    """A command or call was given something it cannot use (exit code 2)."""


class _Missing(StayError, FileNotFoundError):
    """Also Python's FileNotFoundError (``errno``, ``filename`` read from ``path``), while ``str()`` stays
    stay's one line, not OSError's "[Errno 2] ...". Never raised alone."""

    @property
    def errno(self) -> int:  # type: ignore[override]  # always ENOENT: read-only
        import errno

        return errno.ENOENT

    @property
    def strerror(self) -> str:  # type: ignore[override]
        return os.strerror(self.errno)

    @property
    def filename(self) -> str | None:
        return self.path

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class CoursePathError(UsageError):
    """A path given to the validator does not exist, is not a directory, or cannot be read."""


class CourseNotFound(CoursePathError, _Missing):
    """The course directory (or the path given to the validator) does not exist."""


class DataFileError(UsageError):
    """A validator data file is missing, unreadable, or lacks a key the rules read."""


class BriefError(UsageError):
    """A brief that cannot be used; the message names the file, the field and the fix."""


class BriefNotFound(BriefError, _Missing):
    """The brief file does not exist."""


class RunsNotComparable(UsageError):
    """Two eval reports that cannot be compared: names every difference and its ``--allow``."""


class InvalidRun(StayError):
    """An eval report with more failed judge items than a comparison can trust."""


class EnvironmentProblem(StayError):
    """The machine is in the way (disk full, read-only, a damaged ledger): names path and fix."""

    @classmethod
    def from_os_error(cls, error: OSError) -> EnvironmentProblem:
        """One line for an operating-system error: what, where, and what to do."""
        import errno

        where = error.filename or "a course file"
        fixes = {
            errno.ENOSPC: "no space left on the device; free some space and run the command again",
            errno.EDQUOT: "the disk quota is exceeded; free some space and run the command again",
            errno.EROFS: "the filesystem is read-only; use a writable --courses-dir",
            errno.EACCES: "permission denied; fix the permissions or use another --courses-dir",
            errno.EPERM: "operation not permitted; fix the permissions or use another --courses-dir",
            errno.ENOTDIR: "a part of this path is a file, not a directory; use another --courses-dir",
            errno.EISDIR: "this is a directory where a file belongs; move it away",
            errno.EMFILE: "too many open files; raise the limit (ulimit -n) and run the command again",
        }
        what = fixes.get(error.errno or 0, f"{error.strerror or type(error).__name__}; check the path")
        return cls(f"{where}: {what} (nothing written so far was lost)", path=error.filename)


class ArtefactError(StayError):
    """A course file cannot be loaded as its artefact: the message names file and field."""


class AnswerError(StayError):
    """A model's answer does not fit the stage's schema; ``raw`` keeps its text, if any."""

    billed: object | None = None
    """The failed reply's ``ModelAnswer`` when the call was billed, for whoever counts usage."""

    def __init__(self, message: str, *, raw: str | None = None, path: str | os.PathLike[str] | None = None,
                 field: str | None = None) -> None:
        super().__init__(message, path=path, field=field)
        self.raw = raw


class ModelError(StayError):
    """The model's reply cannot be used: the message names the stage, the file and what to do."""

    billed: object | None = None
    """As ``AnswerError.billed``: a reply cut off at max_tokens or refused is still paid for."""


class TruncationError(ModelError):
    """An answer was cut off at max_tokens: incomplete, not malformed."""


class RefusalError(ModelError):
    """The model refused; the message carries the refusal's category and explanation."""


class ReplayMiss(ModelError):
    """A replayed run needed an answer the request cache does not hold."""


class ModelUnavailable(StayError):
    """No reply after the retries (rate limit, overload, a server error, a timeout): rerun to continue.
    Not a ``ModelError`` (a reply that came and cannot be used). The message is ``what`` then ``fix``."""

    def __init__(self, what: str = "", *, fix: str | None = None, path: str | os.PathLike[str] | None = None,
                 field: str | None = None) -> None:
        super().__init__(f"{what}; {fix}" if fix else what, path=path, field=field)
        self.what, self.fix = what, fix


class Unreachable(ModelUnavailable):
    """No connection at all (refused, no such host, no route, or closed by a server that never
    answered): said at once naming the URL, as no retry mends it; the run asks it nothing more."""


class PipelineError(StayError):
    """The pipeline refused to go on: names what blocked it and the command that unblocks it."""


class BriefRejected(PipelineError):
    """The input screen flagged the brief; nothing was written."""


class UnsafeId(PipelineError):
    """An id, slug or term that could name a path outside the course or breaks the id format."""


class CourseLocked(PipelineError):
    """Another command holds this course's lock; names its process id."""


class CostCapReached(PipelineError):
    """The next call's worst case would pass the cost cap: stopped before it, keeping what finished."""


class GraphError(StayError, ValueError):
    """A declaration that breaks its contract (graph, stage, rule registry): a bug in stay."""


EXIT_CODES: dict[type[BaseException], int] = {
    StayError: EXIT_REFUSED,
    UsageError: EXIT_USAGE,
    EnvironmentProblem: EXIT_USAGE,
    ModelUnavailable: EXIT_UNAVAILABLE,
    GraphError: EXIT_BUG,
}


def exit_code(error: BaseException) -> int:
    """The exit code an error means: its nearest class in ``EXIT_CODES``, else a bug (3)."""
    return next((EXIT_CODES[cls] for cls in type(error).__mro__ if cls in EXIT_CODES), EXIT_BUG)
