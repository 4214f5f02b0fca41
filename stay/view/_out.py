"""The site directory: what ``stay view`` may overwrite and delete there, and nothing else.

``.stay-site`` records the sha256 of every file a render wrote. It is read as untrusted
input (anyone can plant one): a name in it counts only when it is a plain file name in
the site directory, and a file counts as the viewer's own only while its bytes still
hash to what the marker recorded. A person's file (or a page they edited, or a symlink)
is never overwritten or deleted: the render refuses, in one line, before writing anything.

The marker is written before the pages, listing the hash each page is about to get, so a
render interrupted at any point leaves a directory the next render recognises as its own:
every file in it either still holds its recorded bytes or already holds the new ones.

A site is flat but for one folder, ``assets/``: the course's data files, at the path a
lesson names them by (``assets/orders.csv``), apart from the viewer's own files (the
pages, ``style.css`` and the scripts, beside them). A file in it is looked at, written or
removed only while ``assets`` is a real folder; a link or a file there is refused, like
any file the viewer did not write, so nothing is ever written or removed through a link.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from stay._words import command_name, option_name
from stay.artefacts import TEMPORARY, write_text_atomic
from stay.errors import UsageError

MARKER = ".stay-site"
"""The viewer's record of the files it wrote, by name, with their sha256."""
FOLDER = "assets"
"""The one folder of a site: the course's data files (``assets/<name>``), as in the course."""
MARKER_MAX_BYTES = 16 * 1024 * 1024
"""A marker is about 100 bytes a page; a larger one was not written by the viewer."""
_NAME_MAX = 255  # the longest file name POSIX file systems take
_CHUNK = 1024 * 1024

Recorded = dict[str, frozenset[str]]
"""file name -> every sha256 the viewer recorded for it (old and about-to-be-written)."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def plain_name(name: object) -> bool:
    """Whether ``name`` (read from a marker) names a file directly in the site directory."""
    return (isinstance(name, str) and 0 < len(name) <= _NAME_MAX and name not in (".", "..", MARKER)
            and not any(c in name for c in "/\\\x00") and all(c.isprintable() for c in name))


def site_name(name: object) -> bool:
    """Whether ``name`` (read from a marker) names a file a render may write: a plain name in
    the site directory, or one in its :data:`FOLDER` (``assets/orders.csv``)."""
    if isinstance(name, str) and name.startswith(FOLDER + "/"):
        return plain_name(name[len(FOLDER) + 1:])
    return plain_name(name)


def folder_state(out: Path) -> str:
    """What ``out``/:data:`FOLDER` is, never through a link: "absent", "folder", or "other"
    (a link, a file, a device: never written or read through)."""
    try:
        mode = (out / FOLDER).lstat().st_mode
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "other"
    return "folder" if stat.S_ISDIR(mode) else "other"


def _reachable(out: Path, name: str) -> bool:
    """Whether ``out``/``name`` can be looked at without following a link: a name in the
    site directory, or one in a :data:`FOLDER` that is a real folder."""
    return "/" not in name or folder_state(out) == "folder"


def _sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def file_digest(path: Path) -> str | None:
    """The sha256 of a regular file at ``path`` (never through a symlink); None for anything
    else: missing, a symlink, a directory, a FIFO, unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        hashed = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            hashed.update(chunk)
        return hashed.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def read_marker(out: Path, given: str | os.PathLike[str]) -> Recorded:
    """What an earlier render recorded in ``out``. A directory without a marker must be empty
    (or new); a marker that cannot be read owns nothing."""
    if not out.is_dir():
        return {}
    named = f"{option_name('--out')} {given}"  # as the caller gave it: the flag, or out_dir from Python
    marker = out / MARKER
    try:
        mode = marker.lstat().st_mode
    except FileNotFoundError:
        if any(out.iterdir()):
            raise UsageError(f"{named} is not empty and was not written by {command_name('view')}; choose an "
                             "empty or new directory") from None
        return {}
    if not stat.S_ISREG(mode):
        raise UsageError(f"{named}: {MARKER} is not a file {command_name('view')} wrote (a link, a directory "
                         "or a device); remove it or choose another directory")
    try:
        fd = os.open(marker, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(MARKER_MAX_BYTES + 1)
        data = json.loads(raw) if len(raw) <= MARKER_MAX_BYTES else None
    except (OSError, ValueError, RecursionError):
        return {}
    return _recorded(data)


def _recorded(data: object) -> Recorded:
    """The names and hashes in a marker's data that are well formed; anything else (the
    list of names an older viewer wrote, which has no hashes) owns nothing."""
    if not isinstance(data, dict):
        return {}
    found: dict[str, set[str]] = {}
    for key in ("files", "writing"):
        table = data.get(key)
        if not isinstance(table, dict):
            continue
        for name, sha in table.items():
            if site_name(name) and _sha256(sha):
                found.setdefault(name, set()).add(sha)
    return {name: frozenset(hashes) for name, hashes in found.items()}


def owned_now(out: Path, recorded: Recorded) -> dict[str, str]:
    """name -> current sha256, for the recorded files whose bytes are still the viewer's."""
    owned = {}
    for name, hashes in recorded.items():
        sha = file_digest(out / name) if _reachable(out, name) else None
        if sha is not None and sha in hashes:
            owned[name] = sha
    return owned


def conflicts(out: Path, site: Mapping[str, bytes], owned: Mapping[str, str]) -> list[str]:
    """The names the site would overwrite that are not the viewer's: a person's file, a page
    edited since, a symlink, a directory; and :data:`FOLDER` when the site has data files
    and it is a link or a file. A file already holding the new bytes is no conflict."""
    found = []
    if any("/" in name for name in site) and folder_state(out) == "other":
        found.append(FOLDER)
    for name, data in site.items():
        path = out / name
        if name in owned or not _reachable(out, name) or not os.path.lexists(path):
            continue
        if file_digest(path) != digest(data):
            found.append(name)
    return found


def sweep_temporaries(out: Path, names: set[str]) -> None:
    """Remove what a killed render left half-written: only regular files named exactly as
    write_text_atomic names the temporary of one of ``names`` (the site's and the marker's),
    so a person's own ``*.tmp`` is never touched; in :data:`FOLDER` too, while it is a real folder."""
    if not out.is_dir():
        return
    places = [(out, {name for name in names if "/" not in name})]
    if folder_state(out) == "folder":
        places.append((out / FOLDER, {name.partition("/")[2] for name in names if "/" in name}))
    for place, named in places:
        for entry in os.scandir(place):
            match = TEMPORARY.fullmatch(entry.name)  # the one form write_text_atomic gives a temporary
            if match and match.group("name") in named and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)


def settle_folder(out: Path, site: Mapping[str, bytes]) -> None:
    """Make :data:`FOLDER` when ``site`` has data files; when it has none, remove a real
    folder left empty (one still holding a file, a person's or one about to go, stays)."""
    if any("/" in name for name in site):
        (out / FOLDER).mkdir(exist_ok=True)  # a link or a file there was refused before (conflicts)
    elif folder_state(out) == "folder":
        with contextlib.suppress(OSError):  # not empty
            (out / FOLDER).rmdir()


def write_marker(out: Path, files: Mapping[str, str], writing: Mapping[str, str] | None = None) -> None:
    """Record ``files`` (name -> sha256 on disk) and, during a render, ``writing`` (name ->
    the sha256 about to be written)."""
    data: dict[str, dict[str, str]] = {"files": dict(sorted(files.items()))}
    if writing is not None:
        data["writing"] = dict(sorted(writing.items()))
    write_text_atomic(out / MARKER, json.dumps(data, indent=1) + "\n")
