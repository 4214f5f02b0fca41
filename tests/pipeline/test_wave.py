"""The wave under two caps, measured from both sides, and deterministic whatever the order."""

from __future__ import annotations

from pathlib import Path

import pytest

from stay.pipeline import build_course
from stay.testing import RiggedBackend
from tests.conftest import ROOT
from tests.expected import LESSON_WRITERS
from tests.pipeline.test_build import quiet, tree

SQL = ROOT / "examples" / "briefs" / "sql-window-functions.yaml"  # 12 lessons


@pytest.mark.sweep
@pytest.mark.parametrize("width, calls", [(4, 8), (2, 3), (1, 2), (3, 9)])
def test_both_caps_hold_and_are_reached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        width: int, calls: int) -> None:
    monkeypatch.setenv("STAY_WAVE_CONCURRENCY", str(width))
    monkeypatch.setenv("STAY_MODEL_CONCURRENCY", str(calls))
    reachable = min(calls, len(LESSON_WRITERS) * width + 1)  # a lesson's wave calls, and the capstone
    # every call is held until the most the caps allow are in flight: reaching them is then
    # a property of the runner, not of how fast this machine starts threads
    backend = RiggedBackend(latency=0.01, gather=reachable)
    result = build_course(SQL, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    wave = result.wave
    assert wave is not None and wave.lessons == 12 and wave.calls == 12 * len(LESSON_WRITERS) + 1
    # as the runner counts, and as the model sees it: never above a cap, and the caps bind
    assert wave.max_lessons_in_flight == width
    assert wave.max_calls_in_flight == reachable
    assert backend.most_lessons_in_flight <= width
    assert backend.most_in_flight == reachable
    assert result.validation is not None and not result.validation.defects


def test_default_caps_are_4_lessons_and_8_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAY_WAVE_CONCURRENCY", raising=False)
    monkeypatch.delenv("STAY_MODEL_CONCURRENCY", raising=False)
    result = build_course(SQL, courses_dir=tmp_path, yes=True,
                          backend=RiggedBackend(latency=0.01, gather=8), progress=quiet)
    assert result.wave is not None
    assert (result.wave.max_lessons_in_flight, result.wave.max_calls_in_flight) == (4, 8)


def test_two_concurrent_runs_give_byte_identical_files_and_run_logs(tmp_path: Path) -> None:
    a = build_course(SQL, courses_dir=tmp_path / "a", yes=True, backend=RiggedBackend(latency=0.02),
                     progress=quiet)
    b = build_course(SQL, courses_dir=tmp_path / "b", yes=True, backend=RiggedBackend(latency=0.005),
                     progress=quiet)
    assert tree(a.course_dir) == tree(b.course_dir)  # .state/run-log.md and hashes.json included


@pytest.mark.parametrize("name, value", [("STAY_WAVE_CONCURRENCY", "0"), ("STAY_MODEL_CONCURRENCY", "many"),
                                         ("STAY_REPAIR_ROUNDS", "-1")])
def test_a_bad_cap_is_a_one_line_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             name: str, value: str) -> None:
    import stay

    monkeypatch.setenv(name, value)
    with pytest.raises(stay.UsageError, match=name):
        build_course(SQL, courses_dir=tmp_path, yes=True, progress=quiet)
    assert not any(tmp_path.iterdir())
