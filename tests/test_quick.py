"""A rebuild with nothing to do, answered from its record (``stay._quick``): the same
answer as the pipeline's whatever changed, and the pipeline never imported."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stay.artefacts._io import TEMPORARY
from tests.conftest import ROOT, run_stay
from tests.parity.harness import examples
from tests.pipeline.test_build import tree

BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"
SLUG = "incident-postmortems"
EPOCH = "1780000000"


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the courses directory every run uses, a pristine copy of it) after a build and a
    rebuild with nothing to do, which left the record. Every example resets the courses
    directory from the copy: the record names its path, as the output does."""
    top = tmp_path_factory.mktemp("quick")
    courses, pristine = top / "courses", top / "pristine"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", EPOCH)
        assert run_stay("build", str(BRIEF), "--yes", "--courses-dir", str(courses)).returncode == 0
        again = run_stay("build", SLUG, "--yes", "--courses-dir", str(courses))
    assert again.returncode == 0, again.stderr
    assert (courses / SLUG / ".runs" / "quick.json").is_file()
    shutil.copytree(courses, pristine, symlinks=True)
    yield courses, pristine


def _reset(courses: Path, pristine: Path) -> Path:
    shutil.rmtree(courses)
    shutil.copytree(pristine, courses, symlinks=True)
    return courses / SLUG


def _files(course: Path) -> list[Path]:
    return sorted(p for p in course.rglob("*") if p.is_file() and ".runs" not in p.relative_to(course).parts)


Mutation = Callable[[Path, int], dict[str, str]]
"""Changes the course (or the environment of the next run); its int picks what."""


def _edit(course: Path, pick: int) -> dict[str, str]:
    files = _files(course)
    with open(files[pick % len(files)], "a", encoding="utf-8") as handle:
        handle.write("\nA line a person added.\n")
    return {}


def _touch(course: Path, pick: int) -> dict[str, str]:
    files = _files(course)
    path = files[pick % len(files)]
    path.write_bytes(path.read_bytes())  # the same bytes, a new time
    return {}


def _delete(course: Path, pick: int) -> dict[str, str]:
    files = _files(course)
    files[pick % len(files)].unlink()
    return {}


def _orphan(course: Path, pick: int) -> dict[str, str]:
    module = sorted(course.glob("modules/*"))[0]
    (module / f"m09-l0{pick % 9 + 1}.md").write_text("---\nlesson: m09-l01\ntitle: Stray\n---\nA stray lesson.\n")
    return {}


def _temporary(course: Path, pick: int) -> dict[str, str]:
    """A temporary file a killed run left, in the one form stay makes (the sweep removes it)."""
    name = f".course.yaml.stay-{pick:016x}.tmp"
    assert TEMPORARY.fullmatch(name)
    (course / name).write_text("half a file")
    return {}


def _decline(course: Path, pick: int) -> dict[str, str]:
    gate = ("design", "plan")[pick % 2]
    assert run_stay("approve", SLUG, gate, "--decline", "--courses-dir", str(course.parent),
                    env={"SOURCE_DATE_EPOCH": EPOCH}).returncode == 0
    return {}


def _environment(course: Path, pick: int) -> dict[str, str]:
    return [{"STAY_MODEL_WRITING": "claude-haiku-5-5"}, {"STAY_MODEL": "claude-opus-5-5"},
            {"STAY_MODEL_PLANNING": "claude-sonnet-5-5"}, {"STAY_REPAIR_ROUNDS": "0"},
            {"SOURCE_DATE_EPOCH": "1790000000"}, {"STAY_WAVE_CONCURRENCY": "2"}][pick % 6]


def _directory(name: str, course: Path) -> Path:
    """A copy of the checkout's prompts/ or data/ beside the courses, made before the record."""
    copy = course.parent.parent / f"{name}-copy"
    if not copy.is_dir():
        shutil.copytree(ROOT / name, copy)
    return copy


def _prompts(course: Path, pick: int) -> dict[str, str]:
    copy = _directory("prompts", course)
    target = sorted(p for p in copy.rglob("*") if p.is_file())[pick % 7]
    target.write_text(target.read_text() + "\nOne more instruction.\n")
    return {}


def _data(course: Path, pick: int) -> dict[str, str]:
    style = _directory("data", course) / "house-style.yaml"
    style.write_text(style.read_text().replace("max_minutes: 45", "max_minutes: 20", 1) if pick % 2 else
                     style.read_text() + "\n# a comment\n")
    return {}


def _brief(course: Path, pick: int) -> dict[str, str]:
    brief = course.parent.parent / "brief.yaml"
    brief.write_text(brief.read_text() + f"\n# edited {pick}\n")  # a comment: the same brief, other bytes
    return {}


MUTATIONS: list[Mutation] = [_edit, _touch, _delete, _orphan, _temporary, _decline, _environment, _prompts, _data,
                             _brief]
_TIME = re.compile(r"\d+(?:\.\d+)? s\b|\d+ min \d+ s\b")


def _commands(top: Path) -> list[list[str]]:
    return [["build", SLUG, "--yes"], ["build", SLUG], ["build", str(top / "brief.yaml"), "--yes"],
            ["build", SLUG, "--yes", "--backend", "offline"]]


def _run(args: list[str], courses: Path, env: dict[str, str]) -> tuple[int, str, str, dict[str, str]]:
    done = run_stay(*args, "--courses-dir", str(courses), env={"SOURCE_DATE_EPOCH": EPOCH, **env})
    course = courses / SLUG
    files = tree(course) if course.is_dir() else {}
    return done.returncode, done.stdout, _TIME.sub("T", done.stderr), files


def _traces(course: Path) -> int:
    """How many runs of the pipeline left a trace (a replay leaves none: nothing ran)."""
    return len(list((course / ".runs" / "traces").glob("*.jsonl")))


def _both_ways(place: tuple[Path, Path], command: int, changes: list[tuple[Mutation, int]],
               ran: list[bool] | None = None) -> list[object]:
    """The outcome of the command after the changes, with the record allowed and without.
    Each way starts from the same course, prompts, data and brief, runs the command once
    (nothing to do: it leaves the record of this very command line), then changes them."""
    courses, pristine = place
    top = courses.parent
    args = _commands(top)[command]
    outcomes: list[object] = []
    for quick in ("on", "off"):
        course = _reset(courses, pristine)
        for name in ("prompts", "data"):
            shutil.rmtree(top / f"{name}-copy", ignore_errors=True)
            _directory(name, course)
        shutil.copy(BRIEF, top / "brief.yaml")
        setting = {"STAY_PROMPTS_DIR": str(top / "prompts-copy"), "STAY_DATA_DIR": str(top / "data-copy")}
        assert _run(args, courses, setting)[0] == 0
        assert (course / ".runs" / "quick.json").is_file()
        env = dict(setting)
        for mutation, pick in changes:
            env.update(mutation(course, pick))
        traces = _traces(course)
        outcomes.append(_run(args, courses, {**env, "STAY_QUICK": quick}))
        if ran is not None:
            ran.append(_traces(course) > traces)
    return outcomes


@settings(max_examples=examples(40, dev=10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 10_000)), max_size=2),
       command=st.integers(0, 3))
def test_the_record_answers_exactly_as_the_pipeline_would(place: tuple[Path, Path], command: int,
                                                         changes: list[tuple[Mutation, int]]) -> None:
    """Differential: the same changes, the same command, once with the record allowed and
    once with STAY_QUICK=off (the pipeline always runs): the same exit code, output
    (elapsed times aside) and course, byte for byte."""
    quick, pipeline = _both_ways(place, command, changes)
    assert quick == pipeline


@pytest.mark.parametrize("mutation, pick", [(_edit, 3), (_delete, 5), (_orphan, 0), (_temporary, 1), (_decline, 0),
                                            (_environment, 2), (_prompts, 1), (_data, 2), (_brief, 0)],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_each_kind_of_input_is_in_the_fingerprint(place: tuple[Path, Path], mutation: Mutation, pick: int) -> None:
    """One change of each kind of input, through the command that reads it: the record is
    not used (it would print that nothing changed), and the answer is the pipeline's."""
    command = 2 if mutation is _brief else 0
    ran: list[bool] = []
    quick, pipeline = _both_ways(place, command, [(mutation, pick)], ran)
    assert quick == pipeline
    assert ran == [True, True]  # the record was not used


def test_with_nothing_changed_the_record_answers(place: tuple[Path, Path]) -> None:
    ran: list[bool] = []
    quick, pipeline = _both_ways(place, 0, [], ran)
    assert quick == pipeline
    assert ran == [False, True]  # answered from the record; with STAY_QUICK=off the pipeline ran


def test_a_rebuild_with_nothing_to_do_never_imports_the_pipeline(place: tuple[Path, Path]) -> None:
    courses, pristine = place
    _reset(courses, pristine)
    probe = ("import sys; from stay.cli import main; "
             f"code = main(['build', {SLUG!r}, '--yes', '--courses-dir', {str(courses)!r}]); "
             "print(code, sorted(m for m in ('stay.pipeline', 'networkx', 'pydantic') if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STAY_", "ANTHROPIC_", "OTEL_"))}
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env={**env, "SOURCE_DATE_EPOCH": EPOCH},
                          capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "0 []", done.stderr
    assert "validation: 0 FAIL, 0 WARN" in done.stdout and "repair: stopped" in done.stdout
    assert done.stderr.splitlines()[-1].startswith("0 model calls, 0 files written in ")


def test_only_a_run_that_did_nothing_and_changed_nothing_leaves_a_record(place: tuple[Path, Path]) -> None:
    courses, pristine = place
    course = _reset(courses, pristine)
    record = course / ".runs" / "quick.json"
    (course / "audience.yaml").unlink()
    assert run_stay("build", SLUG, "--yes", "--courses-dir", str(courses)).returncode == 0  # rewrote it
    assert not record.exists()
    assert run_stay("build", SLUG, "--yes", "--courses-dir", str(courses)).returncode == 0  # nothing to do
    assert json.loads(record.read_text())["code"] == 0
    assert run_stay("build", SLUG, "--yes", "--courses-dir", str(courses),
                    env={"STAY_QUICK": "off"}).returncode == 0
    assert not record.exists()  # switched off: neither used nor kept


def test_a_course_another_command_is_writing_is_left_to_the_pipeline(place: tuple[Path, Path]) -> None:
    from stay._lock import CourseLock
    from stay.errors import CourseLocked, exit_code

    courses, pristine = place
    course = _reset(courses, pristine)
    with CourseLock(course):
        done = run_stay("build", SLUG, "--yes", "--courses-dir", str(courses))
    assert done.returncode == exit_code(CourseLocked("x")) and "is being written by another" in done.stderr


def test_exporting_spans_turns_the_record_off(place: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Exporting a run's spans is a side effect only the pipeline has: never replayed."""
    import time

    from stay import _quick
    from stay.settings import OtlpTarget, Settings

    courses, pristine = place
    _reset(courses, pristine)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    for name in [k for k in os.environ if k.startswith(("STAY_", "ANTHROPIC_", "OTEL_"))]:
        monkeypatch.delenv(name)
    args = ["build", SLUG, "--yes", "--courses-dir", str(courses)]
    plain = Settings.from_env()
    exporting = plain.replace(otlp=OtlpTarget("http://127.0.0.1:9/v1/traces"))
    assert _quick.replay(args, SLUG, None, str(courses), exporting, time.monotonic()) is None
    assert capsys.readouterr() == ("", "")
    assert _quick.replay(args, SLUG, None, str(courses), plain, time.monotonic()) == 0  # the same course, replayed
    assert "validation: 0 FAIL" in capsys.readouterr().out


def test_a_record_that_cannot_be_written_or_read_never_fails_the_build(place: tuple[Path, Path]) -> None:
    courses, pristine = place
    course = _reset(courses, pristine)
    (course / ".runs" / "quick.json").unlink()
    (course / ".runs" / "quick.json").mkdir()  # neither readable as a record nor replaceable by one
    for _ in range(2):
        done = run_stay("build", SLUG, "--yes", "--courses-dir", str(courses), env={"SOURCE_DATE_EPOCH": EPOCH})
        assert done.returncode == 0, done.stderr
        assert "validation: 0 FAIL, 0 WARN" in done.stdout


def test_a_record_that_is_not_of_a_clean_run_is_never_replayed(place: tuple[Path, Path]) -> None:
    """Only a run that exited 0 is ever recorded: a record saying otherwise (or naming
    other output) is not ours, and the pipeline answers instead."""
    courses, pristine = place
    course = _reset(courses, pristine)
    record = course / ".runs" / "quick.json"
    document = json.loads(record.read_text())
    record.write_text(json.dumps({**document, "code": 1, "stdout": "everything is fine\n"}))
    traces = _traces(course)
    done = run_stay("build", SLUG, "--yes", "--courses-dir", str(courses), env={"SOURCE_DATE_EPOCH": EPOCH})
    assert done.returncode == 0 and "everything is fine" not in done.stdout
    assert _traces(course) == traces + 1  # the pipeline ran


def test_the_records_temporary_file_has_the_one_form_the_sweep_removes(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``_quick`` may not import ``stay.artefacts`` (pydantic), so it spells the form out: this holds it."""
    from stay import _quick

    renamed: list[str] = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda source, target: (renamed.append(Path(source).name),
                                                               real(source, target)))
    _quick._write(tmp_path / "quick.json", {"version": 1})
    assert len(renamed) == 1 and TEMPORARY.fullmatch(renamed[0]), renamed
    assert json.loads((tmp_path / "quick.json").read_text()) == {"version": 1}


def test_a_record_behind_a_link_out_of_the_course_is_never_read(place: tuple[Path, Path], tmp_path: Path) -> None:
    """The record, the lock and the fingerprint are read only where the pipeline would read:
    with .runs/ linked outside, the pipeline refuses the course in one line."""
    courses, pristine = place
    course = _reset(courses, pristine)
    outside = tmp_path / "runs-elsewhere"
    shutil.move(course / ".runs", outside)
    (course / ".runs").symlink_to(outside, target_is_directory=True)
    before = {p.relative_to(outside).as_posix(): p.read_bytes() for p in sorted(outside.rglob("*")) if p.is_file()}
    done = run_stay("build", SLUG, "--yes", "--courses-dir", str(courses), env={"SOURCE_DATE_EPOCH": EPOCH})
    assert done.returncode == 2 and "symlink leads outside the course" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and done.stdout == ""
    assert {p.relative_to(outside).as_posix(): p.read_bytes() for p in sorted(outside.rglob("*")) if p.is_file()} == before


@pytest.mark.parametrize("damage", ["nested", "not UTF-8", "huge"])
def test_a_damaged_record_is_only_a_miss(place: tuple[Path, Path], damage: str) -> None:
    """A record nested past any record's depth was exit 3 (RecursionError), a huge one read whole."""
    from stay._stored import MAX_STORED_BYTES, MAX_STORED_DEPTH

    courses, pristine = place
    course = _reset(courses, pristine)
    record = course / ".runs" / "quick.json"
    if damage == "huge":
        with record.open("r+b") as handle:
            handle.truncate(MAX_STORED_BYTES + 1)
    else:
        record.write_bytes(b"\xff\xfe{" if damage == "not UTF-8" else b"[" * MAX_STORED_DEPTH * 1000)
    traces = _traces(course)
    done = run_stay("build", SLUG, "--yes", "--courses-dir", str(courses), env={"SOURCE_DATE_EPOCH": EPOCH})
    assert done.returncode == 0 and "validation: 0 FAIL, 0 WARN" in done.stdout, done.stderr
    assert _traces(course) == traces + 1  # the pipeline ran
