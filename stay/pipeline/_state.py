"""A course's state on disk: the ledger (what each file was built from, the answered gates, the run log),
retired copies, reviewer threads and waiting proposals."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal, NamedTuple
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, ValidationError

from stay._bounds import MAX_FILE_BYTES, Damaged, load_stored_json, read_stored
from stay._display import LINE_CHARS, one_line, terminal_text
from stay._paths import at, placed
from stay._secrets import redact, redact_bytes
from stay._words import course_hint, damaged_ledger
from stay.artefacts import (
    Brief,
    CourseManifest,
    Curriculum,
    LessonPlan,
    dump,
    dump_yaml,
    load,
    to_data,
    write_bytes_atomic,
    write_text_atomic,
)
from stay.errors import EnvironmentProblem, PipelineError
from stay.pipeline._graph import Dag, artefact_paths, covered_phases
from stay.pipeline._layout import BRIEF, CourseLayout
from stay.requests import Role
from stay.stages import REGISTRY, Prompts, Stage, answer_schema, checked_references

State = Literal["missing", "current", "stale", "edited", "orphaned"]
STATE = ".state"
HASHES = f"{STATE}/hashes.json"
JOURNAL = f"{STATE}/hashes.journal"
"""Records since hashes.json was last written, one JSON line each (gone after a checkpoint)."""
VERSION = 2
"""The ledger's format: 2 records each stage's sources and writes one artefact a line."""
GATES_FILE = f"{STATE}/gates.json"
RUN_LOG = f"{STATE}/run-log.md"
RETIRED = f"{STATE}/retired"
AUTO_APPROVED = "auto-approved (--yes)"


class Status(NamedTuple):
    """An artefact's derived status and the inputs changed since it was written (an ``edited`` file's too)."""

    state: State
    why: list[str]

    def describe(self) -> str:
        if self.state == "edited" and self.why:
            return f"<- {', '.join(self.why)} (edited by hand, and its inputs changed since)"
        if self.why:
            return f"<- {', '.join(self.why)}"
        if self.state == "orphaned":
            return "(not in the curriculum: the next build retires it to .state/retired/)"
        return ""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass(frozen=True)
class Sources:
    """What a stage's artefacts are made with besides their files (prompts, references, schema, model): each
    a ledger input, so changing one makes that stage's artefacts stale, named."""

    prompts: Prompts
    models: Mapping[Role, str]
    stages: Sequence[Stage] = REGISTRY
    backend: str | None = None
    """The backend that plays ``models``: what the ledger records the course was built with (``built``)."""
    _known: dict[str, dict[str, str]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        checked_references(self.prompts, self.stages)  # a front matter that does not fit: refused, every line
        # every status and every write asks: each stage's sources hashed once, here, not in a wave thread
        self._known.update({stage.name: self._of(stage) for stage in self.stages})

    def of(self, stage_name: str | None) -> dict[str, str]:
        """source name -> its digest (the model: its id), for one stage; {} for none."""
        return dict(self._known.get(stage_name or "", {}))

    def _of(self, stage: Stage) -> dict[str, str]:
        found = {"prompts/common.md": self.prompts.digest("common")[:16],
                 f"prompts/{stage.prompt}.md": self.prompts.digest(stage.prompt)[:16]}
        for name in self.prompts.reference_set(stage):
            found[f"prompts/reference/{name}"] = self.prompts.digest(f"reference/{name}")[:16]
        schema = json.dumps(answer_schema(stage.answer), sort_keys=True)
        found[f"schema {stage.answer.__name__}"] = digest(schema.encode())
        found["model"] = self.models[stage.role]
        return dict(sorted(found.items()))

    def built(self) -> dict[str, Any] | None:
        """hashes.json's ``built``: the backend and each role's model (None: no backend named)."""
        return None if self.backend is None else {"backend": self.backend, "models": dict(self.models)}


def built_with(root: Path) -> dict[str, Any]:
    """The backend and models the course at ``root`` was last built with ({} when none, or unreadable)."""
    try:
        built = read_document(root / HASHES).get("built")
    except EnvironmentProblem:
        return {}
    return built if isinstance(built, dict) else {}


def brief_hash(brief: Brief) -> str:
    return digest(dump_yaml(to_data(brief)).encode())


def now(epoch: int | None = None) -> str:
    """UTC now, or ``epoch`` (``Settings.source_date_epoch``) when set, for reproducible ledgers."""
    moment = datetime.fromtimestamp(epoch, UTC) if epoch is not None else datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_if_changed(path: Path, text: str) -> bool:
    """Atomic whole-file write, skipped when the bytes would not change."""
    if same_bytes(path, text):
        return False
    write_text_atomic(path, text)
    return True


def same_bytes(path: Path, text: str) -> bool:
    """Whether ``path`` is a file holding exactly ``text`` (a file of another size is not read)."""
    data = text.encode("utf-8")
    try:
        if not path.is_file() or path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False


def ledger_text(ledger: Mapping[str, Any], screened: str | None, built: Mapping[str, Any] | None = None) -> str:
    """hashes.json's text: one artefact a line, with the C JSON encoder (``indent``'s is 10x slower)."""
    lines = [f"    {json.dumps(path)}: {json.dumps(entry, sort_keys=True)}" for path, entry in sorted(ledger.items())]
    head = [f'  "built": {json.dumps(built, sort_keys=True)},'] if built is not None else []
    head += [f'  "screened": {json.dumps(screened)},'] if screened is not None else []
    return "\n".join(["{", '  "artefacts": {', ",\n".join(lines), "  },", *head, f'  "version": {VERSION}', "}", ""])


def append_journal(path: Path, entries: Mapping[str, Any]) -> None:
    """One journal line, written whole and synced; a line a killed run cut short is ended first, so the new
    line is not read as part of it."""
    line = redact_bytes((json.dumps(entries, sort_keys=True) + "\n").encode("utf-8"))  # as every file stay writes
    with placed(path) as (parent, name):  # never through a link planted in the course meanwhile
        fd = os.open(name, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666, **at(parent, "dir_fd"))
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        left = memoryview(line)
        while left:
            left = left[os.write(fd, left):]
        os.fsync(fd)
    finally:
        os.close(fd)


def journal_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The journal's records; a last line cut off by a crash is ignored."""
    if not path.is_file():
        return
    try:
        text = read_stored(path).decode("utf-8", "replace")  # bounded; a damaged line is skipped below
    except Damaged as exc:
        raise EnvironmentProblem(f"{exc}; move it aside and run the command again") from None
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and all(isinstance(v, dict) for v in record.values()):
            yield record


def read_document(path: Path, section: str = "artefacts") -> dict[str, Any]:
    """A ledger file's JSON, read bounded (a regular file, at most 16 MB, shallow), as a mapping ({} when absent);
    one that is damaged, or whose ``section`` is not a mapping of entries, names its way out, ``stay adopt``."""
    if not os.path.lexists(path):
        return {}
    try:
        document = load_stored_json(path)
    except (Damaged, OSError) as exc:
        why = exc.reason if isinstance(exc, Damaged) else type(exc).__name__
        raise EnvironmentProblem(damaged_ledger(path, why), path=path) from None
    part = document.get(section, {}) if isinstance(document, dict) else None
    if not isinstance(part, dict) or not all(isinstance(v, dict) for v in part.values()):
        raise EnvironmentProblem(damaged_ledger(path, f"'{section}' is not a mapping of entries"),
                                 path=path, field=section)
    return dict(document)


def read_ledger(path: Path, section: str) -> dict[str, Any]:
    """``section`` of a ledger file ({} when absent), checked as ``read_document`` checks it."""
    return dict(read_document(path, section).get(section, {}))


ANSWERED = f"{STATE}/answered"
_NAME = re.compile(r"[0-9a-f]{16}")
"""A blob's name (``digest``'s form): anything else in the ledger (``../x``) never becomes a path."""


def _store(root: Path) -> Path | None:
    """The store's directory, or None when it or ``.state`` is a link or outside the course."""
    store = root / ANSWERED
    for part in (root / STATE, store):
        if part.is_symlink() or (part.exists() and not part.is_dir()):
            return None
    if store.exists() and not store.resolve().is_relative_to(root.resolve()):
        return None
    return store


def keep_answered(root: Path, covered: Mapping[str, str | None]) -> dict[str, str]:
    """Keep the bytes of each covered file under its recorded digest; returns the files not kept, with why."""
    store = _store(root)
    refused: dict[str, str] = {}
    for path, wanted in sorted(covered.items()):
        if wanted is None:
            continue
        if store is None:
            refused[path] = f"{ANSWERED} is not a directory of this course (a link, or a file)"
            continue
        try:
            data = read_stored(root / path, MAX_FILE_BYTES)
        except (Damaged, OSError) as exc:
            refused[path] = getattr(exc, "reason", None) or str(exc)
            continue
        if digest(data) != wanted or not _NAME.fullmatch(wanted):
            refused[path] = "its bytes changed after they were hashed"
            continue
        if answered_copy(root, wanted) is None:
            write_bytes_atomic(store / wanted, data)  # a whole blob or none; a link at the name is replaced
    return refused


def answered_copy(root: Path, wanted: str) -> bytes | None:
    """The kept bytes with digest ``wanted``, or None: not kept, or damaged."""
    store = _store(root)
    if store is None or not _NAME.fullmatch(wanted):
        return None
    try:
        data = read_stored(store / wanted, MAX_FILE_BYTES)
    except (Damaged, OSError):
        return None
    return data if digest(data) == wanted else None


def prune_answered(root: Path, gates: Mapping[str, object]) -> None:
    """Remove every blob no answer in ``gates`` references (and leftovers of an interrupted write)."""
    store = _store(root)
    if store is None or not store.is_dir():
        return
    coverings = [entry.get("covered") if isinstance(entry, dict) else None for entry in gates.values()]
    wanted = {value for covered in coverings if isinstance(covered, dict) for value in covered.values()
              if isinstance(value, str)}
    for entry in sorted(store.iterdir()):
        if entry.name not in wanted and (entry.is_file() or entry.is_symlink()):
            entry.unlink(missing_ok=True)


def _text(root: Path) -> str | None:
    """The run log's text, read bounded (None when there is none); one that is not stay's is a line naming the fix."""
    path = root / RUN_LOG
    if not os.path.lexists(path):
        return None
    try:
        return read_stored(path).decode("utf-8", "replace")
    except Damaged as exc:
        raise EnvironmentProblem(f"{exc}; move it aside (stay starts a new one) and run the command again") \
            from None


def next_run_number(root: Path) -> int:
    return (_text(root) or "").count("\n## run ") + 1


def log_run(root: Path, command: str, backend: str, written: list[str], stopped: str | None,
            retired: list[str] | None = None, revised: Mapping[str, str] | None = None,
            fixed: Sequence[str] = (), failed: str | None = None, unscreened: str | None = None) -> None:
    """Append one run to .state/run-log.md if it wrote, retired or revised anything, in a stable order."""
    if not written and not retired and not revised:
        return
    path = root / RUN_LOG
    text = _text(root) or "# Run log\n"
    number = text.count("\n## run ") + 1
    lines = [f"## run {number}: {command} ({backend})", ""]
    lines += [f"- wrote {p}" for p in sorted(set(written))]
    lines += [f"- retired {p} to {RETIRED}/run-{number}/{p}" for p in sorted(retired or [])]
    lines += [f"- revised {p} with note {digest(n.encode())}: "
              f"{' '.join(n.split())[:80]!r}" for p, n in sorted((revised or {}).items())]
    lines += fixed
    if unscreened:
        lines.append(f"- the brief was screened by nothing: {unscreened}")
    ending = f"- failed: {' '.join(failed.split())[:200]}" if failed else (
        f"- stopped at {stopped}" if stopped else "- completed")
    lines.append(ending)
    # read in a terminal, and a retired path may hold any bytes (not UTF-8, an escape)
    shown = "\n".join(terminal_text(line) for line in lines)
    write_text_atomic(path, text.rstrip("\n") + "\n\n" + shown + "\n")


def keep_edited(course: CourseState, paths: Sequence[str], run_number: int, say: Callable[[str], None]) -> None:
    """Copy each edited one of ``paths`` to ``.state/retired/run-<n>/``; all are checked before one is written."""
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
    """The edited file's bytes: no link on its path, a regular file, within the bound."""
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
    """``.state/retired/<where>``, refused when any part of the way is a link or not a directory, or the place
    is a directory; every caller checks all its places before it writes one."""
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


@dataclass
class CourseState:
    """A course directory, its artefact graph, and its hash ledger."""

    root: Path
    _graph: Dag
    brief: Brief
    sources: Sources | None = None
    """What each stage is made with; None: staleness is judged on files alone."""
    epoch: int | None = None
    """The time an answer records (SOURCE_DATE_EPOCH), else the clock."""
    _ledger: dict[str, Any] | None = None
    """hashes.json as last read or written: every status reads it, so it is read once."""
    _dirty: bool = field(default=False, repr=False)
    _brief_digest: tuple[Brief, str] | None = field(default=None, repr=False)
    _screened: str | None = field(default=None, repr=False)
    _built: dict[str, Any] | None = field(default=None, repr=False)
    """hashes.json's ``built`` as read: kept when these sources name no backend."""
    _pending: list[dict[str, Any]] = field(default_factory=list, repr=False)
    """Journalled entries not yet known to have landed; ``_settle`` keeps those whose file has their bytes."""
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    """Held by every read-modify-write of the ledger and every pipeline write: a record landing between a
    checkpoint's snapshot and its dropping the journal would be lost."""
    _known: dict[str, str | None] | None = field(default=None, init=False, repr=False, compare=False)
    """path -> its file's hash (None: no file), after ``hash_once``; updated by this state's own writes and moves
    (only for the course's one writer: it holds the course lock)."""
    _made_from: dict[str, tuple[list[str], str | None]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.graph = self._graph

    @property
    def graph(self) -> Dag:
        """The artefact graph; set anew once the curriculum (and plans) are on disk."""
        return self._graph

    @graph.setter
    def graph(self, graph: Dag) -> None:
        self._graph = graph
        # each file's inputs (sorted) and stage, which every status and every write (a wave thread's) reads
        self._made_from = {path: (sorted(graph.predecessors(path)), graph.nodes[path].get("stage")) for path in graph}

    @property
    def slug(self) -> str:
        return self.root.name

    # -- hashes ------------------------------------------------------------

    def hash_once(self) -> None:
        """Hash each file at most once from now on (the caller holds the course lock): rehashed at every
        status, a build grew as n^1.75."""
        with self._lock:
            if self._known is None:
                self._known = {}

    def current_hash(self, path: str) -> str | None:
        if path == BRIEF:
            if self._brief_digest is None or self._brief_digest[0] is not self.brief:
                self._brief_digest = (self.brief, brief_hash(self.brief))
            return self._brief_digest[1]
        with self._lock:  # no wave thread's write lands between reading a file and remembering it
            if self._known is not None and path in self._known:
                return self._known[path]
            found = None
            if (self.root / path).is_file():  # read in blocks: any file a person put there costs a block of memory
                with open(self.root / path, "rb") as handle:
                    found = hashlib.file_digest(handle, "sha256").hexdigest()[:16]
            if self._known is not None:
                self._known[path] = found
            return found

    def _moving(self, paths: Iterable[str]) -> None:
        """``paths`` are about to change: the next ask reads them (an interrupt leaves nothing stale)."""
        if self._known is not None:
            for path in paths:
                self._known.pop(path, None)

    def ledger(self) -> dict[str, Any]:
        """hashes.json, with what the journal recorded since it was last written."""
        with self._lock:
            if self._ledger is None:
                document = read_document(self.root / HASHES)
                self._ledger = dict(document.get("artefacts", {}))
                screened = document.get("screened")
                self._screened = screened if isinstance(screened, str) else None
                built = document.get("built")
                self._built = built if isinstance(built, dict) else None
                self._pending = list(journal_lines(self.root / JOURNAL))
            if self._pending:
                self._settle(self._ledger)
            return self._ledger

    def _settle(self, ledger: dict[str, Any]) -> None:
        """Every journalled entry whose file has its bytes landed; the others never did. In journal order."""
        for entries in self._pending:
            for path, entry in entries.items():
                if entry.get("hash") == self.current_hash(path):
                    ledger[path] = entry
        self._pending = []

    def write(self, files: Mapping[str, str], revisions: Mapping[str, str] | None = None,
              cancelled: threading.Event | None = None,
              threads: Mapping[str, list[dict[str, str]]] | None = None) -> bool:
        """Write and record files in one step under the ledger lock: their hashes are journalled (synced)
        before the renames, so no death leaves a finished file without a record. False once cancelled."""
        with self._lock:
            if cancelled is not None and cancelled.is_set():
                return False
            ledger = self.ledger()
            # the writer cuts out configured secrets: the ledger records the bytes it will find
            files = {path: redact(text) for path, text in files.items()}
            intended = {path: digest(text.encode("utf-8")) for path, text in files.items()}
            entries = self._entries(list(files), revisions, intended, threads)
            self._pending = [entries]  # until every rename is done (an interrupt leaves it to _settle)
            append_journal(self.root / JOURNAL, entries)
            self._dirty = True
            self._moving(files)
            for path, text in files.items():
                write_if_changed(self.root / path, text)
                if self._known is not None:  # the bytes just written, not read back
                    self._known[path] = intended[path]
            ledger.update(entries)
            self._pending = []
            return True

    def cancel(self, cancelled: threading.Event) -> None:
        """Set ``cancelled`` under the ledger lock: no ``write`` starts after this returns."""
        with self._lock:
            cancelled.set()

    def record(self, paths: list[str]) -> None:
        """Record files as they are now, in the journal (hashes.json only at a checkpoint: a build stays linear)."""
        with self._lock:
            ledger = self.ledger()
            entries = self._entries(paths, None, {})
            if entries:
                append_journal(self.root / JOURNAL, entries)
                ledger.update(entries)
                self._dirty = True

    def _entries(self, paths: list[str], revisions: Mapping[str, str] | None,
                 intended: Mapping[str, str],
                 threads: Mapping[str, list[dict[str, str]]] | None = None) -> dict[str, Any]:
        """Each path's ledger entry: its hash (``intended``, about to be written) and its inputs'."""

        def hash_of(path: str) -> str | None:
            return intended[path] if path in intended else self.current_hash(path)

        entries: dict[str, Any] = {}
        for path in paths:
            entry: dict[str, Any] = {"hash": hash_of(path),
                                     "inputs": {i: hash_of(i) for i in self._made_from[path][0]}}
            made_with = self._sources(path)
            if made_with:
                entry["sources"] = made_with
            if revisions and path in revisions:
                note = revisions[path]
                entry["revision"] = {"note": note, "sha": note_sha(note)}
                if threads and path in threads:
                    entry["revision"]["thread"] = threads[path]
            entries[path] = entry
        return entries

    def checkpoint(self) -> None:
        """Write hashes.json from the ledger and drop the journal, if anything was recorded since."""
        with self._lock:
            if self._dirty or (self.root / JOURNAL).exists():
                self._write_ledger(self.ledger())

    def _sources(self, path: str) -> dict[str, str]:
        if self.sources is None or path not in self._made_from:
            return {}
        return self.sources.of(self._made_from[path][1])

    def _write_ledger(self, ledger: dict[str, Any]) -> None:
        with self._lock:
            built = self.sources.built() if self.sources is not None else None
            write_if_changed(self.root / HASHES, ledger_text(ledger, self._screened, built or self._built))
            (self.root / JOURNAL).unlink(missing_ok=True)
            self._ledger = ledger
            self._dirty = False

    def screened(self, brief: Brief) -> bool:
        """Whether ``brief`` passed input moderation before (its hash is in the ledger)."""
        self.ledger()
        return self._screened == brief_hash(brief)

    def mark_screened(self, brief: Brief) -> None:
        with self._lock:
            self.ledger()
            if self._screened != brief_hash(brief):
                self._screened = brief_hash(brief)
                self._write_ledger(dict(self.ledger()))

    def adopt(self) -> None:
        """Rebuild the ledger from the files on disk: every existing artefact current."""
        present = [p for p in artefact_paths(self.graph) if (self.root / p).is_file()]
        with self._lock:
            self._ledger, self._pending = {}, []
            self._write_ledger({})
            self.record(present)
            self.checkpoint()

    # -- statuses ----------------------------------------------------------

    def status(self, path: str) -> Status:
        """The artefact's status, and the inputs that changed since it was recorded."""
        own = self.current_hash(path)
        if own is None:
            return Status("missing", [])
        entry = self.ledger().get(path)
        if entry is None:
            return Status("edited", [])  # no record of writing it: written by someone else
        recorded = entry.get("inputs", {})
        inputs = self._made_from[path][0]
        changed = [i for i in inputs if recorded.get(i) != self.current_hash(i)]
        changed += [i for i in sorted(recorded) if i not in inputs]
        made_with = entry.get("sources")
        if isinstance(made_with, dict):  # a ledger written before sources were recorded judges files only
            now = self._sources(path)
            changed += [name for name in sorted(set(now) | set(made_with)) if now.get(name) != made_with.get(name)]
        if entry.get("hash") != own:
            return Status("edited", changed)
        return Status("stale", changed) if changed else Status("current", [])

    def statuses(self) -> dict[str, Status]:
        """Every artefact of the curriculum, then every orphaned file, by path."""
        found = {path: self.status(path) for path in artefact_paths(self.graph)}
        found.update({path: Status("orphaned", []) for path in self.orphans()})
        return found

    def orphans(self) -> list[str]:
        """Files under modules/ in no lesson of the curriculum (dot names skipped, links not followed), sorted."""
        known, found = set(self.graph), []
        for current, dirnames, filenames in os.walk(self.root / "modules"):  # none when it is not a directory
            dirnames[:] = [name for name in dirnames if not name.startswith(".")]
            base = Path(current).relative_to(self.root).as_posix()
            found += [f"{base}/{name}" for name in filenames if not name.startswith(".")]
        return sorted(path for path in found if path not in known)

    def retire(self, run_id: str) -> list[str]:
        """Move every orphan into .state/retired/<run_id>/ (never delete); returns them."""
        places = {path: retired_place(self.root, f"{run_id}/{path}") for path in self.orphans()}  # all, first
        for path, target in places.items():
            with self._lock, placed(self.root / path) as (src, old), placed(target) as (dst, new):
                self._moving([path])  # moved by directory, never through a link planted meanwhile
                os.replace(old, new, **at(src, "src_dir_fd"), **at(dst, "dst_dir_fd"))
        moved = list(places)
        for directory in sorted({(self.root / p).parent for p in moved}, key=lambda d: -len(d.parts)):
            while directory != self.root and directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()  # an empty module directory left behind, not a file
                directory = directory.parent
        if moved:
            with self._lock:
                self._write_ledger({p: entry for p, entry in self.ledger().items() if p not in moved})
        return moved

    def project_statuses(self, manifest: CourseManifest) -> bool:
        """Write course.yaml's ``artefacts`` map, a projection of the derived statuses (an ``edited`` file is
        current unless its inputs changed too)."""
        statuses = {path: self.status(path) for path in artefact_paths(self.graph)}
        projected = {path: ("stale" if why else "current") if state == "edited" else state
                     for path, (state, why) in statuses.items()}
        updated = manifest.model_copy(update={"artefacts": projected})
        return write_if_changed(self.root / "course.yaml", dump(updated))

    # -- gates -------------------------------------------------------------

    def covered(self, gate: str) -> list[str]:
        """The files a gate covers: the outputs of the phase it closes and of every earlier gate's."""
        phases = covered_phases(gate)
        return [path for path in self.graph if self.graph.nodes[path].get("phase") in phases]

    def gates(self) -> dict[str, Any]:
        return read_ledger(self.root / GATES_FILE, "gates")

    def approval(self, gate: str) -> tuple[bool, str]:
        """(whether the gate's approval holds, why not)."""
        entry = self.gates().get(gate)
        if entry is None:
            return False, f"the {gate} gate has not been answered"
        if not entry.get("approved"):
            return False, f"the {gate} gate was declined"
        moved = self._moved(entry, gate)
        return not moved, moved

    def _moved(self, entry: dict[str, Any], gate: str) -> str:
        """What changed in the gate's files since ``entry`` recorded their hashes ('' when nothing did)."""
        covered = entry.get("covered", {})
        if not isinstance(covered, dict) or sorted(covered) != sorted(self.covered(gate)):
            return f"the files under the {gate} gate changed (lessons added or removed)"
        moved = [p for p in self.covered(gate) if covered.get(p) != self.current_hash(p)]
        return f"{', '.join(moved)} changed since the {gate} gate was approved" if moved else ""

    def require(self, gates: Iterable[str], doing: str, fix: Callable[[str], str]) -> None:
        """Refuse ``doing`` unless every one of ``gates`` holds; ``fix(gate)``: what to run."""
        for gate in gates:
            holds, why = self.approval(gate)
            if not holds:
                raise PipelineError(f"{doing} needs the {gate} approval to hold: {why}; run {fix(gate)}")

    def standing_decline(self, gate: str) -> str | None:
        """The note of a decline nothing covered has changed since ('' without a note); else None."""
        entry = self.gates().get(gate)
        if entry is None or entry.get("approved") or self._moved(entry, gate):
            return None
        return str(entry.get("note") or "")

    def unready(self, gate: str) -> list[str]:
        """Covered files a person cannot sign yet: missing or stale (an edited one can be signed)."""
        statuses = {path: self.status(path) for path in self.covered(gate)}
        return [f"{path} ({state}{' <- ' + ', '.join(why) if why else ''})" for path, (state, why) in statuses.items()
                if state == "missing" or why]

    def answer(self, gate: str, *, approved: bool, by: str, note: str = "",
               accept_edits: bool = True) -> dict[str, str]:
        """Record an answer with the hash of every covered file; a person's approval records edited files as
        current, ``--yes`` (``accept_edits=False``) does not. Returns the files whose bytes were not kept."""
        gates = self.gates()
        covered = {p: self.current_hash(p) for p in self.covered(gate)}
        gates[gate] = {"approved": approved, "at": now(self.epoch), "by": by, "note": note, "covered": covered}
        # The bytes too, before the ledger names them, so the review page can diff a later
        # revision against them; a file that cannot be kept is named in the answer.
        not_kept = keep_answered(self.root, covered)
        if not_kept:
            gates[gate]["not_kept"] = not_kept
        if approved and accept_edits:
            edited = [p for p in self.covered(gate) if self.status(p).state == "edited"]
            if edited:
                self.record(edited)
                self.checkpoint()
        document = {"version": 1, "gates": dict(sorted(gates.items()))}
        write_if_changed(self.root / GATES_FILE, json.dumps(document, indent=2, sort_keys=True) + "\n")
        prune_answered(self.root, gates)
        return not_kept


def plans_on_disk(root: Path, curriculum: Curriculum) -> dict[str, LessonPlan]:
    layout = CourseLayout(curriculum)
    plans: dict[str, LessonPlan] = {}
    for place in layout.lessons():
        path = root / layout.plan_path(place)
        if path.is_file():
            plans[place.id] = load(path, LessonPlan)
    return plans


def load_manifest(root: Path) -> CourseManifest:
    return load(root / "course.yaml", CourseManifest)


PROPOSALS = f"{STATE}/proposals"
THREAD_NOTES = 6
"""The most earlier notes a revision is given: a few rounds of back and forth."""
THREAD_CHARS = 3000
"""The most characters of earlier notes a revision is given (the oldest go first)."""
THREAD = "reviewer_thread"
"""The request input that carries the thread, before the new note."""


def note_sha(note: str) -> str:
    return digest(note.encode("utf-8"))


class ThreadNote(BaseModel):
    """One earlier note on a file, and what became of its revision."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    note: str
    sha: str
    outcome: Literal["kept", "set aside"]


class Proposal(BaseModel):
    """A shown revision not written: its text, its note, the hash it was made against, notes set aside."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    base: str | None
    note: str
    text: str
    set_aside: tuple[ThreadNote, ...] = ()

    def replaced(self) -> list[ThreadNote]:
        """The notes set aside once a new revision replaces this proposal: its own, last."""
        return [*self.set_aside, ThreadNote(note=self.note, sha=note_sha(self.note), outcome="set aside")]


def bounded(thread: list[ThreadNote]) -> list[ThreadNote]:
    """The last ``THREAD_NOTES`` notes, fewer if their text passes ``THREAD_CHARS``."""
    kept: list[ThreadNote] = []
    used = 0
    for item in reversed(thread[-THREAD_NOTES:]):
        used += len(item.note)
        if kept and used > THREAD_CHARS:
            break
        kept.append(item)
    return kept[::-1]


def proposal_file(root: Path, path: str) -> Path:
    # one flat directory, the course path quoted: no course path can name a place outside it
    return root / PROPOSALS / f"{quote(path, safe='')}.json"


def _unlinked_proposal_file(root: Path, path: str) -> Path:
    """``proposal_file``, refused when it or its folders are a link: nothing is written, or read, through one."""
    file = proposal_file(root, path)
    for place in (root / STATE, root / PROPOSALS, file):
        if place.is_symlink():
            raise EnvironmentProblem(f"{place} is a symbolic link; stay keeps its proposals in the course's own "
                                     f"{PROPOSALS}/: remove the link and run the command again")
    return file


def read_proposal(root: Path, path: str) -> Proposal | None:
    file = _unlinked_proposal_file(root, path)
    if not file.exists():
        return None
    try:
        return Proposal.model_validate(load_stored_json(file))
    except (Damaged, OSError, ValidationError):
        again = course_hint(root.parent, "revise", root.name, path, "--note", "...", "--show")
        raise EnvironmentProblem(f"{file} is damaged; delete it and show a new proposal with {again}",
                                 path=file) from None


def write_proposal(root: Path, proposal: Proposal) -> Path:
    file = _unlinked_proposal_file(root, proposal.path)
    file.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(file, proposal.model_dump_json(indent=2) + "\n")
    return file


def drop_proposal(root: Path, path: str) -> None:
    _unlinked_proposal_file(root, path).unlink(missing_ok=True)


def open_proposal(course: CourseState, path: str) -> Proposal | None:
    """The proposal for ``path`` if it was made against the file as it is now, else None."""
    proposal = read_proposal(course.root, path)
    if proposal is None or proposal.base != course.current_hash(path):
        return None
    return proposal


def kept_notes(course: CourseState, path: str) -> list[ThreadNote]:
    """The thread's kept notes: the ledger entry's, while its hash is the file's and no approval since."""
    entry = course.ledger().get(path, {})
    revision = entry.get("revision")
    current = course.current_hash(path)
    if not isinstance(revision, dict) or entry.get("hash") != current:
        return []
    if any(answer.get("approved") and answer.get("covered", {}).get(path) == current
           for answer in course.gates().values() if isinstance(answer.get("covered"), dict)):
        return []
    recorded: Any = revision.get("thread")
    if not isinstance(recorded, list):  # a revision recorded before threads: its one note
        recorded = [{"note": revision.get("note", ""), "sha": revision.get("sha", ""), "outcome": "kept"}]
    try:
        return [ThreadNote.model_validate(item) for item in recorded]
    except ValidationError:
        return []


def thread_so_far(course: CourseState, path: str) -> list[ThreadNote]:
    """What a new revision of ``path`` is given: kept notes, then the open proposal's notes, bounded."""
    thread = kept_notes(course, path)
    proposal = open_proposal(course, path)
    if proposal is not None:
        thread += proposal.replaced()
    return bounded(thread)


def recorded_thread(earlier: list[ThreadNote], note: str) -> list[dict[str, str]]:
    """The ledger's ``revision.thread`` for a file written with ``note`` after ``earlier``."""
    return [t.model_dump() for t in bounded([*earlier, ThreadNote(note=note, sha=note_sha(note), outcome="kept")])]


def thread_text(thread: list[ThreadNote]) -> str:
    lines = [f"{n}. ({item.outcome}) {' '.join(item.note.split())}" for n, item in enumerate(thread, 1)]
    return ("Earlier notes on this file, oldest first, and whether the revision each asked for was kept or set "
            "aside; the new note below is the one to act on:\n" + "\n".join(lines))


def diff_of(path: str, before: str, after: str) -> str:
    """The unified diff of a proposal against the file (file names a/ and b/)."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{path}", f"b/{path}"))


def stored_text(file: Path) -> str | None:
    """A file's text through the bounded reader; None when it cannot be read (a link, a special file)."""
    try:
        return read_stored(file).decode("utf-8", "replace")
    except (Damaged, OSError):
        return None


def current_text(course: CourseState, path: str) -> str:
    """The course file as it is now ('' when it cannot be read)."""
    return stored_text(course.root / path) or ""


def first_line(text: str, limit: int = LINE_CHARS) -> str:
    """The first line of ``text`` that holds anything, bounded as ``one_line``."""
    return one_line(next((line for line in text.splitlines() if line.strip()), ""), limit)


def not_kept(entry: object, files: Collection[str]) -> tuple[tuple[str, str], ...]:
    """An answer's ``not_kept`` as (file, why) for each of ``files``; nothing else it holds is shown."""
    recorded = entry.get("not_kept") if isinstance(entry, dict) else None
    if not isinstance(recorded, dict):
        return ()
    return tuple((path, one_line(why)) for path, why in sorted(recorded.items(), key=lambda item: str(item[0]))
                 if path in files and isinstance(why, str))


@dataclass(frozen=True)
class Waiting:
    """A proposal waiting in ``.state/proposals/`` for one file of the course."""

    path: str
    note: str = ""
    """The first line of the note it answers, bounded."""
    stale: bool = False
    """The file changed since the proposal was shown: ``--keep`` refuses it."""
    problem: str = ""
    """Why it cannot be read (damaged, a link); then nothing else is known."""
    proposed: str | None = field(default=None, repr=False)
    """The proposal's text, when it can be kept."""
    current: str | None = field(default=None, repr=False)
    """The file's text now, when the proposal can be kept (what it would replace)."""

    @property
    def anew(self) -> bool:
        """Only a new proposal goes on from here (stale, or its file unusable; not a refused folder)."""
        return self.stale or (bool(self.problem) and self.path != PROPOSALS)

    def words(self, slug: str) -> tuple[str, ...]:
        """The command that goes on from here: keep it, or show a new one (``anew``)."""
        if self.anew:
            return "revise", slug, self.path, "--note", repr("..."), "--show"
        return "revise", slug, self.path, "--keep"

    def line(self, slug: str, hint: Callable[..., str]) -> str:
        """What ``stay status`` says of it, the command in the caller's form (``hint``)."""
        if self.problem:
            if self.anew:
                return f"{self.path}: {self.problem}, then show a new one with {hint(*self.words(slug))}"
            return f"{self.path}: {self.problem}"
        said = f"{self.path}: shown with the note {self.note!r}"
        if self.stale:
            return f"{said}, but stale (the file changed since): show a new one with {hint(*self.words(slug))}"
        return f"{said}; keep it with {hint(*self.words(slug))}"


def waiting_proposals(state: CourseState) -> tuple[Waiting, ...]:
    """Every proposal waiting for a course file, in graph order; no other file there is read."""
    root = state.root
    for place in (root / STATE, root / PROPOSALS):
        if place.is_symlink():
            return (Waiting(PROPOSALS, problem=f"{place.relative_to(root).as_posix()} is a symbolic link: stay "
                                               f"reads no proposal through it; remove the link"),)
    if not (root / PROPOSALS).is_dir():
        return ()
    found = []
    for path in artefact_paths(state.graph):
        file = proposal_file(root, path)
        if not (file.exists() or file.is_symlink()):
            continue
        try:
            proposal = read_proposal(root, path)
        except EnvironmentProblem:  # its own words carry a path and a hint too long for a line
            found.append(Waiting(path, problem=f"{file.relative_to(root).as_posix()} is damaged: delete it"))
            continue
        if proposal is None:
            continue
        if proposal.path != path:
            found.append(Waiting(path, problem=f"{file.relative_to(root).as_posix()} is for another file: delete it"))
        elif proposal.base != state.current_hash(path):
            found.append(Waiting(path, first_line(proposal.note), stale=True))
        else:
            found.append(Waiting(path, first_line(proposal.note), proposed=proposal.text,
                                 current=current_text(state, path)))
    return tuple(found)
