"""A course directory read as artefacts: the one reader the pipeline, the scorers and the viewer
share. ``load`` raises (the pipeline stops), ``read`` records why (the viewer shows a damaged course)."""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar, cast

from pydantic import BaseModel

from stay._bounds import MAX_FILE_BYTES, TooLarge, read_bounded
from stay.artefacts._io import artefact_type, parse_bytes, read_bytes
from stay.artefacts._models import Artefact, ArtefactLoadError, Module

M = TypeVar("M", bound=BaseModel)


def module_dir(module: Module) -> str:
    """``modules/<id>-<slug>``: the Module type has checked both before this joins them."""
    return f"modules/{module.id}-{module.slug}"


def lesson_file(module: Module, lesson_id: str, kind: type[Artefact]) -> str:
    pattern = kind.FILE
    if pattern is None or "{lesson}" not in pattern:
        raise ArtefactLoadError(f"{kind.__name__} is not a kind of lesson file; see course-format.md")
    return f"{module_dir(module)}/{pattern.format(lesson=lesson_id)}"


@dataclass(frozen=True)
class Loaded(Generic[M]):
    path: str  # relative to the course directory, '/'-separated
    model: M | None = None
    problem: str | None = None
    missing: bool = False

    @property
    def ok(self) -> bool:
        return self.model is not None


class CourseReader:
    """Each file parsed once per distinct bytes, read every time: a cache keyed on time and size
    would miss a same-size rewrite within one clock tick. Safe to share between threads."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._parsed: dict[str, tuple[bytes, BaseModel]] = {}
        self._lock = threading.Lock()

    def exists(self, path: str) -> bool:
        return (self.root / path).is_file()

    def load(self, path: str, kind: type[M] | None = None) -> M:
        file = self.root / path
        return self._parse(path, kind, read_bytes(file), os.fspath(file))

    def maybe(self, path: str, kind: type[M]) -> M | None:
        return self.load(path, kind) if self.exists(path) else None

    def read(self, path: str, kind: type[M]) -> Loaded[M]:
        """Never raises for anything the file holds; follows no link out of the course."""
        file = self.root / path
        try:
            if not file.resolve().is_relative_to(self.root.resolve()):
                return Loaded(path, problem="a link that leaves the course directory; not followed")
            if not file.exists():
                return Loaded(path, problem="missing", missing=True)
            if not file.is_file():
                return Loaded(path, problem="not a regular file")
            data = read_bounded(file)
        except TooLarge:
            return Loaded(path, problem=f"too large to show (over {MAX_FILE_BYTES // 2**20} MB, the limit on a "
                                        "course file)")
        except OSError as exc:
            return Loaded(path, problem=f"cannot be read ({exc.strerror or type(exc).__name__})")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return Loaded(path, problem="not UTF-8 text")
        try:
            return Loaded(path, model=self._parse(path, kind, data, path))
        except ArtefactLoadError as exc:
            return Loaded(path, problem=str(exc))
        except RecursionError:
            return Loaded(path, problem=f"{path}: nested too deeply to read")

    def _parse(self, path: str, kind: type[M] | None, data: bytes, where: str) -> M:
        chosen = kind if kind is not None else artefact_type(path)
        with self._lock:
            cached = self._parsed.get(path)
        if cached is not None and cached[0] == data and isinstance(cached[1], chosen):
            return cast(M, cached[1])
        parsed = parse_bytes(chosen, data, where)
        with self._lock:
            self._parsed[path] = (data, parsed)
        return cast(M, parsed)

    def sha256(self) -> str:
        """One hash of every course file, hidden directories left out."""
        digest = hashlib.sha256()
        for file in sorted(p for p in self.root.rglob("*") if p.is_file()):
            relative = file.relative_to(self.root)
            if any(part.startswith(".") for part in relative.parts):
                continue
            try:
                data = read_bytes(file)
            except OSError as exc:
                raise ArtefactLoadError(f"{file}: cannot be read ({exc.strerror or type(exc).__name__})") from None
            digest.update(f"{relative.as_posix()}\0{hashlib.sha256(data).hexdigest()}\n".encode())
        return digest.hexdigest()
