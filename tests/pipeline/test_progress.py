"""Progress, as a person sees it: in a terminal, a ``[7/12]`` counter with the elapsed
time and running cost, in curriculum order, with nouns that agree with their counts and
one stop line; in a notebook, a bar redrawn in place with the same figures."""

from __future__ import annotations

import html
import re
import sys
import time
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from stay import ModelError, NotebookProgress, ProgressUpdate, StayError, build_course
from stay.models import PRICES, OfflineBackend, Price
from stay.pipeline import _trace
from stay.requests import ModelAnswer, ModelRequest
from stay.stages import REGISTRY
from tests.conftest import ROOT, run_stay
from tests.expected import curriculum_of, files_written, total_calls

FIRST_AID = ROOT / "examples" / "briefs" / "first-aid-at-work.yaml"  # 13 lessons, one module of 1 lesson
COUNTED = re.compile(r"^  \[ ?(\d+)/(\d+)\] ([\w-]+): .+  \((\d+\.\d s|\d+ min \d\d s), \$(\d+\.\d{4})\)$")
WRONG_PLURAL = re.compile(r"(?<![\d.])1 (lesson|call|model call|file|task|check|module|defect|round)s\b")


def _order(course: Path) -> list[str]:
    """The wave's tasks in curriculum order: each lesson, then each course-scope wave stage."""
    curriculum = curriculum_of(course)
    return [*(lesson.id for module in curriculum.modules for lesson in module.lessons),
            *(stage.name for stage in REGISTRY if stage.phase == "wave" and stage.scope == "course")]


def _stop_line(course: Path) -> str:
    curriculum = curriculum_of(course)
    return f"{total_calls(curriculum)} model calls, {files_written(course)} files written in "


@dataclass
class PricedAndUneven(OfflineBackend):
    """The offline answers, billed as a priced model, with the first lesson slowest, so
    the wave's threads finish out of curriculum order."""

    slow: str = "m01-l01"
    prices: ClassVar[Mapping[str, Price]] = PRICES  # a backend's answers are priced at its own table: Claude's

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        if self.slow in request.artefact:
            time.sleep(0.15)
        answer = super().complete(request, model)
        return answer.model_copy(update={"model": "claude-sonnet-5-5"})


def _counted(lines: list[str]) -> list[re.Match[str]]:
    return [m for m in map(COUNTED.match, lines) if m]


def test_the_terminal_counts_lessons_in_curriculum_order_with_time_and_cost(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = build_course(FIRST_AID, courses_dir=tmp_path, yes=True, backend=PricedAndUneven())
    lines = capsys.readouterr().err.splitlines()
    counted = _counted(lines)
    order = _order(result.course_dir)
    assert [m[3] for m in counted] == order  # whichever thread finished first
    assert [int(m[1]) for m in counted] == list(range(1, len(order) + 1))
    assert {int(m[2]) for m in counted} == {len(order)}
    costs = [float(m[5]) for m in counted]
    # running, never above the total (both as shown: to four places, so compare them rounded alike)
    assert costs == sorted(costs) and 0 < costs[-1] <= float(f"{result.cost or 0:.4f}")
    assert lines[-1].startswith(_stop_line(result.course_dir)) and lines[-1].endswith(
        f"; cost ${result.cost:.4f}")


class Unpriced(OfflineBackend):
    """The offline answers, billed as a model no price table knows."""

    prices: ClassVar[Mapping[str, Price]] = {}

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        return super().complete(request, model).model_copy(update={"model": "mystery-model"})


def test_an_unpriced_run_ends_saying_its_cost_is_unknown_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = build_course(FIRST_AID, courses_dir=tmp_path, yes=True, backend=Unpriced())
    last = capsys.readouterr().err.splitlines()[-1]
    assert result.cost is None
    assert last.startswith(_stop_line(result.course_dir))
    assert last.endswith("; cost unknown (no price on file for mystery-model)") and "cost cost" not in last


def test_counts_agree_with_their_nouns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_course(FIRST_AID, courses_dir=tmp_path, yes=True, backend="offline")
    err = capsys.readouterr().err
    assert "  module m05: planning 1 lesson\n" in err
    assert WRONG_PLURAL.search(err) is None
    assert _trace.plural(0, "lesson") == "0 lessons"
    assert _trace.plural(1, "model call") == "1 model call"
    assert _trace.plural(2, "query", "queries") == "2 queries"


def test_a_stop_is_said_once(tmp_path: Path) -> None:
    new = run_stay("new", str(FIRST_AID), "--courses-dir", str(tmp_path))
    assert new.returncode == 0
    both = new.stdout + new.stderr
    assert both.count("stopped at the design gate") == 1
    assert "stopped at the design gate: stay new stops at the design gate" in new.stdout
    build = run_stay("build", "first-aid-at-work", "--courses-dir", str(tmp_path))
    assert build.returncode == 4
    assert (build.stdout + build.stderr).count("stopped at") == 1
    assert WRONG_PLURAL.search(new.stderr + build.stderr) is None


def test_a_plain_callable_gets_the_terminal_lines(tmp_path: Path) -> None:
    lines: list[str] = []
    result = build_course(FIRST_AID, courses_dir=tmp_path, yes=True, backend="offline", progress=lines.append)
    assert [m[3] for m in _counted(lines)] == _order(result.course_dir)


def test_a_notebook_draws_a_bar_with_elapsed_time_and_running_cost(tmp_path: Path) -> None:
    drawn: list[str] = []
    bar = NotebookProgress(show=drawn.append)
    result = build_course(FIRST_AID, courses_dir=tmp_path, yes=True, backend=PricedAndUneven(), progress=bar)
    assert drawn[0].startswith('<div class="stay-progress"><progress></progress>')  # indeterminate at first
    values = [tuple(map(int, m.groups())) for m in
              (re.search(r'<progress value="(\d+)" max="(\d+)">', html) for html in drawn) if m]
    tasks = len(_order(result.course_dir))
    assert values[0] == (1, tasks) and values[-1] == (tasks, tasks)
    assert [done for done, _ in values] == sorted(done for done, _ in values)
    assert re.search(rf"{tasks}/{tasks} tasks · \d+\.\d s · \$\d+\.\d{{4}}", drawn[-1])
    assert f"${result.cost:.4f}" in drawn[-1]
    assert _stop_line(result.course_dir) in drawn[-1]  # the latest lines, under the bar
    assert drawn[-1].count("\n") < 4  # only the latest few lines are kept
    assert bar.counted is not None and bar.counted.text == "capstone: project.yaml"


def test_a_run_that_stops_at_a_gate_closes_its_bar_saying_where_and_why(tmp_path: Path) -> None:
    drawn: list[str] = []
    bar = NotebookProgress(show=drawn.append)
    result = build_course(FIRST_AID, courses_dir=tmp_path, backend="offline", progress=bar)  # no yes: the gate
    assert result.stopped_at is not None
    last = drawn[-1]
    assert '<div class="stay-progress" data-ended="stopped">' in last
    assert "<progress></progress>" not in last  # no longer spinning
    assert html.escape(result.outcome) in last  # where it stopped, and why
    assert all("data-ended" not in earlier for earlier in drawn[:-1])  # closed by the last update only
    bar("a later line")
    bar.update(ProgressUpdate("a later update", 9.0, None))
    assert drawn[-1] is last and len(drawn) == drawn.index(last) + 1  # nothing redraws a closed bar


def test_a_complete_run_closes_its_bar_full_and_a_failed_one_says_why(tmp_path: Path) -> None:
    drawn: list[str] = []
    result = build_course(FIRST_AID, courses_dir=tmp_path, yes=True, backend="offline",
                          progress=NotebookProgress(show=drawn.append))
    tasks = len(_order(result.course_dir))
    assert f'data-ended="complete"><progress value="{tasks}" max="{tasks}">' in drawn[-1]
    failed: list[str] = []
    with pytest.raises(StayError) as raised:
        build_course(FIRST_AID, courses_dir=tmp_path / "failed", yes=True, backend=Failing(),
                     progress=NotebookProgress(show=failed.append))
    assert 'data-ended="failed"' in failed[-1] and html.escape(str(raised.value)) in failed[-1]


class Failing(OfflineBackend):
    """The offline backend, but every call fails as a refused call does."""

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        raise ModelError("the <model> refused")


def test_a_notebook_escapes_what_it_shows() -> None:
    drawn: list[str] = []
    bar = NotebookProgress(show=drawn.append)
    bar.update(ProgressUpdate("<script>alert(1)</script> & more", 1.0, 0.5))
    assert "<script>" not in drawn[-1] and "&lt;script&gt;" in drawn[-1]
    assert "1.0 s · $0.5000" in drawn[-1]


def _shell(qualified: str, *bases: type) -> type:
    """A fake shell class, named and placed as the real one is (``module.Class``)."""
    module, _, name = qualified.rpartition(".")
    return type(name, bases, {"__module__": module})


ZMQ = _shell("ipykernel.zmqshell.ZMQInteractiveShell")  # Jupyter, and VS Code's notebooks (ipykernel)
COLAB = _shell("google.colab._shell.Shell", ZMQ)  # Colab's own class, a ZMQInteractiveShell
KERNELS = {"jupyter and vs code": ZMQ, "colab": COLAB, "colab, base unseen": _shell("google.colab._shell.Shell"),
           "a kernel's subclass": _shell("my.kernel.Shell", ZMQ)}
NOT_KERNELS = {"terminal": _shell("IPython.terminal.interactiveshell.TerminalInteractiveShell"),
               "a namesake elsewhere": _shell("elsewhere.Shell")}


@pytest.mark.parametrize("shell", [*KERNELS.values(), *NOT_KERNELS.values()], ids=[*KERNELS, *NOT_KERNELS])
def test_the_default_is_a_bar_in_a_notebook_kernel_and_lines_elsewhere(
        shell: type, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _trace.default_progress() is _trace.print_progress  # no IPython: lines
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert isinstance(_trace.default_progress(), NotebookProgress) is (shell in KERNELS.values())
    fake.get_ipython = lambda: None  # type: ignore[attr-defined]
    assert _trace.default_progress() is _trace.print_progress  # IPython imported, no shell running


def test_the_bar_is_shown_once_then_updated_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []

    class Handle:
        def update(self, shown: object) -> None:
            calls.append(("update", str(shown)))

    display = types.ModuleType("IPython.display")
    display.HTML = lambda markup: markup  # type: ignore[attr-defined]

    def show(shown: object, display_id: bool = False) -> Handle:
        assert display_id is True
        calls.append(("display", str(shown)))
        return Handle()

    display.display = show  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", types.ModuleType("IPython"))  # CI has no IPython
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    bar = NotebookProgress()
    bar("backend: offline")
    bar.update(ProgressUpdate("m01-l01: content", 2.0, 0.01, 1, 3))
    bar.update(ProgressUpdate("m01-l02: content", 3.0, 0.02, 2, 3))
    assert [kind for kind, _ in calls] == ["display", "update", "update"]
    assert '<progress value="2" max="3">' in calls[-1][1]


def test_plan_says_what_to_run_next(tmp_path: Path) -> None:
    assert run_stay("new", str(FIRST_AID), "--courses-dir", str(tmp_path)).returncode == 0
    assert run_stay("approve", "first-aid-at-work", "design", "--courses-dir", str(tmp_path)).returncode == 0
    planned = run_stay("plan", "first-aid-at-work", "--yes", "--courses-dir", str(tmp_path))
    assert planned.returncode == 0
    assert f"planned; write the course with `stay write first-aid-at-work --courses-dir {tmp_path}`" in planned.stdout
