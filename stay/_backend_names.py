"""The backends by name: stay's own and what installed packages declare in the
``stay.backends`` entry points, nothing loaded; and the check of a name against them.

Split from ``stay.settings`` (which re-exports every name here) so the Settings model
reads in one sitting; the command line's parser lists these names for ``--help`` without
importing a backend.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from stay.errors import UsageError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

BackendName = str
"""A backend's name: an entry point of the ``stay.backends`` group (``registered_backends``)."""
JUDGED_HELP = ("judge the files against this backend's models (default: the backend and models the course's "
               "ledger records it was last built with, unless $STAY_BACKEND names another)")
"""``--backend``'s help on a command that judges a course's files (status, approve, adopt, view)."""
BACKEND_GROUP = "stay.backends"
BUILTIN_BACKENDS: Mapping[str, str] = {
    "offline": "stay.models._offline:make",
    "anthropic": "stay.models._anthropic:make",
    "openai": "stay.models._openai:make",
}
"""stay's own backends, as pyproject.toml declares them (a test holds the two equal); used
as well when the installed metadata lacks them (a checkout run without installing it, an
editable install made before they were declared)."""


def registered_backends() -> dict[str, EntryPoint]:
    """Every backend's entry point by name, nothing loaded: stay's own, then what installed
    packages declare in ``stay.backends``. A built-in name is stay's: a plug-in of another
    distribution declaring it too is ignored, so no package can stand in for Claude."""
    import sys

    return dict(_registered(tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _registered(path: tuple[str, ...]) -> tuple[tuple[str, EntryPoint], ...]:
    """Read once per ``sys.path`` (scanning every installed distribution takes tens of
    milliseconds, and settings are made many times a run); a path added later is read anew."""
    from importlib.metadata import EntryPoint, entry_points

    from stay._version import DISTRIBUTION

    found = {name: EntryPoint(name, value, BACKEND_GROUP) for name, value in BUILTIN_BACKENDS.items()}
    for point in entry_points(group=BACKEND_GROUP):
        dist = _normalised(point.dist.name) if point.dist is not None else None
        if point.name not in BUILTIN_BACKENDS or (dist == _normalised(DISTRIBUTION)
                                                  and point.value == BUILTIN_BACKENDS[point.name]):
            found[point.name] = point  # an installed built-in is stay's own, with its version
    return tuple(sorted(found.items()))


def _normalised(distribution: str) -> str:
    """A distribution's name as PEP 503 compares them (``Stay_Course`` is ``stay-course``)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def checked_backend(name: object, where: str = "backend") -> str:
    """``name`` when a backend is registered under it, else one line: the closest name, and
    every installed one."""
    if isinstance(name, str) and name in BUILTIN_BACKENDS:
        return name  # no scan of the installed packages for stay's own
    names = registered_backends()
    if isinstance(name, str) and name in names:
        return name
    import difflib

    close = difflib.get_close_matches(str(name), names, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise UsageError(f"{where} {str(name)[:40]!r} is not an installed backend{hint}; the installed backends are "
                     f"{', '.join(names)} (a plug-in adds one through the {BACKEND_GROUP} entry points)")
