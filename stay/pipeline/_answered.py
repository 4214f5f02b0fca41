"""The bytes of every file a gate covered at its latest answer, kept so a reviewer can see
what changed since as a diff (``stay view``'s review page), not only that it changed.

The ledger (``.state/gates.json``) records each covered file's digest at an answer; this
store keeps the bytes under that digest, ``.state/answered/<digest>``, so a file that
several answers covered with the same bytes is kept once. It holds only what the latest
answer of each gate references: every answer prunes the rest, so it does not grow with
the course's history. It lives in ``.state/``, which is committed with the course (``stay
init``'s .gitignore keeps it), so a reviewer on another checkout sees the same diff.

A blob is used only when its bytes have the digest it is named by: a damaged or planted
blob is ignored, never shown as history.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from stay._bounds import MAX_FILE_BYTES, Damaged, read_stored
from stay.artefacts import write_bytes_atomic
from stay.pipeline._ledger import STATE, digest

ANSWERED = f"{STATE}/answered"
_NAME = re.compile(r"[0-9a-f]{16}")
"""A blob's name: ``_ledger.digest``'s form (16 hex digits). Anything else in the ledger
(a hand-edited digest such as ``../x``) never becomes a path."""


def _store(root: Path) -> Path | None:
    """The store's directory, or None when it, or ``.state``, is a link or lies outside
    the course: blobs are written and read only inside the course, never through a link."""
    store = root / ANSWERED
    for part in (root / STATE, store):
        if part.is_symlink() or (part.exists() and not part.is_dir()):
            return None
    if store.exists() and not store.resolve().is_relative_to(root.resolve()):
        return None
    return store


def keep(root: Path, covered: Mapping[str, str | None]) -> dict[str, str]:
    """Keep the bytes of each covered file under its recorded digest. Returns the files
    not kept, each with why (a file over the bounded reader's limit, a link, bytes that
    changed since they were hashed); the caller records that in the ledger."""
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
        if kept(root, wanted) is None:
            write_bytes_atomic(store / wanted, data)  # a whole blob or none; a link at the name is replaced
    return refused


def kept(root: Path, wanted: str) -> bytes | None:
    """The kept bytes with digest ``wanted``, or None: not kept, or damaged."""
    store = _store(root)
    if store is None or not _NAME.fullmatch(wanted):
        return None
    try:
        data = read_stored(store / wanted, MAX_FILE_BYTES)
    except (Damaged, OSError):
        return None
    return data if digest(data) == wanted else None


def prune(root: Path, referenced: Iterable[str]) -> None:
    """Remove every blob no answer references (and leftovers of an interrupted write)."""
    store = _store(root)
    if store is None or not store.is_dir():
        return
    wanted = set(referenced)
    for entry in sorted(store.iterdir()):
        if entry.name not in wanted and (entry.is_file() or entry.is_symlink()):
            entry.unlink(missing_ok=True)


def referenced(gates: Mapping[str, object]) -> set[str]:
    """Every digest the ledger's answers record, whatever the gate."""
    found: set[str] = set()
    for entry in gates.values():
        covered = entry.get("covered") if isinstance(entry, dict) else None
        if isinstance(covered, dict):
            found.update(value for value in covered.values() if isinstance(value, str))
    return found

