"""A hint speaks to its caller: from Python, ``result.reason`` and a refusal name the
Python call (``stay.approve(...)``, ``yes=True``); from the command line, the command to
paste (``stay approve ...``, ``--yes``). Both come from one declaration
(``stay._words.PYTHON_CALLS``, ``YES``), the caller from ``stay._words.SPEAKS``."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
from pathlib import Path

import pytest

import stay
import stay.view
from stay._words import FLAGS, PYTHON_CALLS, YES, command_hint, python_call
from tests.conftest import ROOT

BRIEF = ROOT / "examples" / "briefs" / "first-aid-at-work.yaml"


def quiet(_update: object) -> None:
    pass


def _calls(text: str) -> list[ast.Call]:
    """Every backticked span of ``text``, which must each be one Python call expression."""
    spans = re.findall(r"`([^`]+)`", text)
    assert spans, text
    calls = []
    for span in spans:
        tree = ast.parse(span, mode="eval")  # valid Python, or this raises
        assert isinstance(tree.body, ast.Call), span
        calls.append(tree.body)
    return calls


def _public(call: ast.Call) -> str:
    """The dotted name a ``stay....NAME(...)`` call takes from a public surface of stay's: a
    name its module's ``__all__`` lists (``stay.approve``, ``stay.view.render_course``)."""
    name = ast.unparse(call.func)
    module, _, attr = name.rpartition(".")
    assert module.split(".")[0] == "stay", name
    assert attr in importlib.import_module(module).__all__, name
    return name.removeprefix("stay.")


def _binds(call: ast.Call) -> None:
    """The call's literal arguments fit the real signature of the function it names."""
    func = eval(compile(ast.Expression(call.func), "<hint>", "eval"), {"stay": stay})  # a stay.NAME the test checked
    args = [ast.literal_eval(a) for a in call.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
    inspect.signature(func).bind(*args, **kwargs)


def test_a_python_build_stopped_at_a_gate_names_the_python_call_that_answers_it(tmp_path: Path) -> None:
    result = stay.build_course(BRIEF, courses_dir=tmp_path, backend="offline", progress=quiet)
    assert result.stopped_at == "design gate"
    view, call = _calls(result.reason)
    assert _public(call) == "approve"
    _binds(call)
    # the review page, from Python: the viewer's own call, which renders it
    assert _public(view) == "view.render_course"
    _binds(view)
    assert Path(ast.literal_eval(view.args[0])) == tmp_path / result.slug
    assert YES["python"] in result.reason and YES["shell"] not in result.reason and "stay approve" not in result.reason
    assert "stay approve" not in result.outcome and "stay approve" not in result._repr_html_()
    # the call as the reason spells it is the one that answers the gate: run it, build on
    eval(compile(ast.Expression(call), "<reason>", "eval"), {"stay": stay})
    after = stay.build_course(BRIEF, courses_dir=tmp_path, backend="offline", progress=quiet)
    assert after.stopped_at == "plan gate"
    _, plan = _calls(after.reason)
    assert ast.literal_eval(plan.args[1]) == "plan" and _public(plan) == "approve"


def test_the_command_line_still_names_the_shell_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stay.cli import main

    code = main(["build", str(BRIEF), "--courses-dir", str(tmp_path), "--backend", "offline"])
    out = capsys.readouterr().out
    (slug,) = [course.name for course in tmp_path.iterdir()]
    assert code == 4 and f"`stay approve {slug} design --courses-dir {tmp_path}` (or build with --yes)" in out
    assert "stay.approve(" not in out


@pytest.mark.parametrize("command", sorted(PYTHON_CALLS))
def test_every_command_a_hint_names_has_a_python_call_with_the_real_signature(command: str) -> None:
    """Each declared command, with each of its positional words and a switch and an option
    the call takes, spelled as the shell hint would: the Python form parses and binds, and
    names the courses directory the way the table says the call takes it."""
    declared = PYTHON_CALLS[command]
    words = [command, *(name.upper() for name in declared.names)]
    module, _, name = declared.function.rpartition(".")
    parameters = inspect.signature(getattr(importlib.import_module(module), name)).parameters
    words += [flag for flag, keyword in FLAGS.items() if keyword in parameters]
    if "note" in parameters:
        words += ["--note", repr("...")]
    (call,) = _calls(command_hint("/tmp/some courses", *words, speaks="python"))
    assert f"stay.{_public(call)}" == declared.function
    _binds(call)
    keywords = {k.arg for k in call.keywords}
    if declared.in_courses:  # the course's own path, and no courses_dir= beside it
        assert ast.literal_eval(call.args[0]) == os.path.join("/tmp/some courses", words[1]) and \
            "courses_dir" not in keywords
    else:
        assert keywords >= {"courses_dir"}
    shell = command_hint("/tmp/some courses", *words, speaks="shell")
    assert shell.startswith(f"`stay {command} ") and "--courses-dir '/tmp/some courses'" in shell


def test_a_command_with_no_python_function_of_its_own_is_run_command() -> None:
    call = ast.parse(python_call("courses", "write", "SLUG"), mode="eval").body
    assert isinstance(call, ast.Call)
    from stay.pipeline import run_command

    inspect.signature(run_command).bind(*[ast.literal_eval(a) for a in call.args])
