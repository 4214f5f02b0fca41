"""Nothing stay writes is ever half-written: every file a person or a later run reads goes
through the one atomic writer (``stay.artefacts.write_text_atomic``, ``write_bytes_atomic``,
``create_text_atomic``), a temporary beside it that is synced and then renamed (or linked).

The writers in stay/ and evals/ are found by reading the source (ast), so a new plain
write fails here unless it is added to ALLOWED with the reason it is fine. A kill mid-write
is a forked child that ends itself (``os._exit``: no cleanup runs, as under SIGKILL) at the
sync of the file's temporary, before the rename.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import pytest

from stay._lock import sweep_temporaries
from stay.artefacts import TEMPORARY
from tests.conftest import ROOT

SCANNED = ("stay", "evals")

# Plain writes that stay plain, each with why: (file, enclosing function, kind) -> reason.
# An entry that matches nothing fails too, so the list never outlives its code.
ALLOWED: dict[tuple[str, str, str], str] = {
    # the one writer itself
    ("stay/artefacts.py", "_create_beside", "os.open(write)"): "the writer's temporary (O_EXCL, 0666 less umask)",
    ("stay/artefacts.py", "_filled_beside", "os.fdopen(write)"): "the writer filling its temporary",
    ("stay/artefacts.py", "write_bytes_atomic", "os.replace"): "the writer's rename",
    ("stay/artefacts.py", "create_text_atomic", "os.link"): "the writer's link to a name not yet taken",
    ("stay/artefacts.py", "create_text_atomic", "os.open(write)"): "claims a name empty where links fail",
    ("stay/artefacts.py", "create_text_atomic", "os.replace"): "...then renames the whole temporary over it",
    # not a file anyone reads back as a whole
    ("stay/pipeline/_state.py", "append_journal", "os.open(write)"):
        "an append-only journal: one synced write per line, a cut last line is skipped on reading",
    ("stay/pipeline/_state.py", "append_journal", "os.write"): "the journal's one write per line",
    ("stay/_lock.py", "CourseLock._note", "os.open(write)"):
        "the lock holder's pid, for a message only: a cut note reads as 'unknown'",
    ("stay/_lock.py", "CourseLock._note", "os.write"): "the pid note's one write",
    ("stay/_bounds.py", "read_stored", "os.open(write)"):
        "a read: its flags, in a variable, are O_RDONLY | O_NOFOLLOW | O_NONBLOCK (the scan counts any it cannot see)",
    ("stay/cli.py", "_quiet_stdout", "os.open(write)"): "opens /dev/null, to silence a closed stream; writes no file",
    ("stay/view/_serve.py", "SiteHandler._answer", "shutil.copyfileobj"): "a file streamed to an HTTP client",
    ("stay/pipeline/_estimate.py", "estimate", "shutil.copytree"):
        "a scratch copy in a temporary directory, removed when the estimate is made",
    # a whole file moved by a rename: it is at one name or the other, never half at either
    ("stay/pipeline/_state.py", "CourseState.retire", "os.replace"): "moves an orphan into .state/retired/",
    ("stay/pipeline/_commands.py", "_set_aside_damaged", "os.replace"): "moves a damaged ledger aside",
}

_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
_CALLS = {"os.write", "os.replace", "os.rename", "os.link", "os.symlink", "os.truncate", "shutil.copy",
          "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move", "shutil.copyfileobj", "json.dump",
          "pickle.dump", "tempfile.mkstemp", "tempfile.NamedTemporaryFile", "tempfile.TemporaryFile"}
_METHODS = {"write_text", "write_bytes", "touch", "rename", "symlink_to", "hardlink_to"}  # pathlib's writers


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """``os.replace`` for ``os.replace`` or, after ``from os import replace``, ``replace``."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return f"{base}.{node.attr}" if base is not None else None
    return None


def _writes_mode(call: ast.Call, position: int) -> bool:
    """Whether an open-like call's mode may write: a constant with w, a, x or +, or any
    mode not written out (a variable could be anything)."""
    mode: ast.expr | None = call.args[position] if len(call.args) > position else None
    mode = next((k.value for k in call.keywords if k.arg == "mode"), mode)
    if mode is None:
        return False
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)) or any(c in mode.value for c in "wax+")


def _kind(call: ast.Call, aliases: dict[str, str]) -> str | None:
    """The kind of write a call is, or None when it writes no file."""
    name = _dotted(call.func, aliases)
    if name == "os.open":
        given = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "flags"),
                                                             None)
        if given is None:
            return None
        names = [n for n in ast.walk(given) if isinstance(n, ast.Name | ast.Attribute)]
        flags = {n.id if isinstance(n, ast.Name) else n.attr for n in names}
        # flags not written out (a variable, a call) could be anything: counted, as open()'s mode is
        spelled = all((isinstance(n, ast.Attribute) and n.attr.startswith("O_"))
                      or (isinstance(n, ast.Name) and (n.id == "os" or n.id.startswith("O_"))) for n in names)
        unknown = not spelled or any(isinstance(n, ast.Call) for n in ast.walk(given))
        return "os.open(write)" if flags & _WRITE_FLAGS or unknown else None
    if name == "os.fdopen":
        return "os.fdopen(write)" if _writes_mode(call, 1) else None
    if name == "open" or name == "io.open":
        return "open(write)" if _writes_mode(call, 1) else None
    if name in _CALLS:
        return name
    if name in {"yaml.dump", "yaml.safe_dump"} and (len(call.args) > 1 or any(k.arg == "stream" for k in call.keywords)):
        return name
    if isinstance(call.func, ast.Attribute):
        attr = call.func.attr
        if attr == "open" and _writes_mode(call, 0):
            return "Path.open(write)"
        if attr in _METHODS:
            return f"Path.{attr}"
        if attr == "replace" and len(call.args) == 1 and not call.keywords:  # str.replace takes two
            return "Path.replace"
    return None


def plain_writes(source: str, where: str) -> Iterator[tuple[str, str, str, int]]:
    """Every write in one module: (file, enclosing function's qualified name, kind, line)."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname})
        elif isinstance(node, ast.ImportFrom) and node.module:
            aliases.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})

    def visit(node: ast.AST, scope: str) -> Iterator[tuple[str, str, str, int]]:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{scope}.{child.name}" if scope else child.name
            if isinstance(child, ast.Call) and (kind := _kind(child, aliases)) is not None:
                yield where, scope or "<module>", kind, child.lineno
            yield from visit(child, inner)

    yield from visit(tree, "")


@cache  # one scan for both tests
def found_writes() -> list[tuple[str, str, str, int]]:
    found = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            found.extend(plain_writes(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix()))
    return found


SHAPES = """
import os, shutil, json
from pathlib import Path
def writes(p, fd, mode):
    Path(p).write_text("x")
    p.write_bytes(b"x")
    open(p, "w")
    open(p, mode)
    p.open("a")
    os.open(p, os.O_WRONLY | os.O_CREAT)
    os.open(p, mode)
    os.open(p, flags=os.O_APPEND)
    os.fdopen(fd, "wb")
    os.replace(p, p)
    shutil.copy(p, p)
    json.dump({}, fd)
    p.replace(p)
    p.touch()
def reads(p, fd):
    open(p)
    open(p, "rb")
    p.open()
    os.open(p, os.O_RDONLY)
    os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    "a".replace("a", "b")
    os.fdopen(fd, "rb")
"""


def _scan_sees_each_shape() -> None:
    """The check can fail: each call in SHAPES' ``writes`` is found, none in ``reads``."""
    tree = ast.parse(SHAPES)
    calls = {f.name: len(f.body) for f in tree.body if isinstance(f, ast.FunctionDef)}
    found = [scope for _where, scope, _kind, _line in plain_writes(SHAPES, "shapes.py")]
    assert found == ["writes"] * calls["writes"] and calls["reads"] > 0


def test_every_plain_write_in_stay_is_allowed_with_a_reason() -> None:
    _scan_sees_each_shape()
    unlisted = [f"{where}:{line} in {scope}: {kind}" for where, scope, kind, line in found_writes()
                if (where, scope, kind) not in ALLOWED]
    assert not unlisted, ("write these through stay.artefacts.write_text_atomic / write_bytes_atomic / "
                          "create_text_atomic, or add them to ALLOWED with why they are fine:\n" + "\n".join(unlisted))


def test_every_allowed_write_is_still_there() -> None:
    found = {(where, scope, kind) for where, scope, kind, _line in found_writes()}
    assert not set(ALLOWED) - found, f"ALLOWED names writes that are gone: {sorted(set(ALLOWED) - found)}"


# --- a kill mid-write ---------------------------------------------------------------

KILLED = 77  # the child's exit status when it ended itself at the chosen sync


def killed_at_sync(action: Callable[[], object], written: Callable[[Path], bool]) -> int:
    """Run ``action`` in a forked child that ends itself, no cleanup run, at the first
    ``os.fsync`` of a file ``written`` picks (by its path); returns the child's exit status."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            real = os.fsync

            def fsync(fd: int) -> None:
                if written(Path(os.readlink(f"/proc/self/fd/{fd}"))):
                    os._exit(KILLED)
                real(fd)

            os.fsync = fsync  # type: ignore[assignment]
            action()
            status = 0
        finally:
            os._exit(status)
    _pid, code = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(code)


def _temporary_of(name: str) -> Callable[[Path], bool]:
    return lambda path: (m := TEMPORARY.fullmatch(path.name)) is not None and m.group("name") == name


def _leftovers(directory: Path, names: set[str]) -> list[str]:
    """What is in ``directory`` beyond ``names`` and the temporaries the lock's sweep removes."""
    return sorted(p.name for p in directory.iterdir() if p.name not in names and not TEMPORARY.fullmatch(p.name))


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")


@linux_only
def test_a_blob_killed_mid_write_is_absent_and_its_temporary_is_swept(tmp_path: Path) -> None:
    """stay/pipeline/_state.py: before, its own mkstemp writer left a ``.tmp-`` file the
    lock's sweep does not know; now the one writer's temporary, which it removes."""
    from stay.pipeline._state import ANSWERED, answered_copy, digest, keep_answered

    data = b"# a lesson\n" * 100
    (tmp_path / "a.md").write_bytes(data)
    covered = {"a.md": digest(data)}
    store = tmp_path / ANSWERED
    assert killed_at_sync(lambda: keep_answered(tmp_path, covered), lambda path: path.parent == store) == KILLED
    assert not (store / covered["a.md"]).exists() and store.is_dir() and any(store.iterdir())
    assert _leftovers(store, set()) == [], "a killed write left a file the sweep does not remove"
    sweep_temporaries(tmp_path)
    assert list(store.iterdir()) == []
    assert keep_answered(tmp_path, covered) == {} and answered_copy(tmp_path, covered["a.md"]) == data


def test_a_kept_blob_is_readable_as_any_file_the_person_makes(tmp_path: Path) -> None:
    """mkstemp made blobs 0600, hiding .state/answered/ (committed with the course) from a group."""
    from stay.pipeline._state import ANSWERED, digest, keep_answered

    data = b"text\n"
    (tmp_path / "a.md").write_bytes(data)
    umask = os.umask(0o022)
    try:
        keep_answered(tmp_path, {"a.md": digest(data)})
    finally:
        os.umask(umask)
    assert ((tmp_path / ANSWERED / digest(data)).stat().st_mode & 0o777) == 0o666 & ~0o022


@linux_only
def test_a_quality_record_killed_mid_write_is_not_half_there(tmp_path: Path) -> None:
    """stay/suite.py: the offline knob's record was a plain write_text (truncate, then write:
    a kill between leaves an empty or cut record, which recorded_quality refuses as damaged).
    Now it is synced under a temporary before it takes its name."""
    from stay.scoring import QUALITY_RECORD, OfflineJudge, recorded_quality
    from stay.suite import OFFLINE, evaluate_build
    from stay.testing import QUALITY_KNOBS

    brief = ROOT / "evals" / "briefs" / "accessible-web-forms.yaml"
    knob = {QUALITY_KNOBS[0]: 0.5}
    courses = tmp_path / "courses"

    def build() -> tuple[str, object]:
        return evaluate_build(brief, epoch=1, courses_dir=courses, backend=OFFLINE, prompts_dir=None,
                              judge=OfflineJudge(), quality=knob)

    code = killed_at_sync(build, _temporary_of(QUALITY_RECORD.name))
    assert code == KILLED, "the quality record was never synced under a temporary before its rename"
    course = next(courses.glob("e*/*"))
    record = course / QUALITY_RECORD
    beside = [p.name for p in record.parent.iterdir() if record.name in p.name]
    assert beside and all(TEMPORARY.fullmatch(name) for name in beside), beside  # no record, nor half of one
    build()
    assert recorded_quality(course) == knob and json.loads(record.read_text(encoding="utf-8")) == knob


@linux_only
def test_an_init_killed_mid_write_leaves_no_brief_and_a_retry_works(tmp_path: Path) -> None:
    """stay/_init.py: open(path, "x") then write: a kill between left a cut brief.yaml,
    whose presence refused every retry ("already exists"). Now the brief takes its name whole."""
    from stay._init import BRIEF_FILE, init

    start = tmp_path / "start"
    assert killed_at_sync(lambda: init(start), _temporary_of(BRIEF_FILE)) == KILLED
    assert _leftovers(start, set()) == []
    init(start)
    assert {BRIEF_FILE, ".gitignore"} <= {p.name for p in start.iterdir()}


def test_create_text_atomic_never_replaces_a_file(tmp_path: Path) -> None:
    from stay.artefacts import create_text_atomic

    target = tmp_path / "brief.yaml"
    target.write_text("mine\n", encoding="utf-8")
    with pytest.raises(FileExistsError):
        create_text_atomic(target, "theirs\n")
    assert target.read_text(encoding="utf-8") == "mine\n" and [p.name for p in tmp_path.iterdir()] == ["brief.yaml"]
    create_text_atomic(tmp_path / "new.yaml", "whole\n")
    assert (tmp_path / "new.yaml").read_text(encoding="utf-8") == "whole\n"


def test_create_text_atomic_where_hard_links_fail_still_writes_whole_and_never_replaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FAT stick or some network shares refuse os.link: the name is claimed, then renamed over."""
    import errno

    from stay.artefacts import create_text_atomic

    def no_links(src: object, dst: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    create_text_atomic(tmp_path / "new.yaml", "whole\n")
    (tmp_path / "mine.yaml").write_text("mine\n", encoding="utf-8")
    with pytest.raises(FileExistsError):
        create_text_atomic(tmp_path / "mine.yaml", "theirs\n")
    assert {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()} == {"new.yaml": "whole\n",
                                                                                   "mine.yaml": "mine\n"}
