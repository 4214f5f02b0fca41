"""ast: the data files under assets/ (``<[a-z0-9][a-z0-9-]*>.csv|.txt|.json``) and the learner-facing text
(lessons, exercises, quizzes, project.yaml) that names them by course-relative path; group ``stay``. Read
safely: ``assets/`` is listed without following a link, a non-regular entry is ast005's and never opened,
and a file is read no further than ``MAX_ASSET_BYTES`` and a byte."""

from __future__ import annotations

import csv
import io
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from stay._bounds import DATA_NAME, MAX_ASSET_BYTES, Damaged, read_stored
from stay.validate._course import Course, Finding, Group, Severity, finding, rule

FAIL, WARN = Severity.FAIL, Severity.WARN
ASSETS = "assets"
"""The course's folder of data files, and the prefix of the path text names one by."""
KINDS = {"csv": "CSV", "txt": "text", "json": "JSON"}
"""Each data file's extension, and the type it must read as."""
LEARNER_KINDS = ("md", "exercises", "quiz", "project")
"""The files learners read (kinds as _course.py names them): the only text a data file is named in."""
_NAMED = re.compile(r"(?<![A-Za-z0-9_./-])assets/[A-Za-z0-9_./-]+")
"""A course-relative path under assets/ (not the tail of a URL or of ``../assets/``); trailing '.', '/'
and '-' trimmed. Linear: one character class after a literal."""
SHOWN_FILES = 10
"""ast001 names at most this many of the course's data files (then how many more)."""
_EXTENSIONS = ["." + kind for kind in KINDS]
LAYOUT = ("assets/ holds only data files, each a file named like orders.csv (a-z, 0-9 and -, then "
          + ", ".join(_EXTENSIONS[:-1]) + " or " + _EXTENSIONS[-1] + ")")


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of assets/ (or assets/ itself, when it is no folder), as ``lstat`` sees it."""

    path: str
    """``assets/<name>``, '/'-separated; ``assets`` for the folder itself."""
    problem: str | None
    """Why it is not a data file (ast005's message), or None for a data file."""
    size: int = 0


def entries(root: str | os.PathLike[str]) -> list[Entry]:
    """What assets/ holds, by name, never through a link: [] when there is no assets/."""
    folder = os.path.join(root, ASSETS)
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [Entry(ASSETS, f"cannot be read ({exc.strerror or exc})")]
    if stat.S_ISLNK(mode):
        return [Entry(ASSETS, "a symbolic link, not followed")]
    if not stat.S_ISDIR(mode):
        return [Entry(ASSETS, "a file, not a folder")]
    try:
        with os.scandir(folder) as scanned:
            listed = sorted((entry for entry in scanned if not entry.name.startswith(".")),
                            key=lambda entry: entry.name)
            return [_entry(entry) for entry in listed]
    except OSError as exc:
        return [Entry(ASSETS, f"cannot be read ({exc.strerror or exc})")]


def _entry(entry: os.DirEntry[str]) -> Entry:
    path = f"{ASSETS}/{entry.name}"
    if entry.is_symlink():
        return Entry(path, "a symbolic link, not followed")
    if entry.is_dir(follow_symlinks=False):
        return Entry(path, "a folder")
    if not entry.is_file(follow_symlinks=False):
        return Entry(path, "a FIFO, a socket or a device, not opened")
    if DATA_NAME.fullmatch(entry.name) is None:
        extension = entry.name.rpartition(".")[2].lower() if "." in entry.name else ""
        if extension not in KINDS:
            return Entry(path, f"a file of an unknown type ({'.' + extension if extension else 'no extension'})")
        return Entry(path, "a name with characters other than a-z, 0-9 and - before its extension")
    return Entry(path, None, entry.stat(follow_symlinks=False).st_size)


def read_data_file(root: str | os.PathLike[str], path: str) -> bytes:
    """The bytes of the data file at ``path``, never through a link nor past ``MAX_ASSET_BYTES`` + 1."""
    return read_stored(os.path.join(root, *path.split("/")), MAX_ASSET_BYTES)


def data_files(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """The data files a learner can be offered, by path, in name order (the rest are the validator's)."""
    found: dict[str, bytes] = {}
    for entry in entries(root):
        if entry.problem is None and entry.size <= MAX_ASSET_BYTES:
            try:
                found[entry.path] = read_data_file(root, entry.path)
            except (Damaged, OSError):
                continue
    return found


def names_in(*values: object) -> list[str]:
    """The paths under assets/ that ``values`` name (texts, or YAML's strings), once each, in order."""
    found: dict[str, None] = {}
    pending = list(reversed(values))
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            for match in _NAMED.finditer(value):
                named = match.group().rstrip("./-")
                if named != ASSETS:
                    found.setdefault(named)
        elif isinstance(value, dict):
            pending.extend(reversed([*value.keys(), *value.values()]))
        elif isinstance(value, list):
            pending.extend(reversed(value))
    return list(found)


def _learner_files(course: Course) -> Iterator[tuple[str, list[str]]]:
    """(path, the data file paths it names) for each usable learner-facing file, in load order."""
    for path, record in course.files.items():
        if record.kind in LEARNER_KINDS and record.usable:
            yield path, names_in(record.body.text if record.body is not None else record.data)


def _data(course: Course) -> list[Entry]:
    return [entry for entry in entries(course.root) if entry.problem is None]


def _shown(paths: list[str]) -> str:
    names = [path.rpartition("/")[2] for path in paths[:SHOWN_FILES]]
    more = len(paths) - SHOWN_FILES
    return (", ".join(names) + (f" and {more} more" if more > 0 else "")) if names else "none"


@rule("ast001", FAIL, None, "names {named}, which the course does not have: name one of its data files "
                            "({files}) or none", group=Group.STAY)
def ast001(course: Course) -> Iterator[Finding]:
    """A lesson, exercise, quiz or the capstone names a data file that is not under assets/:
    a learner told to open it finds nothing. Owned by the file that names it, as its writer
    can name another or none (the message lists the course's data files); an entry of
    assets/ that is there but is no data file (a link, a folder) is ast005's, not said here."""
    there = {entry.path for entry in entries(course.root)}
    files = _shown([entry.path for entry in _data(course)])
    for path, named in _learner_files(course):
        owner = course.files[path].owner
        for name in named:
            yield Finding(path, name, name not in there, {"named": name, "files": files}, owner)


@rule("ast002", WARN, "content", "no lesson, exercise, quiz or capstone names this data file: name {named} "
                                 "where learners use it, or delete the file", group=Group.STAY)
def ast002(course: Course) -> Iterator[Finding]:
    """A data file under assets/ is named by no learner-facing text, so no learner is told
    when to open it. A WARN, not a FAIL: an unnamed file misleads no one (it is clutter, or
    a pointer a lesson forgot), and it is valid mid-run, when the data files are written
    before the lessons that name them; ``--strict`` and the build's last check fail it.
    Evaluated only once some learner-facing file exists: at the plan gate no lesson is
    written, and a reviewer told that none names the file would be told nothing.
    Owned by content: the fix an instructional designer expects is a lesson that uses it.
    Its path is no lesson's, so repair reports it and regenerates nothing."""
    learner = list(_learner_files(course))
    if not learner:  # before the wave (at the plan gate) nothing could name one yet: no subject
        return
    named = {name for _path, names in learner for name in names}
    for entry in _data(course):
        yield finding(entry.path, "-", entry.path not in named, named=entry.path)


@rule("ast003", FAIL, "example", "is {size} bytes, over the {limit} bytes a data file may hold: cut it to "
                                  "a sample a learner can open and read", group=Group.STAY)
def ast003(course: Course) -> Iterator[Finding]:
    """A data file is larger than ``stay._bounds.MAX_ASSET_BYTES`` (1 MB): a learner downloads
    a sample to work through, not a data set, and no reader reads past the limit. Owned by
    the example stage, which writes the data files from example.yaml."""
    for entry in _data(course):
        yield finding(entry.path, "-", entry.size > MAX_ASSET_BYTES, size=f"{entry.size:,}",
                      limit=f"{MAX_ASSET_BYTES:,}")


@rule("ast004", FAIL, "example", "does not read as {kind}: {problem}", group=Group.STAY)
def ast004(course: Course) -> Iterator[Finding]:
    """A data file within the limit does not read as its extension says: CSV is UTF-8 with a
    header row naming every column, and every row has the header's number of fields (the
    csv module, strict; blank lines are no rows); JSON is UTF-8 that ``json.loads`` reads;
    text is UTF-8 with no NUL byte. A learner's spreadsheet or parser would refuse it, or
    read it wrong. A file over the limit is ast003's alone, never read."""
    for entry in _data(course):
        if entry.size > MAX_ASSET_BYTES:
            continue
        try:
            problem = parse_problem(entry.path, read_data_file(course.root, entry.path))
        except Damaged as exc:  # swapped for a link, or grown, since it was listed
            problem = f"cannot be read ({exc.reason})"
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror or exc})"
        kind = KINDS[entry.path.rpartition(".")[2]]
        yield finding(entry.path, "-", problem is not None, kind=kind, problem=problem)


@rule("ast005", FAIL, "example", "{what}: " + LAYOUT, group=Group.STAY)
def ast005(course: Course) -> Iterator[Finding]:
    """assets/ holds something other than a data file: a subfolder, a symbolic link (never
    followed, so nothing is read through it), a FIFO or a device, a file of an unknown type,
    or a name outside the pattern; or assets/ is itself a link or a file. The viewer offers
    none of them, and text that names one would send a learner to it. Owned by the
    example stage, the one writer of assets/."""
    for entry in entries(course.root):
        yield finding(entry.path, "-", entry.problem is not None, what=entry.problem)


def parse_problem(path: str, data: bytes) -> str | None:
    """Why ``data`` does not read as the type ``path``'s extension names, or None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"byte {exc.start + 1} is not UTF-8"
    kind = path.rpartition(".")[2]
    if kind == "json":
        import json  # here, not at the top: the validator's start-up does not pay for it

        try:
            json.loads(text)
        except RecursionError:
            return "nested too deeply to read"
        except json.JSONDecodeError as exc:
            return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
        return None
    if "\x00" in text:
        return f"a NUL byte at character {text.index(chr(0)) + 1}"
    return _csv_problem(text) if kind == "csv" else None


def _csv_problem(text: str) -> str | None:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    try:
        for row in reader:
            if not row:
                continue
            if header is None:
                header = row
                if any(not cell.strip() for cell in row):
                    return f"the header row (line {reader.line_num}) leaves a column unnamed"
            elif len(row) != len(header):
                return f"line {reader.line_num} has {len(row)} fields where the header row has {len(header)}"
    except csv.Error as exc:
        return f"line {reader.line_num}: {exc}"
    return None if header is not None else "no header row (the file is empty)"
