"""Every message that names a command speaks its caller's language, and names the path.

A refusal raised to Python names the Python call (``stay.adopt('s', courses_dir=...)``,
``stay.build_course(...)``), one made for the command line the ``stay`` command, from one
table (``stay._words.PYTHON_CALLS``). The list of such messages is derived from the source:
no literal backticked ``stay COMMAND`` for a command with a Python call is left outside
the modules only the command line runs, and each message that was one is triggered here
from both sides. The viewer's missing paths are CourseNotFound (a FileNotFoundError) with
``path``."""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import inspect
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import stay
import stay.view
from stay._words import PYTHON_CALLS, speaking
from stay.errors import CourseNotFound, CoursePathError, EnvironmentProblem, UsageError
from tests.conftest import ROOT, SAMPLE, run_stay
from tools.layers import import_graph

STAY = ROOT / "stay"
SHELL_COMMAND = re.compile(r"`stay ([a-z][a-z-]*)")
"""A backticked ``stay COMMAND`` in a message: a command named for a person to run."""
FILES_NOT_MESSAGES = {
    "stay/pipeline/_gates.py": "the gate page (.state/<gate>-gate.md): a file, the same bytes whoever built it",
    "stay/view/_load.py": "the site's ledger badge: a page, the same bytes whoever rendered it",
}
"""Modules whose ``stay COMMAND`` text goes into a file, not to a caller: a file's bytes
never depend on who made it, so it keeps the command line's words."""


@functools.cache
def _cli_only() -> frozenset[str]:
    """stay.cli, each package's command line (``*._cli``), and what only they import."""
    graph = import_graph(ROOT)
    modules = {i.importer for i in graph}
    importers: dict[str, set[str]] = {}
    for found in graph:
        importers.setdefault(found.imported, set()).add(found.importer)
    only = frozenset({"stay.cli"} | {m for m in modules if m.endswith("._cli")})
    while True:
        more = {m for m in modules - only if importers.get(m) and importers[m] <= only}
        if not more:
            return only
        only |= more


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstrings (and attribute docstrings) in ``tree``: prose, not messages."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for before, after in zip([None, *body], body, strict=False):
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and (
                    before is None or isinstance(before, ast.Assign | ast.AnnAssign)):
                found.add(id(after.value))
    return found


def _named_commands() -> Iterator[tuple[str, int, str]]:
    """(file, line, command) for each literal ``stay COMMAND`` outside a docstring whose
    command has a Python call, in every module a Python caller can reach."""
    cli_only = _cli_only()
    for path in sorted(STAY.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if name in cli_only:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
                for command in SHELL_COMMAND.findall(node.value):
                    if command in PYTHON_CALLS:
                        yield path.relative_to(ROOT).as_posix(), node.lineno, command


def test_the_modules_only_the_command_line_runs_are_found() -> None:
    """The exemption is derived, and holds what it must: the CLI, stay init, stay watch."""
    assert {"stay.cli", "stay._init", "stay._watch", "stay.view._cli"} <= _cli_only()
    assert "stay.view._site" not in _cli_only() and "stay.pipeline._state" not in _cli_only()


def test_no_message_a_python_caller_can_get_spells_a_shell_command_itself() -> None:
    """Each goes through ``command_hint`` (or ``course_hint``, ``command_name``), which
    speaks as the caller does; only files keep the shell's words, each for its reason."""
    found = list(_named_commands())
    assert [f"{file}:{line} names `stay {command}`" for file, line, command in found
            if file not in FILES_NOT_MESSAGES] == []
    assert {file for file, _, _ in found} == set(FILES_NOT_MESSAGES)  # each exemption is still needed


def _calls(text: str) -> list[ast.Call]:
    """Every backticked span of a Python caller's message, each one call expression."""
    spans = re.findall(r"`([^`]+)`", text)
    assert spans, text
    calls = [ast.parse(span, mode="eval").body for span in spans]
    assert all(isinstance(call, ast.Call) for call in calls), text
    return [call for call in calls if isinstance(call, ast.Call)]


def _bound(call: ast.Call) -> inspect.BoundArguments:
    """The call bound to the real signature of the public function it names."""
    module, _, attr = ast.unparse(call.func).rpartition(".")
    assert attr in importlib.import_module(module).__all__, ast.unparse(call.func)
    function = getattr(importlib.import_module(module), attr)
    return inspect.signature(function).bind(*[ast.literal_eval(a) for a in call.args],
                                            **{k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})


@pytest.fixture
def adopted(tmp_path: Path) -> Path:
    """A courses directory (not the default) holding the sample, adopted: it has a ledger."""
    courses = tmp_path / "my courses"
    shutil.copytree(SAMPLE, courses / SAMPLE.name)
    stay.adopt(SAMPLE.name, courses_dir=courses)
    return courses


DAMAGE = [("hashes.json", "{not json"), ("hashes.json", '{"artefacts": [1]}'),
          ("gates.json", "\xff\xfe garbage"), ("gates.json", '{"gates": 7}')]
"""Each way a ledger file is refused: unreadable JSON, and a section that is not a mapping."""


@pytest.mark.parametrize("ledger, text", DAMAGE)
def test_a_damaged_ledger_names_stay_adopt_as_python_and_the_call_mends_it(
        adopted: Path, ledger: str, text: str) -> None:
    slug = SAMPLE.name
    damaged = adopted / slug / ".state" / ledger
    damaged.write_text(text, encoding="latin-1")
    with pytest.raises(EnvironmentProblem) as refused:  # a build reads both files of the ledger
        stay.build_course(slug, courses_dir=adopted, backend="offline", progress=lambda _update: None)
    message = str(refused.value)
    assert refused.value.path == str(damaged) and "\n" not in message and "stay adopt" not in message
    (call,) = _calls(message)
    bound = _bound(call)
    assert ast.unparse(call.func) == PYTHON_CALLS["adopt"].function
    assert bound.arguments == {"slug": slug, "courses_dir": str(adopted)}
    # pasted as it is, it does what the message says: the course reads again
    eval(compile(ast.Expression(call), "<message>", "eval"), {"stay": stay})
    assert stay.status(slug, courses_dir=adopted)


@pytest.mark.parametrize("ledger, text", DAMAGE)
def test_a_damaged_ledger_still_names_the_shell_command_at_the_shell(adopted: Path, ledger: str, text: str) -> None:
    (adopted / SAMPLE.name / ".state" / ledger).write_text(text, encoding="latin-1")
    done = run_stay("status", SAMPLE.name, "--courses-dir", str(adopted))
    assert done.returncode == 2 and f"run `stay adopt {SAMPLE.name}` to rebuild the ledger" in done.stderr
    assert "stay.adopt(" not in done.stderr


def test_an_empty_library_names_the_build_call_to_python_and_the_command_to_the_shell(tmp_path: Path) -> None:
    empty = tmp_path / "none yet"
    empty.mkdir()
    with pytest.raises(UsageError) as refused:
        stay.view.render_library(empty, tmp_path / "site")
    (call,) = _calls(str(refused.value))
    assert ast.unparse(call.func) == PYTHON_CALLS["build"].function
    assert _bound(call).arguments == {"brief": "BRIEF", "courses_dir": str(empty)}
    assert refused.value.path == str(empty)
    with speaking("shell"), pytest.raises(UsageError) as shell:
        stay.view.render_library(empty, tmp_path / "site")
    assert str(shell.value).endswith("; build one with `stay build BRIEF` or pass --courses-dir")


def test_a_directory_the_viewer_did_not_write_is_refused_naming_the_writer_as_the_caller_knows_it(
        tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    marker = tmp_path / "marker"
    (marker / ".stay-site").mkdir(parents=True)
    (marker / "page.html").write_text("x")
    module = PYTHON_CALLS["view"].function.rpartition(".")[0]
    for out, said in ((foreign, "was not written by {}"), (marker, "is not a file {} wrote")):
        with pytest.raises(UsageError) as python:
            stay.view.render_course(SAMPLE, out)
        assert said.format(f"`{module}`") in str(python.value)
        with speaking("shell"), pytest.raises(UsageError) as shell:
            stay.view.render_course(SAMPLE, out)
        assert said.format("`stay view`") in str(shell.value)


def test_render_course_by_the_course_alone_writes_where_stay_view_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hint's call takes the course's path only, so its out_dir defaults as --out does."""
    monkeypatch.chdir(tmp_path)
    out = stay.view.render_course(SAMPLE)
    assert out == stay.view.default_out_dir(SAMPLE.name).resolve() and (out / "index.html").is_file()


# -- the viewer's missing paths -----------------------------------------------------------


def test_a_missing_course_is_course_not_found_naming_the_path_and_the_fix(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / SAMPLE.name)
    missing = tmp_path / SAMPLE.name.replace("travel", "travl")
    for entry in (stay.view.build_site, lambda path: stay.view.render_course(path, tmp_path / "site")):
        with pytest.raises(CourseNotFound) as refused:
            entry(missing)
        error = refused.value
        assert isinstance(error, FileNotFoundError) and error.path == error.filename == str(missing)
        message = str(error)
        assert "\n" not in message and f"did you mean '{SAMPLE.name}'" in message and "course.yaml" in message
    a_file = tmp_path / "a-file"
    a_file.write_text("not a course")
    with pytest.raises(CoursePathError) as not_a_directory:
        stay.view.build_site(a_file)
    assert not isinstance(not_a_directory.value, FileNotFoundError) and not_a_directory.value.path == str(a_file)


def test_a_missing_courses_directory_for_the_library_is_course_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "no such"
    with pytest.raises(CourseNotFound) as refused:
        stay.view.render_library(missing, tmp_path / "site")
    assert isinstance(refused.value, FileNotFoundError) and refused.value.path == str(missing)
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    with pytest.raises(CoursePathError) as not_a_directory:
        stay.view.render_library(a_file, tmp_path / "site")
    assert not isinstance(not_a_directory.value, FileNotFoundError)


def test_stay_view_of_a_missing_slug_is_course_not_found_and_says_what_it_said(tmp_path: Path) -> None:
    from stay.view import view_main

    ns = argparse.Namespace(slug="nothing-here", courses_dir=str(tmp_path), out=None, all=False, serve=False,
                            port=None)
    with pytest.raises(CourseNotFound) as refused:
        view_main(ns)
    assert refused.value.path == str(tmp_path / "nothing-here")
    done = run_stay("view", "nothing-here", "--courses-dir", str(tmp_path))
    assert done.returncode == 2
    assert f"there is no course 'nothing-here' in {tmp_path}; check the slug and --courses-dir" in done.stderr


def test_a_missing_course_by_slug_names_the_courses_directory_it_was_looked_for_in(tmp_path: Path) -> None:
    target = "no-such-course"
    elsewhere = tmp_path / "elsewhere"
    with pytest.raises(CourseNotFound) as raised:
        stay.build_course(target, courses_dir=elsewhere)
    (hint,) = re.findall(r"`(stay\.[^`]+)`", str(raised.value))
    call = ast.parse(hint).body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    given = {kw.arg: ast.literal_eval(kw.value) for kw in call.value.keywords}
    assert given.get("courses_dir") == str(elsewhere)  # paste it and it builds where it was looked for
    said = run_stay("build", target, "--courses-dir", str(elsewhere))
    assert f"--courses-dir {elsewhere}" in said.stderr


def test_the_viewer_names_its_options_as_the_caller_gave_them(tmp_path: Path) -> None:
    """``--out`` and ``--courses-dir`` at the shell; ``out_dir`` and ``courses_dir``, the
    parameters of ``render_course`` and ``render_library``, from Python."""
    from stay.view import render_course
    from stay.view._site import render_library

    course = tmp_path / "courses" / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    inside = course / "site"
    with pytest.raises(UsageError) as raised:
        render_course(course, inside)
    assert str(raised.value).startswith(f"out_dir {inside} is inside the course")
    said = run_stay("view", SAMPLE.name, "--courses-dir", str(course.parent), "--out", str(inside))
    assert said.stderr.startswith(f"error: --out {inside} is inside the course"), said.stderr
    missing = tmp_path / "nowhere"
    with pytest.raises(CourseNotFound) as lost:
        render_library(missing, tmp_path / "site")
    assert str(lost.value).startswith(f"courses_dir {missing} is not a directory")
    said = run_stay("view", "--all", "--courses-dir", str(missing), "--out", str(tmp_path / "site"))
    assert said.stderr.startswith(f"error: --courses-dir {missing} is not a directory"), said.stderr
