"""Crash the run after every node in turn; a fresh runner finishes the same course."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stay._lock import CourseLock
from stay.errors import CourseLocked
from stay.models import OfflineBackend
from stay.pipeline import build_course, gate_status, graph, walk_order
from tests.conftest import ROOT
from tests.pipeline.test_build import quiet, tree

BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"
NODES = ["entry", "choose_entry", *[n for n in walk_order(graph(), "intake") if n != "write_capstone"]]


class Crash(Exception):
    pass


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", "1780000000")
        root = tmp_path_factory.mktemp("clean")
        result = build_course(BRIEF, courses_dir=root, yes=True, backend=OfflineBackend(), progress=quiet)
        return tree(result.course_dir, ("run-log.md",))


@pytest.mark.parametrize("node", NODES)
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
