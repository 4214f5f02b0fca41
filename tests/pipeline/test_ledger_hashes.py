"""The ledger hashes each course file once per run, and the wave journals a lesson at once.

A run holds the course lock, so ``CourseState.hash_once`` remembers each file's hash and
the run's own writes and retirements update it. The differential test holds the memoised
statuses to those a fresh, unmemoised state reads from the same disk, over generated
sequences of writes, records, curriculum changes, retirements and checkpoints. The build
tests count hash calls by file: at most one each, derived from the course's files, never
a time.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stay.artefacts import Brief, Curriculum, LessonEntry, Module, load
from stay.models import ModelAnswer, ModelRequest, OfflineBackend
from stay.pipeline import _state, build_course, status
from stay.pipeline._graph import Dag, artefact_graph, artefact_paths, derived_files
from stay.pipeline._layout import CourseLayout
from stay.pipeline._state import CourseState, plans_on_disk
from stay.stages import REGISTRY
from tests.conftest import ROOT
from tests.pipeline.conftest import HTTP

BRIEF = Brief(title="T", topic="t", audience="a", time_available="1 hour")


def _curriculum(modules: int) -> Curriculum:
    return Curriculum(modules=[
        Module(id=f"m{m:02d}", slug=f"mod-{m}", title="M", summary="s",
               lessons=[LessonEntry(id=f"m{m:02d}-l{j:02d}", title="L", minutes=20, summary="s") for j in (1,)])
        for m in range(1, modules + 1)])


# the curriculum shrinks and grows again: a retired lesson's files come back as nodes
GRAPHS: tuple[Dag, ...] = (artefact_graph(_curriculum(2)), artefact_graph(_curriculum(1)))
PATHS = artefact_paths(GRAPHS[0])
assert set(artefact_paths(GRAPHS[1])) < set(PATHS)

operations = st.lists(st.one_of(
    st.tuples(st.just("write"), st.lists(st.sampled_from(PATHS), min_size=1, max_size=4, unique=True),
              st.sampled_from(["one\n", "two\n", "three, longer\n"])),
    st.tuples(st.just("record"), st.lists(st.sampled_from(PATHS), min_size=1, max_size=3, unique=True)),
    st.tuples(st.just("curriculum"), st.integers(0, len(GRAPHS) - 1)),
    st.tuples(st.just("checkpoint")),
    st.tuples(st.just("adopt")),
), min_size=1, max_size=25)


@settings(deadline=None)
@given(operations)
@example([("write", [p for p in PATHS if p not in GRAPHS[1]], "one\n"), ("curriculum", 1), ("curriculum", 0)])
def test_memoised_statuses_are_the_statuses_read_from_disk(steps: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        state = CourseState(root, GRAPHS[0], BRIEF)
        state.hash_once()
        for number, (kind, *args) in enumerate(steps):
            if kind == "write":
                paths, text = args
                state.write({p: text for p in paths if p in state.graph})
            elif kind == "record":
                state.record([p for p in args[0] if p in state.graph])
            elif kind == "curriculum":  # as a run does: a new graph, and its orphans retired
                state.graph = GRAPHS[args[0]]
                state.retire(f"run-{number}")
            elif kind == "checkpoint":
                state.checkpoint()
            else:
                state.adopt()
            unmemoised = CourseState(root, state.graph, BRIEF)  # the next run: nothing shared but the disk
            assert state.statuses() == unmemoised.statuses(), (number, kind)


@contextmanager
def hashes_by_file(root: Path) -> Iterator[Counter[str]]:
    """Every file hash taken meanwhile, by path under ``root``."""
    real = hashlib.file_digest
    seen: Counter[str] = Counter()

    def counted(handle: Any, algorithm: Any) -> Any:
        seen[Path(handle.name).relative_to(root).as_posix()] += 1
        return real(handle, algorithm)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hashlib, "file_digest", counted)
        yield seen


def _artefact_files(course: Path) -> set[str]:
    curriculum = load(course / "curriculum.yaml", Curriculum)
    graph = artefact_graph(curriculum, plans_on_disk(course, curriculum), REGISTRY,
                           derived_files(REGISTRY, lambda path: (course / path).is_file(),
                                         lambda path: load(course / path)))
    return {p for p in artefact_paths(graph) if (course / p).is_file()}


def test_a_rebuild_with_nothing_to_do_hashes_each_file_once(courses: Path) -> None:
    """Before, a file was hashed once per artefact reading it: a plan over a hundred times."""
    course = courses / HTTP.stem
    with hashes_by_file(courses) as seen:
        result = build_course(HTTP.stem, courses_dir=courses, yes=True, progress=lambda _line: None)
    assert result.complete and not result.written
    assert {f"{HTTP.stem}/{p}" for p in _artefact_files(course)} == set(seen)
    assert set(seen.values()) == {1}


def test_a_build_hashes_no_file_twice(tmp_path: Path) -> None:
    """What the run writes it knows the hash of: a fresh build reads none back, and a
    rebuild after a prompt change (its stage's files stale) hashes each file at most once."""
    courses = tmp_path / "courses"
    with hashes_by_file(courses) as seen:
        build_course(HTTP, courses_dir=courses, yes=True, progress=lambda _line: None)
    assert not seen
    wave = next(stage for stage in REGISTRY if stage.phase == "wave" and stage.scope == "lesson")
    prompts = tmp_path / "prompts"
    shutil.copytree(ROOT / "prompts", prompts)
    with (prompts / f"{wave.prompt}.md").open("a") as template:
        template.write("\nOne more instruction.\n")
    with hashes_by_file(courses) as seen:
        again = build_course(HTTP.stem, courses_dir=courses, yes=True, prompts_dir=prompts,
                             progress=lambda _line: None)
    curriculum = load(again.course_dir / "curriculum.yaml", Curriculum)
    rewritten = {place.path(wave.output) for place in CourseLayout(curriculum).lessons()}
    assert again.complete and again.calls_by_stage == {wave.name: len(rewritten)}  # each stale file made again
    assert set(again.written) <= rewritten  # and counted as written only where its bytes changed
    assert {f"{HTTP.stem}/{p}" for p in rewritten} <= set(seen)  # read once, to find them stale
    assert set(seen.values()) == {1}


def test_the_wave_journals_each_lesson_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lesson's wave files share one synced journal line (before: one line, and one
    fsync, a file)."""
    lines: list[set[str]] = []
    real = _state.append_journal

    def journalled(path: Path, entries: Any) -> None:
        lines.append(set(entries))
        real(path, entries)

    monkeypatch.setattr(_state, "append_journal", journalled)
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=lambda _line: None)
    curriculum = load(result.course_dir / "curriculum.yaml", Curriculum)
    layout = CourseLayout(curriculum)
    wave = [stage for stage in REGISTRY if stage.phase == "wave" and stage.scope == "lesson"]
    for place in layout.lessons():
        files = {place.path(stage.output) for stage in wave}
        assert [line for line in lines if line & files] == [files], place.id


class _FailsOne(OfflineBackend):
    """Offline, but one wave call fails: ``failing``, the file it would become."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        if request.artefact == self.failing:
            raise _CallFailed(request.artefact)
        return super().complete(request, model)


class _CallFailed(Exception):
    pass


def test_a_failed_call_loses_none_of_its_lessons_finished_files(tmp_path: Path, courses: Path) -> None:
    """Written together, a lesson's files still land when one of its calls fails: the
    others are on disk and current, the failed one missing."""
    finished = courses / HTTP.stem
    curriculum = load(finished / "curriculum.yaml", Curriculum)
    place = next(iter(CourseLayout(curriculum).lessons()))
    wave = [stage for stage in REGISTRY if stage.phase == "wave" and stage.scope == "lesson"]
    failing, *others = [place.path(stage.output) for stage in reversed(wave)]
    with pytest.raises(_CallFailed):
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=_FailsOne(failing), progress=lambda _line: None)
    found = status(HTTP.stem, courses_dir=tmp_path)
    assert found[failing].state == "missing"
    assert {path: found[path].state for path in others} == dict.fromkeys(others, "current")
    for path in others:
        assert (tmp_path / HTTP.stem / path).read_bytes() == (finished / path).read_bytes()


def test_a_journal_line_written_in_parts_is_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.write`` may take fewer bytes than it is given (a file system filling up): the
    rest is written, so the entry recorded before a file's rename is the whole entry."""
    from stay.pipeline import _state

    real, calls = _state.os.write, []

    def part(fd: int, data: Any) -> int:  # as a filling disk does: at most a few bytes a call
        calls.append(len(data))
        return real(fd, bytes(data)[:7])

    monkeypatch.setattr(_state.os, "write", part)
    entries = {"modules/m01/m01-l01.md": {"hash": "0" * 16, "inputs": {"m01-l01.plan.yaml": "1" * 16}}}
    journal = tmp_path / ".state" / "hashes.journal"
    _state.append_journal(journal, entries)
    _state.append_journal(journal, entries)
    assert list(_state.journal_lines(journal)) == [entries, entries] and len(calls) > 2
