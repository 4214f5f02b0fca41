"""Words that help a person who mistyped a name: the nearest of the names that exist,
stdlib only, so the CLI's parser and the pipeline's refusals share one rule."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest choice to ``word``, else ``""``: a refusal's
    line appends it as is. difflib's default cutoff (0.6) is the one brief fields use."""
    near = difflib.get_close_matches(word, sorted(set(choices)), n=1)
    return f" (did you mean '{near[0]}'?)" if near else ""


def course_slugs(courses_dir: str | os.PathLike[str]) -> list[str]:
    """The slugs of the courses in ``courses_dir`` (a folder holding a course.yaml); none
    when the folder cannot be read, as a suggestion must never turn into a second error."""
    try:
        with os.scandir(courses_dir) as entries:
            return sorted(e.name for e in entries
                          if e.is_dir() and os.path.isfile(os.path.join(e.path, "course.yaml")))
    except OSError:
        return []


def no_course(slug: str, courses_dir: str | os.PathLike[str]) -> str:
    """The start of the line refusing a slug that names no course, with the nearest one."""
    return f"there is no course '{slug}' in {os.fspath(courses_dir)}{did_you_mean(slug, course_slugs(courses_dir))}"


# -- who is told: a hint names the shell command, or the Python call -----------------------

Speaks = Literal["python", "shell"]
"""Whom a hint is for: a Python caller (``stay.approve(...)``, ``yes=True``) or a person at
a shell (``stay approve ...``, ``--yes``)."""

SPEAKS: ContextVar[Speaks] = ContextVar("stay_speaks", default="python")
"""Who called: Python, unless the command line says otherwise (``speaking("shell")``, the
one place that knows). A run captures it when it starts (``RunConfig.speaks``), so what
its worker threads say is said the same way."""


@contextmanager
def speaking(speaks: Speaks) -> Iterator[None]:
    """Hints made inside are for ``speaks``: the command line runs every command in
    ``speaking("shell")``."""
    token = SPEAKS.set(speaks)
    try:
        yield
    finally:
        SPEAKS.reset(token)
