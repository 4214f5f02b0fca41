"""Reading a course brief: every check, once, before anything is built from it.

``Brief.from_yaml`` and ``stay.briefs.load_brief`` are this module's ``read_brief``:
one function, so the two can never check different things. A brief is untrusted
input: it is refused before it is expanded when it is too large, nests too deeply
or uses YAML anchors and aliases (a kilobyte alias bomb expands to gigabytes), and
refused with a one-line error naming the file, the field and the fix when a field
is missing, unknown, of the wrong type, or a duration stay cannot read.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import yaml

from stay._bounds import MAX_DEPTH, TooLarge, read_bounded, yaml_shape
from stay._duration import DEFAULT_LIMITS, DurationLimits, parse_duration
from stay.errors import BriefError, BriefNotFound

MAX_BYTES = 64 * 1024
REQUIRED = ("title", "topic", "audience", "time_available")
OPTIONAL = ("industry", "constraints")
EXAMPLE = "the example brief `stay init` writes"
"""Where a refusal points for a brief that works: what every install has (``stay init``),
never a checkout's path."""

def check_duration(text: str, where: str, limits: DurationLimits = DEFAULT_LIMITS) -> int:
    """The brief's minutes, within what the pipeline can make; else a BriefError."""
    try:
        minutes = parse_duration(text)
    except BriefError as exc:
        raise BriefError(f"{where}: field 'time_available': {exc}", field="time_available") from None
    if minutes < limits.shortest:
        raise BriefError(f"{where}: field 'time_available': {text!r} is {minutes} minutes, shorter than the "
                         f"shortest lesson house style allows ({limits.min_minutes} minutes) once "
                         f"{limits.practice_percent}% is kept for practice: give at least {limits.shortest} minutes",
                         field="time_available")
    if limits.lessons_share(minutes) > limits.longest:
        raise BriefError(f"{where}: field 'time_available': {text[:60]!r} is {minutes:,} minutes, "
                         f"{limits.lessons_share(minutes):,} of them lessons; the longest course house style allows "
                         f"is {limits.longest:,} minutes of lessons ({limits.longest // 60} hours of study): split the "
                         "subject into several courses", field="time_available")
    return minutes


def _structure(text: str, where: str) -> None:
    """Refuse anchors, aliases and deep nesting from the event stream, before any
    document is built (``stay._bounds.yaml_shape``, the guard every reader uses)."""
    try:
        shape = yaml_shape(text, MAX_DEPTH, yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise BriefError(f"{where}: the brief is not valid YAML{at}; fix its syntax") from None
    if shape == "aliases":
        raise BriefError(f"{where}: the brief uses YAML anchors or aliases (& and *); write each "
                         "value out in full")
    if shape == "deep":
        raise BriefError(f"{where}: the brief nests deeper than {MAX_DEPTH} levels; a brief is a "
                         "flat mapping with a list of constraints")


def brief_data(text: str, where: str) -> dict[str, Any]:
    """The brief's mapping, after the size, structure and key checks."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise BriefError(f"{where}: the brief is larger than {MAX_BYTES // 1024} KB; a brief is a few lines")
    _structure(text, where)
    try:
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        raise BriefError(f"{where}: the brief is not valid YAML; fix its syntax") from None
    return check_keys(data, where)


def check_keys(data: object, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BriefError(f"{where}: a brief is a mapping with {', '.join(REQUIRED)} (see {EXAMPLE})")
    known = (*REQUIRED, *OPTIONAL)
    for key in data:
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"did you mean '{near[0]}'?" if near else f"the fields are {', '.join(known)}"
            raise BriefError(f"{where}: unknown field '{str(key)[:40]}'; {hint}", field=str(key))
    for key in REQUIRED:
        if key not in data or data[key] is None:
            raise BriefError(f"{where}: field '{key}' is missing; add it (see {EXAMPLE})", field=key)
    return data


def read_brief_text(path: str | os.PathLike[str]) -> str:
    where = os.fspath(path)
    try:
        raw = read_bounded(path, MAX_BYTES)
    except TooLarge:
        raise BriefError(f"{where}: the brief is larger than {MAX_BYTES // 1024} KB; a brief is a few lines",
                         path=where) from None
    except FileNotFoundError:
        raise BriefNotFound(f"{where}: brief not found; give the path of a brief YAML file", path=where) from None
    except IsADirectoryError:
        raise BriefError(f"{where}: is a directory; give the path of a brief YAML file", path=where) from None
    except OSError as exc:
        raise BriefError(f"{where}: cannot read the brief ({exc.strerror or type(exc).__name__})",
                         path=where) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BriefError(f"{where}: the brief is not UTF-8 text; save it as UTF-8", path=where) from None


def read_brief(path: str | os.PathLike[str], limits: DurationLimits = DEFAULT_LIMITS) -> Any:
    """Read and check a brief file: a ``Brief``, or a one-line ``BriefError`` naming the
    file, the field and the fix."""
    where = os.fspath(Path(path))
    text = read_brief_text(path)
    if not text.strip():  # an empty file, or a pipe read to its end already (it is read once)
        raise BriefError(f"{where}: the brief is empty, nothing was read from it; give a brief YAML file "
                         f"(see {EXAMPLE}), or pipe one in", path=where)
    try:
        return brief_from_data(brief_data(text, where), where, limits)
    except BriefError as exc:  # the checks of a brief's text name no file: this one is read from it
        exc.path = exc.path or where
        raise


def brief_from_data(data: object, where: str = "brief", limits: DurationLimits = DEFAULT_LIMITS) -> Any:
    """A ``Brief`` from already-parsed data, with every check ``read_brief`` makes after parsing."""
    from stay.artefacts._io import ArtefactLoadError, validate_as
    from stay.artefacts._models import Brief

    checked = check_keys(data, where)
    try:
        brief = validate_as(Brief, checked, where)
    except ArtefactLoadError as exc:
        raise BriefError(str(exc), field=exc.field) from None
    check_duration(brief.time_available, where, limits)
    return brief
