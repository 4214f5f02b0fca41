"""Every exception stay raises on purpose, and the exit code each one means.

Each message says what went wrong, where, and how to fix it, in one line, so the
command line can print it as it is. The tree is closed: nothing stay raises on
purpose is outside it, and the command line maps a class to its exit code through
one table, ``EXIT_CODES`` (the most specific class wins).

    StayError
    ├── UsageError            a command or call was given something it cannot use      (2)
    │   │                     (also a ValueError)
    │   ├── CoursePathError   a course path that does not exist or is not a directory
    │   │   └── CourseNotFound    the course path does not exist (a FileNotFoundError)
    │   ├── DataFileError     bloom-verbs.yaml or house-style.yaml missing or malformed
    │   ├── BriefError        a brief that cannot be used: names the file and field
    │   │   └── BriefNotFound     the brief file does not exist (a FileNotFoundError)
    │   └── RunsNotComparable two eval reports differ in what a comparison holds fixed
    │                         (judge, judge model, backend, scorer versions, briefs)
    ├── EnvironmentProblem    the machine is in the way: disk full, read-only, a damaged
    │                         ledger, a path that is a file; names the path and the fix (2)
    ├── ArtefactError         a course file that cannot be read as its artefact         (5)
    ├── AnswerError           a model's answer that does not fit the stage's schema    (5)
    ├── ModelError            the model's reply cannot be used: refused, cut off,
    │   │                     malformed                                               (5)
    │   ├── TruncationError   the answer was cut off at max_tokens
    │   ├── RefusalError      the model refused to answer
    │   └── ReplayMiss        a replayed run met a request it has no recorded answer for
    ├── ModelUnavailable      no reply came: the service is unavailable after retries
    │   │                     (429, 529, 5xx, connection, timeout): rerun to continue  (6)
    │   └── Unreachable       no connection could be made at all (refused, no such host,
    │                         unreachable): at once, naming the URL, never retried
    ├── PipelineError         the pipeline refused to go on (a gate, a guard)          (5)
    │   ├── BriefRejected     input moderation flagged the brief; nothing was written
    │   ├── UnsafeId          an id or slug read from disk or from a model that could
    │   │                     name a path outside the course, or breaks the id format
    │   ├── CourseLocked      another command is writing this course
    │   └── CostCapReached    the next call could pass --max-cost: stopped before it
    ├── InvalidRun            an eval report with too many failed judge items to trust (5)
    └── GraphError            a declaration that breaks its contract: the pipeline graph,
                              a stage, the rule registry (a bug)                       (3)

Python's own classes are bases where they apply, so code that knows nothing of stay can
catch what it expects: a usage error is a ``ValueError``, a brief or course path that does
not exist is a ``FileNotFoundError`` (``errno`` ENOENT, ``filename`` the path), and the
exit code is still stay's (the stay class comes first in the MRO). Every error carries
``path`` (the file or directory concerned) and ``field`` (the brief's or artefact's field,
dotted, as ``modules.0.lessons``), each None where the error has none: the message says
them for a person, the attributes for a program.

Test support raises one more StayError, ``stay.testing.InjectedFault`` (5), declared
there because only a test asks for it.
"""

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
    """Base class of every error stay raises on purpose.

    ``path``: the file or directory concerned, or None; ``field``: the brief's or the
    artefact's field, dotted (``modules.0.lessons``), or None. Keyword-only, so the
    message stays the one positional argument, as every exception's is."""

    path: str | None
    field: str | None

    def __init__(self, *args: object, path: str | os.PathLike[str] | None = None, field: str | None = None) -> None:
        super().__init__(*args)
        self.path = None if path is None else os.fspath(path)
        self.field = field


class UsageError(StayError, ValueError):
    """A command or call was given something it cannot use (exit code 2); a ``ValueError``,
    as Python's own functions raise for an argument they cannot use."""


class _Missing(StayError, FileNotFoundError):
    """What makes a stay error also Python's FileNotFoundError: ``errno`` ENOENT and
    ``filename`` the path, as ``open()`` would give them, while ``str()`` stays stay's one
    line (OSError's own would be "[Errno 2] ...: 'path'"). Read from ``path``, not set:
    StayError's ``__init__`` is the one that runs. Never raised alone; its subclasses name
    their stay class first, so the exit code is that class's."""

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
    """The course directory (or the path given to the validator) does not exist: also a
    ``FileNotFoundError``."""


class DataFileError(UsageError):
    """A validator data file is missing, unreadable, or lacks a key the rules read."""


class BriefError(UsageError):
    """A brief that cannot be used; the message names the file, the field and the fix."""


class BriefNotFound(BriefError, _Missing):
    """The brief file does not exist: also a ``FileNotFoundError``."""


class RunsNotComparable(UsageError):
    """Two eval reports that cannot be compared: the message names every difference and
    the ``--allow`` that would accept it (exit code 2)."""


class InvalidRun(StayError):
    """An eval report with more failed judge items (unparseable replies, model errors) than
    a comparison can trust: names the run, the scorer and the counts (exit code 5)."""


class EnvironmentProblem(StayError):
    """The machine is in the way (disk full, read-only filesystem, a damaged ledger, a
    path that should be a directory): the message names the path and the fix (exit 2)."""

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
    """A model's answer does not fit the stage's schema: names the stage, file and field.
    ``raw`` keeps the answer's text, when there was one, for whoever has to read it."""

    billed: object | None = None
    """The failed reply's answer (a ``stay.requests.ModelAnswer`` with no data) when the
    call was billed: whoever counts usage counts it, though nothing came of it."""

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
    """The model service did not answer after its retries (rate limit, overload, a server
    error, no connection, a timeout). Nothing is lost: rerun the command to continue.

    Not a ``ModelError``: that is a reply that came and cannot be used, this is no reply
    at all (httpx's split of TransportError from HTTPStatusError). Code that handles both,
    such as a judge that records either as "no verdict", names both.

    ``fix``, when given, is what to do, said after what happened (``what``): the message is
    both, while the input screen, which goes on without a reply (fail open), says ``what``."""

    def __init__(self, what: str = "", *, fix: str | None = None, path: str | os.PathLike[str] | None = None,
                 field: str | None = None) -> None:
        super().__init__(f"{what}; {fix}" if fix else what, path=path, field=field)
        self.what, self.fix = what, fix


class Unreachable(ModelUnavailable):
    """No connection could be made to the service at all: refused (nothing listens at the
    URL), no such host, no route, no connection within the connect timeout; or one that has
    never answered closed it unanswered (nothing that speaks its HTTP listens there). Said at
    once, naming the URL: no retry mends a wrong URL or a server that is not running, and a
    run that met it asks that service nothing more."""


class PipelineError(StayError):
    """The pipeline refused to go on: names what blocked it and the command that unblocks it."""


class BriefRejected(PipelineError):
    """The input screen flagged the brief; nothing was written."""


class UnsafeId(PipelineError):
    """An id, slug or term that could name a path outside the course, or that breaks the
    contract's id format; names the file and the field. Nothing was written."""


class CourseLocked(PipelineError):
    """Another command holds this course's lock; names its process id."""


class CostCapReached(PipelineError):
    """The next model call's worst case would take the run past its cost cap
    (``--max-cost``, ``STAY_MAX_COST``): the run stopped before it, keeping what it
    finished; names the spend so far, the cap and what is left (exit code 5)."""


class GraphError(StayError, ValueError):
    """A declaration that breaks its contract (the pipeline graph, a stage, the rule
    registry): a bug in stay, found when it is built; the message lists every problem."""


EXIT_CODES: dict[type[BaseException], int] = {
    StayError: EXIT_REFUSED,
    UsageError: EXIT_USAGE,
    EnvironmentProblem: EXIT_USAGE,
    ModelUnavailable: EXIT_UNAVAILABLE,
    GraphError: EXIT_BUG,
}
"""Exception class -> exit code. The most specific class in an error's MRO wins."""


def exit_code(error: BaseException) -> int:
    """The exit code an error means: its nearest class in ``EXIT_CODES``, else a bug (3)."""
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return EXIT_BUG
