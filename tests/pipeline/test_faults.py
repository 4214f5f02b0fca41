"""Crash the run after every node in turn, or kill it at a write point; a fresh runner
finishes the same course. A run that fails ends its workers before it frees the lock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from stay._lock import CourseLock
from stay.artefacts import Curriculum, load
from stay.briefs import load_brief, slugify
from stay.errors import EXIT_INTERRUPTED, CourseLocked
from stay.models import ModelAnswer, ModelRequest, OfflineBackend
from stay.pipeline import build_course, gate_status, graph, status
from stay.pipeline._graph import command_walk
from stay.pipeline._layout import CourseLayout
from stay.stages import REGISTRY
from tests.conftest import ROOT
from tests.pipeline.test_build import quiet, tree

BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"
NODES = [n for n in command_walk(graph(), "build") if n != "write_capstone"
         and graph().nodes[n]["kind"] != "review"]  # an offline build has no review node to crash after


class Crash(Exception):
    pass


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", "1780000000")
        root = tmp_path_factory.mktemp("clean")
        result = build_course(BRIEF, courses_dir=root, yes=True, backend=OfflineBackend(), progress=quiet)
        return tree(result.course_dir, ("run-log.md",))


FIRST_OF_EACH_KIND = set({graph().nodes[n]["kind"]: n for n in reversed(NODES)}.values())
"""The default tier crashes after these; the slow tier after every node."""


@pytest.mark.parametrize("node", [pytest.param(n, marks=[] if n in FIRST_OF_EACH_KIND else [pytest.mark.slow])
                                  for n in NODES])
def test_a_crash_after_any_node_resumes_to_the_same_course(node: str, tmp_path: Path,
                                                           uninterrupted: dict[str, str]) -> None:
    def crash(name: str) -> None:
        if name == node:
            raise Crash(name)

    with pytest.raises(Crash):
        build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=OfflineBackend(), progress=quiet,
                     on_node=crash)
    resumed = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=OfflineBackend(),
                           progress=quiet)  # a fresh runner: nothing shared but the disk
    assert resumed.complete
    # the run log differs by design (it lists both runs); every other byte is the same
    assert tree(resumed.course_dir, ("run-log.md",)) == uninterrupted


def test_deleting_runs_withdraws_no_approval(tmp_path: Path) -> None:
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=OfflineBackend(), progress=quiet)
    assert (result.course_dir / ".runs").is_dir()
    shutil.rmtree(result.course_dir / ".runs")
    assert gate_status(result.slug, courses_dir=tmp_path) == {"design": "approved", "plan": "approved"}
    again = build_course(BRIEF, courses_dir=tmp_path, backend=OfflineBackend(), progress=quiet)
    assert again.complete and again.calls == 0


# -- a kill at a write point: the resumed course is the one an uninterrupted run writes ----

PROBE = ROOT / "tests" / "crash_probe.py"
ARTEFACT_RENAMES = r"^after replace (?!(hashes|gates|course)\.|run-log|\w+-gate\.md)\S+\.(yaml|md)$"
"""Right after a course artefact's rename: where a file was recorded only later."""
GATE_WRITES = r"(\w+-gate\.md|gates\.json|(replace |fsync \.)[0-9a-f]{16}\b)"
"""A gate's summary, the answered files it keeps (named by digest) and its record: where
Ctrl-C under load was reported to leave hashes.json other than an uninterrupted run's."""


def _scratch() -> dict[str, str]:
    """The probe's environment: its courses in memory where the machine has /dev/shm
    (each point is two builds; the kills are not power cuts, so real syncs prove nothing)."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    if os.access("/dev/shm", os.W_OK):
        env["TMPDIR"] = "/dev/shm"
    return env


@pytest.mark.sweep
@pytest.mark.parametrize(("kind", "where", "sample"), [
    pytest.param("KILL", ARTEFACT_RENAMES, 6, id="SIGKILL-after-artefact-renames"),
    pytest.param("INT", ARTEFACT_RENAMES, 4, id="SIGINT-after-artefact-renames"),
    pytest.param("INT", GATE_WRITES, 8, id="SIGINT-at-the-gates-writes"),
    pytest.param("KILL", "", 30, id="SIGKILL-anywhere", marks=pytest.mark.slow),
    pytest.param("INT", "", 12, id="SIGINT-anywhere", marks=pytest.mark.slow),
])
def test_a_kill_at_a_write_point_resumes_to_the_course_an_uninterrupted_run_writes(
        kind: str, where: str, sample: int) -> None:
    """SIGKILL, or Ctrl-C, just before or after an os.replace or os.fsync; the command run
    again finishes the same bytes, .state/ (the ledger, the gates) included. The points are
    counted in an uninterrupted run; benchmarks/crash_points.py takes every one."""
    done = subprocess.run([sys.executable, str(PROBE), "--signal", kind, "--sample", str(sample), "--where", where,
                           "--", "build", str(BRIEF.relative_to(ROOT)), "--yes"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=_scratch())
    assert done.returncode == 0, done.stderr
    head, *points = [json.loads(line) for line in done.stdout.splitlines()]
    assert 0 < len(points) == head["chosen"] <= min(sample, head["points"])
    killed = -signal.SIGKILL if kind == "KILL" else EXIT_INTERRUPTED
    for point in points:  # every run passes as many points as the reference: each is struck
        assert point["code"] == killed and point["resumed"] == 0 and point["differs"] == [], point


def _ledger_writes(monkeypatch: pytest.MonkeyPatch, wrote: threading.Event) -> list[str]:
    """The ledger files a build rewrites (hashes.json), in order; ``wrote`` is set once a
    wave worker's write has landed (its files and its journal line)."""
    from stay.pipeline import _state

    seen: list[str] = []
    write_if_changed, write = _state.write_if_changed, _state.CourseState.write

    def counted(path: Path, text: str) -> bool:
        changed = write_if_changed(path, text)
        if changed and path.parent.name == ".state":
            seen.append(path.name)
        return changed

    def written(self: _state.CourseState, *args: Any, **kwargs: Any) -> bool:
        done = write(self, *args, **kwargs)
        if threading.current_thread() is not threading.main_thread():
            wrote.set()
        return done

    monkeypatch.setattr(_state, "write_if_changed", counted)
    monkeypatch.setattr(_state.CourseState, "write", written)
    return seen


def test_when_the_waves_workers_finish_decides_no_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger's writes are the walk's, whenever the wave's threads finish: the same
    brief rewrites hashes.json the same number of times. Held by events, no timing: in one
    build the workers' calls wait until the
    walk has started every wave task; in the other a worker's write lands before the walk
    goes on. A checkpoint that wrote hashes.json only when a worker had already written
    made the write points of two runs differ, so Ctrl-C at the n-th
    (benchmarks/crash_points.py) was another write than the n-th of the run compared with."""
    last_start = [name for name in command_walk(graph(), "build") if graph().nodes[name]["kind"] == "wave"][-1]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")  # the gates' answers: the same time in both
    runs = {}
    for early in (False, True):
        gate, wrote = threading.Event(), threading.Event()
        if early:
            gate.set()
        with pytest.MonkeyPatch.context() as patch:
            seen = _ledger_writes(patch, wrote)

            def schedule(name: str, early: bool = early, gate: threading.Event = gate,
                         wrote: threading.Event = wrote) -> None:
                if early and name == "write_lesson":
                    assert wrote.wait(timeout=60)  # a bound: the worker says when its write has landed
                if name == last_start:
                    gate.set()

            built = build_course(BRIEF, courses_dir=tmp_path / str(early), yes=True, backend=Held(gate),
                                 progress=quiet, on_node=schedule)
        assert built.complete and wrote.is_set()
        runs[early] = seen, tree(built.course_dir, ("run-log.md",))
    assert "hashes.json" in runs[False][0]
    assert runs[True] == runs[False]


# -- no thread outlives its run ----------------------------------------------------------------

WAVE = {stage.name for stage in REGISTRY if stage.phase == "wave"}


class Held(OfflineBackend):
    """Every wave call waits at ``gate``, so it is in flight when the run fails."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate
        self.entered = threading.Semaphore(0)

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        if request.stage in WAVE:
            self.entered.release()
            self.gate.wait()
        return super().complete(request, model)

    def crash_in_flight(self, error: BaseException) -> Callable[[str], None]:
        """An ``on_node`` that raises ``error`` once the wave has started and one of its
        calls is waiting at the gate."""

        def crash(name: str) -> None:
            if name == "write_lesson":
                assert self.entered.acquire(timeout=60)  # a bound: the call says when it is there
                raise error

        return crash


def _workers() -> list[str]:
    return sorted(t.name for t in threading.enumerate()
                  if t.name.startswith(("stay-call", "stay-lesson")) and t is not threading.current_thread())


class Release:
    """Which workers were alive when the course lock was released, the course's files
    then, and when it was."""

    def __init__(self) -> None:
        self.alive: list[list[str]] = []
        self.files: dict[str, str] = {}
        self.done = threading.Event()


def _watch_release(monkeypatch: pytest.MonkeyPatch, course: Path) -> Release:
    seen = Release()
    real = CourseLock.release

    def release(self: CourseLock) -> None:
        if self.course_dir == course and self.held and not seen.done.is_set():
            seen.alive.append(_workers())
            seen.files = tree(course)
            seen.done.set()
        real(self)

    monkeypatch.setattr(CourseLock, "release", release)
    return seen


def test_a_run_that_fails_mid_wave_ends_every_worker_before_it_frees_the_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wave's calls are held until the run waits for its workers (an executor shut down
    with wait=True), so a run that frees the lock without waiting leaves them alive. After
    the raise no worker is left and no wave file was written: the cancel came first."""
    gate = threading.Event()
    shutdown = ThreadPoolExecutor.shutdown

    def waiting(self: ThreadPoolExecutor, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if wait:
            gate.set()
        shutdown(self, wait=wait, cancel_futures=cancel_futures)

    monkeypatch.setattr(ThreadPoolExecutor, "shutdown", waiting)
    course = tmp_path / slugify(load_brief(BRIEF).title)
    release = _watch_release(monkeypatch, course)
    with pytest.raises(Crash):
        held = Held(gate)
        build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=held, progress=quiet,
                     on_node=held.crash_in_flight(Crash()))
    assert release.alive == [[]] and _workers() == []
    assert tree(course) == release.files  # nothing appeared or changed after the lock was free
    _no_wave_file_written(course, tmp_path)
    CourseLock(course).acquire()  # free


def test_an_interrupted_run_frees_the_lock_only_once_its_workers_have_ended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C does not wait for a call that hangs, so the lock stays held (a retry in the
    same process is refused, never racing the workers) until the last worker ends; none
    of them writes after the interrupt."""
    gate = threading.Event()
    course = tmp_path / slugify(load_brief(BRIEF).title)
    release = _watch_release(monkeypatch, course)
    with pytest.raises(KeyboardInterrupt):
        held = Held(gate)
        build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=held, progress=quiet,
                     on_node=held.crash_in_flight(KeyboardInterrupt()))
    with pytest.raises(CourseLocked):
        build_course(BRIEF, courses_dir=tmp_path, yes=True, progress=quiet)  # the calls still hang
    assert not release.done.is_set()
    gate.set()
    assert release.done.wait(timeout=60)  # a bound, not a synchronisation: the release says when
    assert release.alive == [[]]
    _no_wave_file_written(course, tmp_path)
    assert build_course(BRIEF, courses_dir=tmp_path, yes=True, progress=quiet).complete


def _no_wave_file_written(course: Path, courses: Path) -> None:
    """Every file the wave writes is missing (derived from the wave stages and the
    curriculum), and nothing is taken for a hand edit."""
    layout = CourseLayout(load(course / "curriculum.yaml", Curriculum))
    wave = [path for stage in REGISTRY if stage.phase == "wave" for path, _place in layout.outputs(stage)]
    statuses = status(course.name, courses_dir=courses)
    assert wave and all(statuses[path].state == "missing" for path in wave)
    assert "edited" not in {s.state for s in statuses.values()}


# -- the lock does not live in the cache -----------------------------------------------------------


def test_deleting_runs_while_a_command_holds_the_lock_lets_no_second_writer_in(courses: Path) -> None:
    course = next(courses.iterdir())
    with CourseLock(course):
        shutil.rmtree(course / ".runs", ignore_errors=True)
        with pytest.raises(CourseLocked):
            CourseLock(course).acquire()
        with pytest.raises(CourseLocked):
            build_course(course.name, courses_dir=courses, yes=True, progress=quiet)
    with CourseLock(course):
        pass  # released with its holder
