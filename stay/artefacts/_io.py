"""The exact on-disk form of every artefact, atomic writes, and ``CourseReader``. Dumping is
deterministic, so a regenerated artefact that says the same thing is byte-identical and stops a
staleness cascade."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import yaml
from pydantic import BaseModel

from stay._bounds import MAX_DEPTH, MAX_FILE_BYTES, TooLarge, read_bounded
from stay._paths import at, parent_of, recheck
from stay._secrets import redact_bytes
from stay.artefacts._models import (
    ASSET_PATTERN,
    FILES,
    Artefact,
    ArtefactLoadError,
    AssetText,
    LessonContent,
    Module,
    YamlFault,
    guarded_yaml,
    validate_as,
)
from stay.errors import ArtefactError

M = TypeVar("M", bound=BaseModel)


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


# Line breaks YAML folds on reading unless they are escaped in a double-quoted scalar.
_FOLDED_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style: str | None = None
    if any(c in value for c in _FOLDED_BREAKS):
        style = '"'
    elif "\n" in value:
        style = "|"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """The pure-Python emitter (libyaml's cannot indent a sequence under its key), never wrapping."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=sys.maxsize)


def to_data(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def dump(model: BaseModel) -> str:
    if isinstance(model, AssetText):
        return model.text
    if isinstance(model, LessonContent):
        front = {"lesson": model.lesson, "title": model.title, **(model.model_extra or {})}
        return "---\n" + dump_yaml(front) + "---\n" + model.body
    return dump_yaml(to_data(model))


_FRONT_MATTER = re.compile(r"---\n(.*?\n)?---(?:\n|$)", re.DOTALL)


def parse_markdown(text: str, where: str = "lesson") -> LessonContent:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    match = _FRONT_MATTER.match(text)
    if match is None:
        raise ArtefactLoadError(
            f"{where}: front matter is missing; start the file with a '---' line, "
            "'lesson:' and 'title:', and a closing '---' line")
    front = _safe_load(match.group(1) or "", where)
    if not isinstance(front, dict):
        raise ArtefactLoadError(f"{where}: front matter must be a mapping with lesson and title")
    return validate_as(LessonContent, {**front, "body": text[match.end():]}, where)


def _safe_load(text: str, where: str) -> Any:
    def refuse(fault: YamlFault, line: int | None) -> ArtefactLoadError:
        if fault == "aliases":
            return ArtefactLoadError(f"{where}: uses YAML anchors or aliases (& and *); write each value out in full")
        if fault == "deep":
            return ArtefactLoadError(f"{where}: nests deeper than {MAX_DEPTH} levels, deeper than any artefact; "
                                     "fix the file, or regenerate it")
        at = f" at line {line}" if line is not None else ""
        return ArtefactLoadError(f"{where}: not valid YAML{at}; fix the syntax")

    return guarded_yaml(text, refuse)


def parse(model: type[M], text: str, where: str = "artefact") -> M:
    if model is LessonContent:
        return parse_markdown(text, where)  # type: ignore[return-value]
    if model is AssetText:
        return AssetText(text=text)  # type: ignore[return-value]
    return validate_as(model, _safe_load(text, where), where)


def artefact_type(path: str | os.PathLike[str]) -> type[Artefact]:
    name = Path(path).name
    if ASSET_PATTERN.fullmatch(f"{Path(path).parent.name}/{name}"):
        return AssetText  # a data file: its text, as it is
    # a lesson's file by what follows {lesson}, and the folder before it (.review/) if its FILE names one
    folder = f"{Path(path).parent.name}/"
    lesson_files = [(pattern.partition("{lesson}"), model) for pattern, model in FILES.items() if "{lesson}" in pattern]
    for (before, _, suffix), model in sorted(lesson_files, key=lambda row: -len(row[0][2])):  # .plan.yaml first
        if name.endswith(suffix) and before in ("", folder):
            return model
    top = FILES.get(name)
    if top is None or "{lesson}" in name:
        raise ArtefactLoadError(f"{path}: not a course artefact; see course-format.md for names", path=path)
    return top


def load(path: str | os.PathLike[str], model: type[M] | None = None) -> M:
    chosen = model if model is not None else artefact_type(path)
    return parse_bytes(chosen, read_bytes(path), os.fspath(path))  # type: ignore[return-value]


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    try:
        return read_bounded(path)
    except TooLarge as exc:
        raise ArtefactLoadError(str(exc), path=path) from None
    except FileNotFoundError:
        raise ArtefactLoadError(f"{os.fspath(path)}: file not found", path=path) from None


def parse_bytes(model: type[M], data: bytes, where: str) -> M:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ArtefactLoadError(f"{where}: not UTF-8; save the file as UTF-8", path=where) from None
    try:
        return parse(model, text, where)
    except ArtefactError as exc:  # parse's ``where`` may be a label; here it is the file
        exc.path = exc.path or where
        raise


TEMPORARY = re.compile(r"\.(?P<name>.+)\.stay-[0-9a-f]{16}\.tmp")
"""Every temporary stay makes: the sweep after a killed run removes these, never a person's ``*.tmp``."""


def temporary_name(name: str) -> str:
    return f".{name}.stay-{secrets.token_hex(8)}.tmp"


def _create_beside(target: Path, parent: int | None) -> tuple[int, str]:
    """Mode 0666 less the umask (mkstemp's 0600 would hide a course file from a group)."""
    while True:
        name = temporary_name(target.name)
        temp = name if parent is not None else os.fspath(target.parent / name)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666, **at(parent, "dir_fd"))
            return fd, temp
        except FileExistsError:
            continue  # 64 random bits met an existing name: draw again


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """A whole file or nothing. The rename replaces a planted link rather than writing through it,
    and the directory is walked to without following one (``stay._paths``). Every write comes
    through here or ``create_text_atomic``: where a configured secret is cut out by value."""
    target = Path(path)
    parent = parent_of(target)
    try:
        temp = _filled_beside(target, redact_bytes(data), parent)
        try:
            recheck(target)
            os.replace(temp, target.name if parent is not None else target, **at(parent, "src_dir_fd", "dst_dir_fd"))
        except BaseException:
            _remove(temp, parent)
            raise
    finally:
        if parent is not None:
            os.close(parent)


_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}  # no hard links here (vfat: EPERM)


def create_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """FileExistsError when the file exists, even if made meanwhile: a hard link, unlike a rename,
    refuses a name that is taken."""
    target = Path(path)
    parent = parent_of(target)
    name = target.name if parent is not None else os.fspath(target)
    try:
        temp = _filled_beside(target, redact_bytes(text.encode("utf-8")), parent)
        try:
            recheck(target)
            try:
                os.link(temp, name, **at(parent, "src_dir_fd", "dst_dir_fd"))
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise  # the name is taken (FileExistsError), the disk is full, ...
                # no hard links here (FAT, some network shares): claim the name with an empty file
                # (refused when it is taken), then rename the whole text over that claim
                os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666, **at(parent, "dir_fd")))
                os.replace(temp, name, **at(parent, "src_dir_fd", "dst_dir_fd"))
        finally:
            _remove(temp, parent)
    finally:
        if parent is not None:
            os.close(parent)


def _remove(temp: str, parent: int | None) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp, **at(parent, "dir_fd"))


def _filled_beside(target: Path, data: bytes, parent: int | None) -> str:
    """Synced to disk, so the name it is given next never shows fewer bytes after a power cut."""
    if parent is None:  # a walked directory was made on the way
        target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = _create_beside(target, parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _remove(temp, parent)
        raise
    return temp


def write(path: str | os.PathLike[str], model: BaseModel) -> None:
    write_text_atomic(path, dump(model))


# -- a course directory read as artefacts: the one reader the pipeline, the scorers and the viewer
# share. ``load`` raises (the pipeline stops), ``read`` records why (the viewer shows a damaged course).


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
