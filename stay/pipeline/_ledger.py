"""The ledger: what each file was built from (hashes), the answered gates, and the run log."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from stay._bounds import MAX_FILE_BYTES, Damaged, load_stored_json, read_stored
from stay._display import terminal_text
from stay._paths import at, placed
from stay._secrets import redact_bytes
from stay._words import damaged_ledger
from stay.artefacts import Brief, dump_yaml, to_data, write_bytes_atomic, write_text_atomic
from stay.errors import EnvironmentProblem
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


def file_digest(path: Path) -> str:
    """``digest`` of a file's bytes, read in blocks: any file a person put there costs a block of memory."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()[:16]


@dataclass
class FileHashes:
    """A course's files' hashes: each ask reads the file until ``once``, then at most once, updated by the
    owner's changes (``wrote``, ``moving``). Only for the course's one writer (it holds the course lock)."""

    root: Path
    _known: dict[str, str | None] | None = None
    """path -> its file's hash (None: no file); None: nothing is remembered."""

    def once(self) -> None:
        if self._known is None:
            self._known = {}

    def of(self, path: str) -> str | None:
        if self._known is None:
            return self._read(path)
        if path not in self._known:
            self._known[path] = self._read(path)
        return self._known[path]

    def moving(self, paths: Iterable[str]) -> None:
        """``paths`` are about to change: the next ask reads them (an interrupt leaves nothing stale)."""
        if self._known is not None:
            for path in paths:
                self._known.pop(path, None)

    def wrote(self, path: str, hashed: str) -> None:
        """``path`` now holds bytes whose ``digest`` is ``hashed`` (not read back)."""
        if self._known is not None:
            self._known[path] = hashed

    def _read(self, path: str) -> str | None:
        file = self.root / path
        return file_digest(file) if file.is_file() else None


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

    def of(self, stage_name: str | None) -> dict[str, str]:
        """source name -> its digest (the model: its id), for one stage; {} for none."""
        stage = next((s for s in self.stages if s.name == stage_name), None)
        if stage is None:
            return {}
        if stage.name not in self._known:  # every status asks: hash each stage's sources once
            self._known[stage.name] = self._of(stage)
        return dict(self._known[stage.name])

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


def write_json(path: Path, document: Any) -> None:
    write_if_changed(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


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


def read_document(path: Path) -> dict[str, Any]:
    """hashes.json as a mapping ({} when absent); a damaged one names ``stay adopt``."""
    document = _ledger_document(path)
    _section(document, path, "artefacts")  # refuses a damaged file, in one line
    return document if isinstance(document, dict) else {}


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


def read_ledger(path: Path, section: str) -> dict[str, Any]:
    """``section`` of a ledger file ({} when absent); a damaged one names its way out, ``stay adopt``."""
    return _section(_ledger_document(path), path, section)


def _ledger_document(path: Path) -> Any:
    """A ledger file's JSON, read bounded (a regular file, at most 16 MB, shallow); absent is {}."""
    if not os.path.lexists(path):
        return {}
    try:
        return load_stored_json(path)
    except (Damaged, OSError) as exc:
        why = exc.reason if isinstance(exc, Damaged) else type(exc).__name__
        raise EnvironmentProblem(damaged_ledger(path, why), path=path) from None


def _section(document: Any, path: Path, section: str) -> dict[str, Any]:
    part = document.get(section, {}) if isinstance(document, dict) else None
    if not isinstance(part, dict) or not all(isinstance(v, dict) for v in part.values()):
        raise EnvironmentProblem(damaged_ledger(path, f"'{section}' is not a mapping of entries"),
                                 path=path, field=section)
    return part


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


def prune_answered(root: Path, referenced: Iterable[str]) -> None:
    """Remove every blob no answer references (and leftovers of an interrupted write)."""
    store = _store(root)
    if store is None or not store.is_dir():
        return
    wanted = set(referenced)
    for entry in sorted(store.iterdir()):
        if entry.name not in wanted and (entry.is_file() or entry.is_symlink()):
            entry.unlink(missing_ok=True)


def answered_referenced(gates: Mapping[str, object]) -> set[str]:
    """Every digest the ledger's answers record, whatever the gate."""
    found: set[str] = set()
    for entry in gates.values():
        covered = entry.get("covered") if isinstance(entry, dict) else None
        if isinstance(covered, dict):
            found.update(value for value in covered.values() if isinstance(value, str))
    return found


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
