"""A rebuild with nothing to do, answered from the record of the last one.

``stay build`` on a course where nothing changed walks the whole pipeline to find that
out: about 0.35 s, most of it importing pydantic and the pipeline. The pipeline is a pure
function of what it reads, so when every input is byte-identical to what a run that had
nothing to do saw, the answer is that run's answer. After such a run (no call, no file
written or retired, exit 0, and no byte of the course changed between its start and its
end) the command line stores what it printed, with a fingerprint of every input, in
``<course>/.runs/quick.json``. The next ``stay build`` with the same fingerprint prints
the same lines (the elapsed time measured afresh) and exits with the same code, without
importing the pipeline. Anything else runs the pipeline, which records again.

The fingerprint is deliberately wide; a miss costs 0.4 s, a false match a wrong answer:
- the command line (every argument) and the working directory;
- the settings (every field; the API key as a hash) and the interpreter;
- the versions of the libraries the pipeline uses;
- every file of the stay package, of the prompts and data directories that could be
  used, and of the brief when the target is a file;
- every file of the course but ``.runs/`` (names, the bytes' SHA-256, and where links point).

Never used when spans are exported (``OTEL_EXPORTER_OTLP_*``: the run's side effect), or
with ``STAY_QUICK=off``. It imports only stay's light modules (settings, the lock, slugs, the
link check, display helpers) and, for a brief target, PyYAML: never the pipeline or pydantic.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from stay._display import clock
from stay._lock import try_lock
from stay._paths import check_links
from stay._slug import is_slug, slugify
from stay._stored import Damaged, load_stored_json
from stay.errors import EnvironmentProblem
from stay.settings import Settings

RECORD = ".runs/quick.json"
VERSION = 1
LIBRARIES = ("pydantic", "pydantic-core", "PyYAML", "networkx", "anthropic", "httpx2")
_LAST_LINE = re.compile(r"(\d+ model calls?, \d+ files? written in )(.+?)(; cost .*)")
"""The run's last progress line: its elapsed time is measured afresh on a replay."""


def replay(args: Sequence[str], target: str, slug: str | None, courses_dir: str, settings: Settings,
           started: float) -> int | None:
    """The exit code of ``stay build`` answered from the course's record, having printed
    what the recorded run printed; None when the pipeline must run."""
    if not settings.quick or settings.otlp is not None:
        return None
    root = course_candidate(target, slug, courses_dir)
    if root is None or not _links_stay_inside(root) or not (root / RECORD).is_file():
        return None
    try:  # a damaged record (deep, huge, not a file) is only a miss
        record = load_stored_json(root / RECORD)
    except (OSError, Damaged):
        return None
    if not isinstance(record, dict) or record.get("version") != VERSION:
        return None
    lock = _try_lock(root)
    if lock is None:
        return None  # another command is writing: the pipeline reports it
    try:
        try:
            if record.get("fingerprint") != fingerprint(args, target, root, settings):
                return None
        except OSError:
            return None  # whatever could not be read, the pipeline reports in one line
        stderr, stdout, code = record.get("stderr"), record.get("stdout"), record.get("code")
        last = record.get("last")
        if not (isinstance(stderr, str) and isinstance(stdout, str) and code == 0
                and isinstance(last, list) and len(last) == 2 and all(isinstance(p, str) for p in last)):
            return None  # only a run that exited 0 is ever recorded: anything else is not our record
        sys.stderr.write(stderr + f"{last[0]}{clock(time.monotonic() - started)}{last[1]}\n")
        sys.stderr.flush()
        sys.stdout.write(stdout)
        sys.stdout.flush()
        return 0
    finally:
        os.close(lock)


def _links_stay_inside(root: Path) -> bool:
    """Whether the record, the lock and the fingerprint may be read here: a link out of the
    course is the pipeline's to refuse, in one line, before it reads anything."""
    try:
        check_links(root)
    except EnvironmentProblem:
        return False
    return True


def course_candidate(target: str, slug: str | None, courses_dir: str) -> Path | None:
    """The course directory ``stay build TARGET`` would use, worked out without the
    pipeline's imports: ``--slug``, a slug target, or the slug of a brief file's title. A
    wrong guess is harmless: the record there was made by a run whose command line and
    brief bytes (both in the fingerprint) led the pipeline to that directory."""
    name = slug
    if name is None and (target.endswith((".yaml", ".yml")) or "/" in target or os.sep in target):
        name = _brief_slug(Path(target))
    elif name is None:
        name = target
    if name is None or not is_slug(name):
        return None  # not a slug (the pipeline says so, in one line)
    return Path(courses_dir) / name


def _brief_slug(brief: Path) -> str | None:
    """The slug ``stay build BRIEF`` uses by default: ``slugify`` of the brief's title as
    written (the brief model may tidy the title; a different slug is only a miss)."""
    if not brief.is_file():  # a pipe (/dev/stdin, <(...)) is read once: that read is the pipeline's
        return None
    import yaml

    from stay._bounds import TooLarge, read_bounded, yaml_shape

    try:
        text = read_bounded(brief).decode("utf-8")
        if yaml_shape(text) is not None:  # anchors, aliases or deep nesting: the brief's check says so
            return None
        data = yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError, TooLarge):
        return None
    title = data.get("title") if isinstance(data, dict) else None
    return slugify(title) if isinstance(title, str) else None


def fingerprint(args: Sequence[str], target: str, root: Path, settings: Settings) -> str:
    """One digest of every input a ``stay build`` reads (see the module docstring)."""
    digest = hashlib.sha256()

    def add(*parts: object) -> None:
        for part in parts:
            data = part if isinstance(part, bytes) else repr(part).encode()
            digest.update(len(data).to_bytes(8, "big") + data)

    add(VERSION, list(args), os.getcwd(), sys.version, sys.executable, repr(settings),
        settings.chosen_backend, hashlib.sha256((settings.api_key or "").encode()).hexdigest())
    add(*_versions())
    here = Path(__file__).resolve().parent
    directories = [here, here.parent / "prompts", here.parent / "data", Path("data")]
    directories += [d for d in (settings.prompts_dir, settings.data_dir) if d is not None]
    for directory in directories:
        add("directory", str(directory))
        for path, content in _files(directory, skip=("__pycache__",)):
            add(path, content)
    brief = Path(target)
    if target.endswith((".yaml", ".yml")) and brief.is_file():
        add("brief", _file_digest(brief))
    add("course", str(root))
    for path, content in _files(root, skip=(".runs",), top_only=True):
        add(path, content)
    return digest.hexdigest()


def _versions() -> list[str]:
    from importlib import metadata

    found = []
    for name in LIBRARIES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} absent")
    return found


def _file_digest(path: Path) -> bytes:
    """A file's SHA-256, read in blocks: a file of any size in the course costs a block of
    memory, not its size."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").digest()


def _files(top: Path, skip: tuple[str, ...], top_only: bool = False) -> Iterator[tuple[str, bytes]]:
    """Every file under ``top`` (sorted; a link gives where it points and what it reads),
    leaving out directories named in ``skip`` (at the top only, when ``top_only``)."""
    if not top.is_dir():
        yield "absent", b""
        return
    for current, dirnames, filenames in os.walk(top):
        at_top = Path(current) == top
        dirnames[:] = sorted(d for d in dirnames if not (d in skip and (at_top or not top_only)))
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(current, d))]):
            path = Path(current) / name
            relative = path.relative_to(top).as_posix()
            if path.is_symlink():
                yield f"{relative} -> {os.readlink(path)}", b""
            if path.is_file():
                try:
                    yield relative, _file_digest(path)
                except OSError as exc:
                    yield relative, f"unreadable: {exc.errno}".encode()
            else:
                yield relative, b"not a file"


def _try_lock(root: Path) -> int | None:
    """The course's lock, held (a file descriptor), or None if another command holds it.
    Unlike the pipeline's, it sweeps nothing: the fingerprint must see the course as is."""
    try:
        return try_lock(root)
    except OSError:
        return None


@dataclass
class Recorder:
    """Tees what a ``stay build`` prints, and fingerprints its inputs before and after."""

    args: list[str]
    target: str
    slug: str | None
    courses_dir: str
    settings: Settings
    before: str | None = None
    root: Path | None = None
    _out: list[str] = field(default_factory=list)
    _err: list[str] = field(default_factory=list)
    _saved: tuple[TextIO, TextIO] | None = None

    def __enter__(self) -> Recorder:
        self.root = course_candidate(self.target, self.slug, self.courses_dir)
        try:
            if self.root is not None and _links_stay_inside(self.root) and (self.root / "course.yaml").is_file():
                self.before = fingerprint(self.args, self.target, self.root, self.settings)
        except OSError:
            self.before = None  # the pipeline reports what cannot be read; nothing is recorded
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout = _Tee(sys.stdout, self._out)
        sys.stderr = _Tee(sys.stderr, self._err)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved
            self._saved = None

    def finish(self, code: int, result: Any) -> None:
        """After the run: keep the record if it had nothing to do and changed nothing.
        Best effort: a record that cannot be written only means the next run walks."""
        self.__exit__()
        with contextlib.suppress(OSError):
            self._finish(code, result)

    def _finish(self, code: int, result: Any) -> None:
        course = Path(result.course_dir)
        record = course / RECORD
        record.unlink(missing_ok=True)  # whatever this run did, an older record no longer holds
        if (not self.settings.quick or self.settings.otlp is not None or code != 0 or result.calls
                or result.written or result.retired or result.stopped_at is not None):
            return
        if self.before is None or self.root is None or self.root.resolve() != course.resolve():
            return  # the course was found only by this run: the next one records
        if fingerprint(self.args, self.target, self.root, self.settings) != self.before:
            return  # the run changed a byte of its inputs: its answer may not be the next one's
        err = "".join(self._err).splitlines(keepends=True)
        last = _LAST_LINE.fullmatch(err[-1].rstrip("\n")) if err else None
        if last is None:
            return
        _write(record, {"version": VERSION, "fingerprint": self.before, "code": code, "stdout": "".join(self._out),
                        "stderr": "".join(err[:-1]), "last": [last.group(1), last.group(3)]})


class _Tee:
    """A text stream that also keeps what is written to it."""

    def __init__(self, stream: TextIO, kept: list[str]) -> None:
        self._stream = stream
        self._kept = kept

    def write(self, text: str) -> int:
        self._kept.append(text)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _write(path: Path, document: Any) -> None:
    """Whole or not at all: a temporary file, then a rename. ``stay.artefacts``'s
    ``write_text_atomic`` does the same for course files, but importing it would import
    pydantic and the artefact models, which this module exists to avoid; a record need
    not survive a power cut (a lost one only means the next run walks), so no fsync. The
    temporary name has ``temporary_name``'s form (a test holds it), so the sweep after a
    killed run removes it."""
    import secrets

    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.parent / f".{path.name}.stay-{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1, sort_keys=True)
            handle.write("\n")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
