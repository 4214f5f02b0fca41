"""Safe authoring: nothing written outside the course, no gate bypassed, no edit lost.

Each test repeats an attack a user or an adversary could make, and several inputs of
each kind, because a fix for one example is not a fix for the class.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import stay
from stay._lock import CourseLock
from stay.artefacts import temporary_name
from stay.errors import CourseLocked, EnvironmentProblem, PipelineError, UsageError
from stay.models import ModelAnswer, ModelRequest
from stay.pipeline import approve, build_course, run_command, status
from stay.testing import RiggedBackend
from tests.conftest import ROOT, run_stay
from tests.parity.harness import reference_report
from tests.pipeline.test_build import quiet, tree

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
SLUG = "how-http-requests-travel"


def everything(root: Path) -> dict[str, str]:
    """Every file under ``root``, hidden ones and .runs/ included, by content hash."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


cli = run_stay


def process(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``stay`` in a process of its own."""
    base = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.run([sys.executable, "-m", "stay.cli", *args], cwd=ROOT, env={**base, **(env or {})},
                          capture_output=True, text=True, check=False, timeout=timeout)




# -- 1. ids read from disk are checked like ids from a model ------------------------------

ESCAPES = ["../../../../escaped", "m01/../../../x", "..", "m01\\..\\..", "m01\x00", "m01\n", "m" + "1" * 300]


@pytest.mark.sweep
@pytest.mark.parametrize("bad", ESCAPES)
@pytest.mark.parametrize("field", ["module id", "module slug", "lesson id"])
def test_a_hand_edited_id_that_could_leave_the_course_is_refused_and_nothing_is_written(
        courses: Path, field: str, bad: str) -> None:
    curriculum = courses / SLUG / "curriculum.yaml"
    data = yaml.safe_load(curriculum.read_text())
    target = data["modules"][0]
    if field == "module id":
        target["id"] = bad
    elif field == "module slug":
        target["slug"] = bad
    else:
        target["lessons"][0]["id"] = bad
    curriculum.write_text(yaml.safe_dump(data, allow_unicode=True))
    before = everything(courses.parent)
    for command in (["build", SLUG, "--yes"], ["repair", SLUG], ["write", SLUG], ["status", SLUG],
                    ["approve", SLUG, "design"], ["plan", SLUG, "--yes"]):
        result = cli(*command, "--courses-dir", str(courses))
        assert result.returncode == 5, (command, result.stderr)
        line = result.stderr.strip().splitlines()[-1]
        assert line.startswith("refused: ") and "curriculum.yaml" in line and "field 'modules.0." in line
        assert "Traceback" not in result.stderr
    assert everything(courses.parent) == before  # nothing written, inside or outside the course


@pytest.mark.parametrize("edit", [
    ("plan", lambda d: d.update(lesson="../m01-l01")),
    ("plan", lambda d: d.update(revisits=["term\x00with a NUL"])),
    ("plan", lambda d: d["new_terms"].append({"term": "x" * 65, "definition": "d"})),
    ("course", lambda d: d.update(slug="../../elsewhere")),
], ids=["plan-lesson", "plan-term-nul", "plan-term-long", "course-slug"])
def test_ids_and_terms_in_plans_and_course_yaml_are_checked_too(courses: Path, edit: Any) -> None:
    kind, change = edit
    path = (next((courses / SLUG).glob("modules/*/m01-l01.plan.yaml")) if kind == "plan"
            else courses / SLUG / "course.yaml")
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    before = everything(courses.parent)
    with pytest.raises(stay.ArtefactError) as caught:
        build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert str(caught.value).startswith(str(path)) and "field '" in str(caught.value)
    assert everything(courses.parent) == before


class BadCurriculum(RiggedBackend):
    """Answers the curriculum stage with a damaged id, every time."""

    def __init__(self, damage: dict[str, str]) -> None:
        super().__init__()
        self.damage = damage

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        answer = super().complete(request, model)
        if request.stage != "curriculum":
            return answer
        data = json.loads(json.dumps(answer.data))
        module = data["modules"][0]
        for key, value in self.damage.items():
            if key == "lesson":
                module["lessons"][0]["id"] = value
            else:
                module[key] = value
        return answer.model_copy(update={"data": data})


@pytest.mark.parametrize("damage", [{"id": "m01\x00"}, {"lesson": "m01-l" + "0" * 300}, {"slug": "../../up"},
                                    {"id": "m01/../../.."}])
def test_a_models_bad_id_is_refused_before_it_is_written_and_later_commands_still_work(
        tmp_path: Path, damage: dict[str, str]) -> None:
    with pytest.raises(stay.AnswerError, match=r"curriculum\.yaml"):
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=BadCurriculum(damage), progress=quiet)
    assert not (tmp_path / SLUG / "curriculum.yaml").exists()
    assert not (tmp_path / SLUG / "modules").exists()
    statuses = status(SLUG, courses_dir=tmp_path)  # no exit 3 afterwards: the course is whole
    assert statuses["curriculum.yaml"].state == "missing"
    assert cli("status", SLUG, "--courses-dir", str(tmp_path)).returncode == 0


# -- 2. repair respects the gates --------------------------------------------------------


def test_repair_refuses_with_no_call_after_both_gates_are_declined(courses: Path) -> None:
    approve(SLUG, "plan", courses_dir=courses, decline=True, note="no")
    approve(SLUG, "design", courses_dir=courses, decline=True, note="no")
    before = tree(courses / SLUG)
    backend = RiggedBackend()
    with pytest.raises(PipelineError, match=r"needs the design approval to hold: the design gate was declined"):
        run_command("repair", SLUG, courses_dir=courses, backend=backend, progress=quiet)
    assert backend.total_calls == 0 and tree(courses / SLUG) == before  # only its trace, under .runs/
    result = cli("repair", SLUG, "--courses-dir", str(courses))
    assert result.returncode == 5 and "design gate was declined" in result.stderr


@pytest.mark.parametrize("gate", ["design", "plan"])
def test_repair_and_write_refuse_when_either_gate_does_not_hold(courses: Path, gate: str) -> None:
    approve(SLUG, gate, courses_dir=courses, decline=True)
    backend = RiggedBackend()
    for command in ("repair", "write"):
        with pytest.raises(PipelineError, match=f"the {gate} gate was declined"):
            run_command(command, SLUG, courses_dir=courses, backend=backend, progress=quiet)
    assert backend.total_calls == 0


def test_repair_straight_after_new_is_a_clear_refusal(tmp_path: Path) -> None:
    assert cli("new", str(HTTP), "--courses-dir", str(tmp_path)).returncode == 0
    result = cli("repair", SLUG, "--courses-dir", str(tmp_path))
    assert result.returncode == 5
    assert "needs the design approval to hold: the design gate has not been answered" in result.stderr
    assert "internal error" not in result.stderr and "KeyError" not in result.stderr


# -- 3. no edit is ever lost -------------------------------------------------------------


def test_a_hand_added_paragraph_with_a_banned_word_survives_a_build(courses: Path) -> None:
    lesson = next((courses / SLUG).glob("modules/*/m01-l02.md"))
    edited = lesson.read_text() + "\nYou simply send the request again, as a person added here.\n"
    lesson.write_text(edited)
    result = build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert lesson.read_text() == edited
    assert result.validation is not None and "les009" in {d.code for d in result.validation.defects}
    assert result.repair is not None and result.repair.edited == (lesson.relative_to(courses / SLUG).as_posix(),)
    assert status(SLUG, courses_dir=courses)[lesson.relative_to(courses / SLUG).as_posix()].state == "edited"


def test_a_hand_edited_quiz_that_breaks_the_schema_survives_a_build(courses: Path) -> None:
    quiz = next((courses / SLUG).glob("modules/*/m02-l01.quiz.yaml"))
    edited = quiz.read_text().replace("type: short", "type: essay", 1).replace("type: mcq", "type: essay", 1)
    quiz.write_text(edited)
    lines: list[str] = []
    result = build_course(SLUG, courses_dir=courses, yes=True, progress=lines.append)
    assert quiz.read_text() == edited
    rel = quiz.relative_to(courses / SLUG).as_posix()
    assert any(f"repair: {rel}: edited by hand, so repair leaves it" in line for line in lines)
    assert result.validation is not None
    found = [d for d in result.validation.defects if d.path == rel]
    assert found and all(f"  {d.line()}" in lines for d in found)  # each defect in the validator's words


def test_a_hand_edit_that_breaks_a_rule_says_which_rule_how_and_where_the_house_style_is(courses: Path) -> None:
    """`stay build` over a lesson a person edited into banned phrases (house style's own,
    whichever it lists) names each defect as the validator words it, the phrases among
    them, and the house-style file that bans them."""
    from stay.settings import Settings
    from stay.validate import HouseData, validate_course

    house = Settings.from_env().resolved_data_dir() / "house-style.yaml"
    banned = HouseData.load(house.parent)["prose.banned_phrases"][-2:]
    lesson = next((courses / SLUG).glob("modules/*/m01-l02.md"))
    lesson.write_text(lesson.read_text() + "".join(f"\nA person adds: it is {p} done.\n" for p in banned))
    built = cli("build", SLUG, "--yes", "--courses-dir", str(courses))
    assert built.returncode == 1, built.stderr
    rel = lesson.relative_to(courses / SLUG).as_posix()
    found = [d for d in validate_course(courses / SLUG).defects if d.path == rel]
    assert found and all(f"\n  {d.line()}\n" in built.stderr for d in found), built.stderr
    assert all(repr(p) in built.stderr for p in banned) and "checked against (banned phrases" in built.stderr
    assert str(house) in built.stderr


def test_an_edited_file_behind_a_changed_input_shows_both_and_is_never_marked_current(courses: Path) -> None:
    root = courses / SLUG
    lesson = next(root.glob("modules/*/m01-l01.md"))
    plan = next(root.glob("modules/*/m01-l01.plan.yaml"))
    rel, plan_rel = (p.relative_to(root).as_posix() for p in (lesson, plan))
    lesson.write_text(lesson.read_text() + "\nA person's note.\n")
    # an edit the validator passes: one that FAILs (a title unlike the curriculum's) stops --yes at the plan gate
    plan.write_text(plan.read_text().replace("definition: '", "definition: 'Revised: ", 1))
    found = status(SLUG, courses_dir=courses)
    assert found[rel] == ("edited", [plan_rel])
    shown = cli("status", SLUG, "--courses-dir", str(courses)).stdout
    assert f"edited   {rel}  <- {plan_rel} (edited by hand, and its inputs changed since)" in shown
    ledger_before = json.loads((root / ".state" / "hashes.json").read_text())["artefacts"][rel]
    build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert json.loads((root / ".state" / "hashes.json").read_text())["artefacts"][rel] == ledger_before
    assert status(SLUG, courses_dir=courses)[rel] == ("edited", [plan_rel])
    assert lesson.read_text().endswith("A person's note.\n")


def test_approving_a_gate_accepts_the_edits_it_covers(courses: Path) -> None:
    curriculum = courses / SLUG / "curriculum.yaml"
    curriculum.write_text(curriculum.read_text().replace("title:", "title: Edited -", 1))
    assert status(SLUG, courses_dir=courses)["curriculum.yaml"].state == "edited"
    build_course(SLUG, courses_dir=courses, progress=quiet)  # regenerates what depends on it, stops at the gate
    approve(SLUG, "design", courses_dir=courses, by="reviewer")
    assert status(SLUG, courses_dir=courses)["curriculum.yaml"] == ("current", [])


# -- 4. a course always matches its curriculum --------------------------------------------


def _shrink_budget(root: Path) -> None:
    audience = root / "audience.yaml"
    audience.write_text(audience.read_text().replace("time_budget_minutes: 180", "time_budget_minutes: 60"))


def test_files_the_curriculum_dropped_are_orphaned_then_retired_never_deleted(courses: Path) -> None:
    root = courses / SLUG
    before = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.glob("modules/**/*") if p.is_file()}
    _shrink_budget(root)
    stopped = build_course(SLUG, courses_dir=courses, progress=quiet)  # regenerates the design, stops at the gate
    assert stopped.stopped_at == "design gate"
    orphans = sorted(p for p, s in status(SLUG, courses_dir=courses).items() if s.state == "orphaned")
    assert orphans, "a smaller curriculum leaves lesson files behind"
    result = build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert sorted(result.retired) == orphans
    run = result.retired and next(root.glob(".state/retired/run-*"))
    for path in orphans:
        assert (run / path).read_bytes() == before[path]  # moved, byte for byte
        assert not (root / path).exists()
    assert not any(s.state == "orphaned" for s in status(SLUG, courses_dir=courses).values())
    assert reference_report(root, strict=True)["summary"]["fail"] == 0
    log = (root / ".state" / "run-log.md").read_text()
    assert all(f"- retired {p} to .state/retired/" in log for p in orphans)


def test_a_changed_brief_under_the_same_slug_leaves_a_course_that_passes_strict(courses: Path, tmp_path: Path) -> None:
    brief = tmp_path / "brief.yaml"
    brief.write_text(HTTP.read_text().replace("time_available: 5 hours", "time_available: 100 minutes"))
    result = build_course(brief, courses_dir=courses, yes=True, slug=SLUG, progress=quiet)
    assert result.complete and result.retired
    assert reference_report(courses / SLUG, strict=True)["summary"]["fail"] == 0
    assert cli("validate", "--strict", str(courses / SLUG)).returncode == 0


# -- 5. one run at a time per course ----------------------------------------------------


def test_a_second_writer_is_refused_at_once_naming_the_holder(courses: Path) -> None:
    with CourseLock(courses / SLUG):
        other = process("build", SLUG, "--yes", "--courses-dir", str(courses))  # another process, at once
        assert other.returncode == 5 and f"(pid {os.getpid()})" in other.stderr
        for command in (["build", SLUG, "--yes"], ["repair", SLUG], ["approve", SLUG, "plan"], ["adopt", SLUG]):
            started = time.monotonic()
            result = cli(*command, "--courses-dir", str(courses))
            assert result.returncode == 5, (command, result.stderr)
            assert f"(pid {os.getpid()})" in result.stderr and time.monotonic() - started < 30
        for command in (["status", SLUG, "--courses-dir", str(courses)], ["validate", str(courses)], ["graph"]):
            assert cli(*command).returncode == 0, command  # readers take no lock
        with pytest.raises(CourseLocked, match="is being written by another stay command"):
            build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert build_course(SLUG, courses_dir=courses, yes=True, progress=quiet).complete


def test_two_concurrent_builds_never_both_run(tmp_path: Path) -> None:
    assert cli("new", str(HTTP), "--courses-dir", str(tmp_path)).returncode == 0
    procs = [subprocess.Popen([sys.executable, "-m", "stay.cli", "build", SLUG, "--yes", "--courses-dir",
                               str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    codes = sorted(p.wait(timeout=120) for p in procs)
    assert codes in ([0, 0], [0, 5])  # one after the other, or one refused: never both at once
    log = (tmp_path / SLUG / ".state" / "run-log.md").read_text()
    assert log.count("## run ") == 1 + codes.count(0) - (1 if codes == [0, 0] else 0)


class _HeldScreen(RiggedBackend):
    """Holds its brief's screen until ``go`` is set, saying so in ``screening``."""

    def __init__(self) -> None:
        super().__init__()
        self.screening, self.go = threading.Event(), threading.Event()

    def screen(self, text: str) -> str | None:
        self.screening.set()
        assert self.go.wait(60), "the test never let the screen go on"
        return super().screen(text)


def test_a_new_course_is_locked_from_its_first_byte(tmp_path: Path) -> None:
    """Issue 37: a second build of a new course arriving while the first screens its brief
    (nothing of the course written yet) is refused naming the first's pid, and pays nothing."""
    clean = RiggedBackend()
    build_course(HTTP, courses_dir=tmp_path / "clean", yes=True, backend=clean, progress=quiet)
    first, courses = _HeldScreen(), tmp_path / "courses"
    done: list[stay.BuildResult] = []
    worker = threading.Thread(target=lambda: done.append(
        build_course(HTTP, courses_dir=courses, yes=True, backend=first, progress=quiet)))
    worker.start()
    try:
        assert first.screening.wait(60)
        assert not (courses / SLUG / "course.yaml").exists()  # before scaffold: only the lock exists
        refused = cli("build", str(HTTP), "--yes", "--courses-dir", str(courses))
        assert refused.returncode == 5, refused.stderr
        refusal = [line for line in refused.stderr.splitlines() if line.startswith("refused:")]
        assert len(refusal) == 1 and f"(pid {os.getpid()})" in refusal[0] and "Traceback" not in refused.stderr
        second = RiggedBackend()
        with pytest.raises(CourseLocked, match=f"pid {os.getpid()}"):
            build_course(HTTP, courses_dir=courses, yes=True, backend=second, progress=quiet)
        assert second.total_calls == 0 and second.screened == []
    finally:
        first.go.set()
        worker.join(120)
    assert done and done[0].complete and first.calls == clean.calls


# -- 6. interrupts and leftovers -----------------------------------------------------------


class _Hang:
    """A TCP server that accepts and never answers: every model call hangs."""

    def __enter__(self) -> _Hang:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.conns: list[socket.socket] = []
        self.stop = threading.Event()

        def accept() -> None:
            self.sock.settimeout(0.2)
            while not self.stop.is_set():
                try:
                    self.conns.append(self.sock.accept()[0])
                except OSError:
                    continue

        threading.Thread(target=accept, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        for conn in self.conns:
            conn.close()
        self.sock.close()


def test_ctrl_c_during_a_hanging_wave_exits_130_within_two_seconds(tmp_path: Path) -> None:
    build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    root = tmp_path / SLUG
    for lesson in root.glob("modules/*/*.md"):
        lesson.unlink()  # the wave has work to do
    with _Hang() as hang:
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key-0000", "ANTHROPIC_BASE_URL": hang.url}
        proc = subprocess.Popen([sys.executable, "-m", "stay.cli", "write", SLUG, "--courses-dir", str(tmp_path),
                                 "--backend", "anthropic"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not hang.conns:
            time.sleep(0.02)
        assert hang.conns, "no call reached the server"
        time.sleep(0.2)  # a call is in flight and hanging (the first waits on no answer, the rest on it)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
        elapsed = time.monotonic() - sent
    assert proc.returncode == 130, err
    assert elapsed < 2.0, elapsed
    assert "Traceback" not in err and "interrupted" in err
    assert not list(root.rglob("*.tmp"))


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the probe forks a child per point")
@pytest.mark.parametrize("args", [["--help"], ["build"]], ids=["help", "usage-error"])
def test_ctrl_c_at_any_seam_of_start_up_or_exit_exits_130_without_a_traceback(args: list[str]) -> None:
    """A Ctrl-C delivered on each line where its handling changes hands (stay/__init__,
    the cli module, main, the code that turns errors into exit codes; every 25th line
    elsewhere) ends with 130 and one line. Only a signal that lands before stay/__init__
    has installed its handler is the interpreter's, and may print a traceback."""
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "sigint_probe.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    head, *points = [json.loads(line) for line in done.stdout.splitlines()]
    assert head["points"] > 100 and len(points) > 40  # the probe really walked stay's start-up
    install = next(n for n, line in enumerate((ROOT / "stay" / "__init__.py").read_text().splitlines(), start=1)
                   if "signal.signal(" in line)
    assert any(p["where"] == f"__init__.py:<module>:{install}" for p in points)
    wrong = []
    for point in points:
        file, function, line = point["where"].split(":")
        before_ours = file == "__init__.py" and function == "<module>" and int(line) <= install
        if before_ours:
            continue
        if point["code"] != 130 or "Traceback" in point["stderr"] or "interrupted" not in point["stderr"]:
            wrong.append(f"{point['where']}: exit {point['code']}: {point['stderr'][-300:]}")
    assert not wrong, "\n".join(wrong)


def test_temporary_files_a_killed_run_left_are_removed_by_the_next_run(courses: Path) -> None:
    root = courses / SLUG
    leftovers = [root / temporary_name("course.yaml"), next(root.glob("modules/*")) / temporary_name("m01-l01.md"),
                 root / ".state" / temporary_name("hashes.json")]
    for path in leftovers:
        path.write_text("half a file")
    build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert not any(path.exists() for path in leftovers)


# -- 7. exit codes mean what the README says --------------------------------------------------


def test_a_courses_dir_that_is_a_file_is_one_line_naming_it(tmp_path: Path) -> None:
    file = tmp_path / "not-a-dir"
    file.write_text("x")
    for command in (["build", str(HTTP)], ["status", SLUG], ["approve", SLUG, "design"]):
        result = cli(*command, "--courses-dir", str(file))
        assert result.returncode == 2 and result.stderr.count("\n") == 1
        assert str(file) in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("ledger, text", [("hashes.json", "{not json"), ("hashes.json", '{"artefacts": [1]}'),
                                          ("gates.json", "\xff\xfe garbage"), ("gates.json", '{"gates": 7}')])
def test_a_damaged_ledger_says_run_adopt_and_adopt_mends_it(courses: Path, ledger: str, text: str) -> None:
    (courses / SLUG / ".state" / ledger).write_text(text, encoding="latin-1")
    for command in (["status", SLUG], ["build", SLUG]):
        result = cli(*command, "--courses-dir", str(courses))
        assert result.returncode == 2, result.stderr
        assert f".state/{ledger} is damaged" in result.stderr and f"run `stay adopt {SLUG}`" in result.stderr
        assert "a bug in stay" not in result.stderr
    assert cli("adopt", SLUG, "--courses-dir", str(courses)).returncode == 0
    assert cli("status", SLUG, "--courses-dir", str(courses)).returncode == 0


def test_a_full_disk_is_one_line_naming_the_path_and_the_file_on_disk_is_whole(
        courses: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import stay.artefacts as _io

    root = courses / SLUG
    lesson = next(root.glob("modules/*/m01-l01.md"))
    original = lesson.read_bytes()
    lesson.unlink()

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_io.os, "fsync", full)
    with pytest.raises(EnvironmentProblem, match="no space left on the device"):
        build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert not lesson.exists() and not list(root.rglob("*.tmp"))
    monkeypatch.undo()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    build_course(SLUG, courses_dir=courses, yes=True, progress=quiet)
    assert lesson.read_bytes() == original


def test_a_closed_stdout_pipe_ends_quietly(courses: Path) -> None:
    command = (f"{sys.executable} -m stay.cli status {SLUG} --courses-dir {courses} | head -1; "
               f"{sys.executable} -m stay.cli graph | head -1")
    result = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.stderr == "" and len(result.stdout.splitlines()) == 2


def test_an_api_key_in_an_error_is_never_printed(tmp_path: Path) -> None:
    key = "sk-ant-api03-SECRETSECRETSECRET"
    result = cli("status", key, "--courses-dir", str(tmp_path), env={"ANTHROPIC_API_KEY": key})
    assert result.returncode == 2 and key not in result.stderr and "[redacted]" in result.stderr


def test_exit_codes_come_from_one_table_keyed_by_class() -> None:
    from stay import errors

    assert errors.exit_code(errors.ModelUnavailable("x")) == 6
    assert errors.exit_code(errors.TruncationError("x")) == 5
    assert errors.exit_code(errors.EnvironmentProblem("x")) == 2
    assert errors.exit_code(errors.BriefError("x")) == 2
    assert errors.exit_code(errors.CourseLocked("x")) == 5
    assert errors.exit_code(errors.GraphError("x")) == 3
    assert errors.exit_code(KeyError("x")) == 3


# -- 8. bad briefs are refused early ------------------------------------------------------------


def _brief(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "brief.yaml"
    path.write_text(text)
    return path


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)) + "title: *i\n"


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    path = _brief(tmp_path, BOMB)
    assert len(BOMB) < 1024
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from stay.cli import main; sys.exit(main(sys.argv[1:]))")
    result = subprocess.run([sys.executable, "-c", code, "new", str(path), "--courses-dir", str(tmp_path / "c")],
                            cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and "anchors or aliases" in result.stderr
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("text, fragment", [
    ("title: T\ntopic: t\naudience: a\ntime_available: 3 hours\ncontraints: [x]\n",
     "unknown field 'contraints'; did you mean 'constraints'?"),
    ("title: T\ntopic: t\naudience: a\ntime_available: 3 hours\ntitel: x\n", "did you mean 'title'?"),
    ("title: T\ntopic: t\naudience: a\ntime_available: 6 months\n", "'months' is not a unit stay accepts"),
    ("title: T\ntopic: t\naudience: a\ntime_available: 3 semesters\n", "'semesters' is not a unit"),
    ("title: T\ntopic: t\naudience: a\ntime_available: 52 weeks\n", "the longest course house style allows is 2,700"),
    ("title: T\ntopic: t\naudience: a\ntime_available: " + "9" * 400 + " hours\n", "far longer than any course"),
    ("title: T\ntopic: t\naudience: a\ntime_available: soon\n", "cannot read 'soon' as a duration"),
    ("title: T\ntopic: t\naudience: a\ntime_available: 2-3 hours\n", "is a range"),
    ("title: T\ntopic: t\naudience: a\ntime_available: 3 hours\nconstraints: " + "[" * 25 + "]" * 25 + "\n",
     "nests deeper than 20 levels"),
    ("title: T\ntopic: " + "x" * 70_000 + "\naudience: a\ntime_available: 3 hours\n", "larger than 64 KB"),
    ("title: &t T\ntopic: *t\naudience: a\ntime_available: 3 hours\n", "anchors or aliases"),
    ("- just\n- a list\n", "a brief is a mapping"),
], ids=["typo", "typo-title", "months", "semesters", "52-weeks", "huge-number", "soon", "range", "deep", "large",
        "alias", "list"])
def test_a_bad_brief_is_one_line_the_same_from_python_and_the_command_line(
        tmp_path: Path, text: str, fragment: str) -> None:
    path = _brief(tmp_path, text)
    with pytest.raises(stay.BriefError) as from_python:
        stay.Brief.from_yaml(path)
    with pytest.raises(UsageError) as from_build:
        build_course(path, courses_dir=tmp_path / "c", progress=quiet)
    assert str(from_python.value) == str(from_build.value)
    assert fragment in str(from_python.value) and str(path) in str(from_python.value)
    result = cli("new", str(path), "--courses-dir", str(tmp_path / "c"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and fragment in result.stderr
    assert not (tmp_path / "c").exists()


def test_the_default_duration_limits_are_the_shipped_house_styles() -> None:
    from stay.artefacts import DEFAULT_LIMITS
    from stay.briefs import house_limits
    from stay.validate import HouseData

    assert house_limits(HouseData.load(ROOT / "data")) == DEFAULT_LIMITS


@pytest.mark.parametrize("value", ["soon", "12345678901234567890", "-5"])
def test_a_bad_source_date_epoch_is_one_line(tmp_path: Path, value: str) -> None:
    result = cli("new", str(HTTP), "--courses-dir", str(tmp_path), env={"SOURCE_DATE_EPOCH": value})
    assert result.returncode in (0, 2)
    if value != "-5":
        assert result.returncode == 2 and "SOURCE_DATE_EPOCH" in result.stderr and result.stderr.count("\n") == 1


# -- 10. a CLI for people ------------------------------------------------------------------------


def test_version_and_hints_that_carry_the_courses_dir(tmp_path: Path) -> None:
    version = cli("--version")
    # stay's version first, then the installed backends (tests/models/test_plugins.py checks those lines)
    assert version.returncode == 0 and version.stdout.splitlines()[0] == f"stay {stay.__version__}"
    where = tmp_path / "my courses"
    new = cli("new", str(HTTP), "--courses-dir", str(where))
    assert f"`stay approve {SLUG} design --courses-dir '{where}'`" in new.stdout
    refused = cli("write", SLUG, "--courses-dir", str(where))
    assert refused.returncode == 5 and f"--courses-dir '{where}'`" in refused.stderr
