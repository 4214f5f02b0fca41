"""Keeping a hand-edited file's bytes before a forced revision replaces it (``stay revise
--force`` and ``stay revise --keep --force``): a copy in ``.state/retired/run-<n>/``; and
the one check of every place stay sets something aside in ``.state/retired/``.

The copy is written like every other file stay writes: whole or not at all (a temporary
file beside it, then a rename), read through the bounded reader (a regular file of at
most ``MAX_FILE_BYTES``, never through a link), and only inside the course. Every file's
source and destination are checked before anything is written, so a refusal (a link,
a FIFO, a file over the bound, a file where a directory goes) changes nothing; the
caller then replaces nothing either, so no edited bytes are lost. An orphan a build
moves and a damaged gates.json adopt moves go to places checked the same way
(``retired_place``); a link there, even one that stays inside the course, would put
them wherever it leads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from stay._bounds import MAX_FILE_BYTES, Damaged, read_stored
from stay.artefacts import write_bytes_atomic
from stay.errors import EnvironmentProblem
from stay.pipeline._ledger import RETIRED

if TYPE_CHECKING:  # _state puts its orphans in retired_place: imported at run time, a cycle
    from stay.pipeline._state import CourseState


def keep_edited(course: CourseState, paths: Sequence[str], run_number: int, say: Callable[[str], None]) -> None:
    """Copy each of ``paths`` that was edited by hand to ``.state/retired/run-<n>/``,
    saying where; all are read and checked before the first is written."""
    root = course.root
    edited = [path for path in paths if course.status(path).state == "edited"]
    kept = {path: (_bytes_of(root, path), retired_place(root, f"run-{run_number}/{path}")) for path in edited}
    for path, (data, target) in kept.items():
        try:
            write_bytes_atomic(target, data)
        except OSError as exc:
            raise EnvironmentProblem.from_os_error(exc) from None
        say(f"  {path}: edited by hand; its bytes are kept in {target.relative_to(root).as_posix()}")


def _bytes_of(root: Path, path: str) -> bytes:
    """The edited file's bytes: no part of its path a link, a regular file, within the bound
    (the bounded reader decides the last two on the opened descriptor)."""
    file = root / path
    place = root
    for part in PurePosixPath(path).parts:
        place = place / part
        if place.is_symlink():
            raise EnvironmentProblem(f"{place} is a symbolic link; stay never reads a course file through one: "
                                     "replace the link with what it points to and run the command again")
    try:
        return read_stored(file, MAX_FILE_BYTES)
    except Damaged:  # a FIFO, a device, a directory, a file over the bound (or a link swapped in)
        raise EnvironmentProblem(f"{file} is not a regular file of at most {MAX_FILE_BYTES // 2**20} MB, so its "
                                 f"bytes cannot be kept in {RETIRED}/ before it is replaced: move it out of the "
                                 "course, or edit it yourself instead of forcing a revision") from None
    except OSError as exc:
        raise EnvironmentProblem.from_os_error(exc) from None


def retired_place(root: Path, where: str) -> Path:
    """``.state/retired/<where>``, where stay puts what it keeps aside (a forced revision's
    copy, an orphan, a damaged gates.json), refused when any part of the way there is a
    link (what is kept would land where the link leads) or is not a directory, or the
    place itself is a directory. Every caller checks all its places before it writes one."""
    target = root / RETIRED / where
    place = root
    for part in target.relative_to(root).parts:
        place = place / part
        if place.is_symlink():
            raise EnvironmentProblem(f"{place} is a symbolic link; stay keeps what it sets aside in the "
                                     f"course's own {RETIRED}/, never through a link: remove the link and run "
                                     "the command again")
        last = place == target
        if (place.is_dir() if last else place.exists() and not place.is_dir()):
            raise EnvironmentProblem(f"{place} is {'a directory' if last else 'not a directory'}, where stay "
                                     f"keeps what it sets aside: move it out of {RETIRED}/ and run the "
                                     "command again")
    return target


__all__ = ["keep_edited", "retired_place"]
