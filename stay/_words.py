"""Words that help: the nearest existing name for a mistyped one, and the hint naming what to run next
in the caller's language (the ``stay`` command at a shell, the Python call from Python). Stdlib only,
so the CLI's parser, the pipeline's refusals and the viewer share one rule."""

from __future__ import annotations

import ast
import difflib
import os
import shlex
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import PurePath
from typing import Literal, NamedTuple


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest choice to ``word``, else ``""`` (difflib's cutoff, 0.6)."""
    near = difflib.get_close_matches(word, sorted(set(choices)), n=1)
    return f" (did you mean '{near[0]}'?)" if near else ""


def course_slugs(courses_dir: str | os.PathLike[str]) -> list[str]:
    """The slugs of the courses in ``courses_dir``; none when unreadable (a suggestion is never an error)."""
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
"""Whom a hint is for: a Python caller (``yes=True``) or a person at a shell (``--yes``)."""

SPEAKS: ContextVar[Speaks] = ContextVar("stay_speaks", default="python")
"""Who called: Python, unless the command line says ``speaking("shell")``. A run captures it when it
starts (``RunConfig.speaks``), so its worker threads speak the same way."""


@contextmanager
def speaking(speaks: Speaks) -> Iterator[None]:
    """Hints made inside are for ``speaks``."""
    token = SPEAKS.set(speaks)
    try:
        yield
    finally:
        SPEAKS.reset(token)


# -- the Python call each command a hint names is -----------------------------------------


class PythonCall(NamedTuple):
    """The public function that does a command from Python, and how its words fill it."""

    function: str
    """Dotted, from ``stay``: ``stay.approve``, ``stay.view.render_course``."""
    names: tuple[str, ...]
    """Its positional parameters, in the command's word order (``targets``, revise's, is a list)."""
    in_courses: bool = False
    """Its first word is a course's directory, as the viewer's call takes the course's own path."""


PYTHON_CALLS: Mapping[str, PythonCall] = {
    "new": PythonCall("stay.build_course", ("brief",)),
    "build": PythonCall("stay.build_course", ("brief",)),
    "approve": PythonCall("stay.approve", ("slug", "gate")),
    "revise": PythonCall("stay.revise", ("slug", "targets")),
    "adopt": PythonCall("stay.adopt", ("slug",)),
    "view": PythonCall("stay.view.render_course", ("course_dir",), in_courses=True),
}
"""A command a hint names -> its public Python call; any other is ``stay.pipeline.run_command(COMMAND, ...)``."""
FLAGS = {"--decline": "decline", "--force": "force", "--yes": "yes", "--show": "show", "--keep": "keep"}
"""The command line's switches, as the calls' keywords (each True when given)."""
YES: Mapping[Speaks, str] = {"shell": "--yes", "python": "yes=True"}
"""How a hint says "answer the gates unseen"."""
DEFAULT_COURSES = "courses"
"""--courses-dir's default (and ``courses_dir``'s): a hint leaves it out."""


def _literal(word: str) -> str:
    """A hint's word as a Python literal: a word the shell form quotes (``'...'``) once."""
    if word[:1] in "'\"" and len(word) > 1 and word[-1] == word[0]:
        word = ast.literal_eval(word)
    return repr(word)


def python_call(courses_arg: str, *words: str) -> str:
    """The Python call a hint's command words name, e.g. ``stay.approve('s', 'design')``."""
    command, *rest = words
    declared = PYTHON_CALLS.get(command)
    call, names = (declared.function, declared.names) if declared else ("stay.pipeline.run_command", ())
    args = [] if declared else [repr(command)]
    if declared and declared.in_courses:  # the course's own directory, so no courses_dir= beside it
        args.append(repr(os.path.join(courses_arg, rest.pop(0))))
    keywords: list[str] = []
    while rest:
        word = rest.pop(0)
        if word in FLAGS:
            keywords.append(f"{FLAGS[word]}=True")
        elif word.startswith("--"):
            keywords.append(f"{word[2:].replace('-', '_')}={_literal(rest.pop(0))}")
        elif names[len(args):len(args) + 1] == ("targets",):  # every target word, one list
            targets = [_literal(word)]
            while rest and not rest[0].startswith("--"):
                targets.append(_literal(rest.pop(0)))
            args.append(f"[{', '.join(targets)}]")
        else:
            args.append(_literal(word))
    if courses_arg != DEFAULT_COURSES and not (declared and declared.in_courses):
        keywords.append(f"courses_dir={courses_arg!r}")
    return f"{call}({', '.join(args + keywords)})"


def command_hint(courses_arg: str, *words: str, speaks: Speaks | None = None) -> str:
    """A command to suggest, with the --courses-dir the user passed (none when default), to paste as it
    is: the ``stay`` command at a shell, the Python call for a Python caller."""
    if (speaks or SPEAKS.get()) == "python":
        return f"`{python_call(courses_arg, *words)}`"
    where = "" if courses_arg == DEFAULT_COURSES else f" --courses-dir {shlex.quote(courses_arg)}"
    return f"`stay {' '.join(words)}{where}`"


def course_hint(courses_dir: str | os.PathLike[str], *words: str) -> str:
    """``command_hint`` from code that knows the courses directory only as a path: the Python call names
    it; the shell command leaves it out rather than print a path the user did not type."""
    speaks = SPEAKS.get()
    return command_hint(os.fspath(courses_dir) if speaks == "python" else DEFAULT_COURSES, *words, speaks=speaks)


def damaged_ledger(path: str | os.PathLike[str], why: str) -> str:
    """The line refusing a damaged ledger file, with its one way out (``stay adopt SLUG``) in the caller's words."""
    course = PurePath(path).parents[1]
    return f"{os.fspath(path)} is damaged ({why}); run {course_hint(course.parent, 'adopt', course.name)} to " \
           "rebuild the ledger from the files on disk"


OPTIONS: Mapping[str, str] = {"--out": "out_dir", "--courses-dir": "courses_dir"}
"""The viewer's options, as its Python calls' parameters."""


def option_name(flag: str) -> str:
    """An option as the caller gave it: the flag (``--out``) at the shell, the parameter from Python."""
    return OPTIONS.get(flag, flag) if SPEAKS.get() == "python" else flag


def command_name(command: str) -> str:
    """The command as the writer of something (``stay view`` wrote this site), or from Python its module."""
    if SPEAKS.get() == "python" and command in PYTHON_CALLS:
        return f"`{PYTHON_CALLS[command].function.rpartition('.')[0]}`"
    return f"`stay {command}`"
