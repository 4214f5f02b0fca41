"""build_course end to end on the offline backend: complete, valid, deterministic, resumable."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import yaml

import stay
from stay.artefacts import load
from stay.pipeline import BriefRejected, approve, build_course, run_command, status
from stay.testing import InjectedFault, RiggedBackend
from tests.conftest import ROOT, SAMPLE
from tests.expected import OFFLINE, curriculum_of, total_calls, wave_tasks
from tests.parity.harness import reference_report

BRIEFS = sorted((ROOT / "examples" / "briefs").glob("*.yaml"))
HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"


def quiet(_line: str) -> None:
    pass


def tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every file's hash, .runs/ (traces and caches, never course content) left out."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in skip and ".runs" not in p.relative_to(root).parts}


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.mark.sweep
@pytest.mark.parametrize("brief", BRIEFS, ids=lambda p: p.stem)
def test_every_example_brief_builds_offline_and_passes_the_frozen_reference_strictly(
    brief: Path, tmp_path: Path
) -> None:
    result = build_course(brief, courses_dir=tmp_path, yes=True, progress=quiet)
    assert result.complete and result.calls > 0
    assert result.validation is not None and result.validation.defects == ()
    report = reference_report(result.course_dir, strict=True)
    assert report["courses"][0]["defects"] == []
    assert report["summary"]["fail"] == 0 and len(report["courses"][0]["evaluated"]) >= 95
    gates = (result.course_dir / ".state" / "gates.json").read_text()
    assert gates.count('"by": "auto-approved (--yes)"') == 2


def test_building_again_makes_no_model_call_and_changes_no_byte(tmp_path: Path) -> None:
    first = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    before = tree(tmp_path)
    backend = RiggedBackend()
    again = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    assert (again.calls, backend.total_calls, again.written) == (0, 0, ())
    assert tree(tmp_path) == before
    assert first.validation is not None and again.validation is not None
    assert again.validation.defects == first.validation.defects == ()


def test_two_fresh_builds_are_byte_identical_run_logs_included(tmp_path: Path) -> None:
    a = build_course(HTTP, courses_dir=tmp_path / "a", yes=True, progress=quiet)
    b = build_course(HTTP, courses_dir=tmp_path / "b", yes=True, progress=quiet)
    assert tree(a.course_dir) == tree(b.course_dir)
    assert "## run 1: build (offline)" in (a.course_dir / ".state" / "run-log.md").read_text()


def test_the_gates_stop_resume_and_retire(tmp_path: Path) -> None:
    brief = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"
    slug = "incident-postmortems"
    first = build_course(brief, courses_dir=tmp_path, progress=quiet)
    curriculum = curriculum_of(first.course_dir)
    assert first.stopped_at == "design gate" and first.calls == total_calls(curriculum, phases=("design",))
    assert "review .state/design-gate.md" in first.reason
    summary = (first.course_dir / ".state" / "design-gate.md").read_text()
    assert "minutes against a budget of 45" in summary  # the lessons' share of the brief's 75 minutes
    assert not (first.course_dir / "modules").exists()

    approve(slug, "design", courses_dir=tmp_path, by="reviewer")
    second = build_course(brief, courses_dir=tmp_path, progress=quiet)
    assert second.stopped_at == "plan gate" and second.calls == total_calls(curriculum, phases=("plan",))

    curriculum = first.course_dir / "curriculum.yaml"
    curriculum.write_text(curriculum.read_text().replace("summary: Lessons on", "summary: Lessons about", 1))
    with pytest.raises(stay.PipelineError, match=r"curriculum\.yaml changed since the design gate"):
        run_command("plan", slug, courses_dir=tmp_path, progress=quiet)
    statuses = status(slug, courses_dir=tmp_path)
    assert statuses["curriculum.yaml"] == ("edited", [])
    assert statuses["outcomes.yaml"] == ("stale", ["curriculum.yaml"])
    plan_path = next(p for p in statuses if p.endswith(".plan.yaml"))
    assert statuses[plan_path] == ("stale", ["curriculum.yaml"])

    third = build_course(brief, courses_dir=tmp_path, progress=quiet)  # keeps the edit, refreshes
    assert third.stopped_at == "design gate" and "curriculum.yaml changed" in third.reason
    assert "Lessons about" in curriculum.read_text()
    approve(slug, "design", courses_dir=tmp_path, by="reviewer")
    approve_plan = run_command("plan", slug, courses_dir=tmp_path, progress=quiet)
    assert approve_plan.stopped_at == "plan gate"
    approve(slug, "plan", courses_dir=tmp_path, by="reviewer")
    done = run_command("write", slug, courses_dir=tmp_path, progress=quiet)
    assert done.complete and done.validation is not None and done.validation.fails == 0
    shutil.rmtree(tmp_path / slug / ".runs", ignore_errors=True)  # a cache eviction, not a withdrawal
    assert stay.pipeline.gate_status(slug, courses_dir=tmp_path) == {"design": "approved",
                                                                     "plan": "approved"}


def test_a_declined_gate_stops_the_build_until_approved(tmp_path: Path) -> None:
    brief = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"
    build_course(brief, courses_dir=tmp_path, progress=quiet)
    approve("incident-postmortems", "design", courses_dir=tmp_path, decline=True, note="too short")
    result = build_course(brief, courses_dir=tmp_path, progress=quiet)
    assert result.stopped_at == "design gate" and "declined" in result.reason


def test_adopt_makes_a_hand_written_course_current_with_no_model_call(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / SAMPLE.name)
    before = status(SAMPLE.name, courses_dir=tmp_path)
    assert {s for s, _why in before.values()} == {"edited"}  # no ledger: written elsewhere
    after = stay.adopt(SAMPLE.name, courses_dir=tmp_path)
    assert {s for s, _why in after.values()} == {"current"}
    backend = RiggedBackend()
    approve(SAMPLE.name, "design", courses_dir=tmp_path, by="reviewer")
    approve(SAMPLE.name, "plan", courses_dir=tmp_path, by="reviewer")
    result = build_course(HTTP, courses_dir=tmp_path, backend=backend, progress=quiet)
    assert result.complete and backend.total_calls == 0
    assert result.validation is not None and result.validation.defects == ()


def test_a_hand_edited_lesson_is_kept_by_a_rebuild(tmp_path: Path) -> None:
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    lesson = next(result.course_dir.glob("modules/*/m01-l01.md"))
    lesson.write_text(lesson.read_text() + "\nA line a person added.\n")
    again = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=quiet)
    assert again.calls == 0 and lesson.read_text().endswith("A line a person added.\n")


@pytest.mark.parametrize("slug", ["../escape", "a/b", "..", "UPPER", "x" * 61, "-lead", "/abs"])
def test_a_slug_that_could_leave_the_courses_directory_is_refused(tmp_path: Path, slug: str) -> None:
    with pytest.raises(stay.UsageError, match="is not a course slug"):
        build_course(HTTP, courses_dir=tmp_path / "courses", slug=slug, progress=quiet)
    assert not (tmp_path / "courses").exists() and not (tmp_path / "escape").exists()


@pytest.mark.parametrize("field", ["title", "topic", "audience", "time_available"])
def test_a_brief_missing_a_field_is_a_one_line_error_naming_it(tmp_path: Path, field: str) -> None:
    data = yaml.safe_load(HTTP.read_text())
    del data[field]
    brief = tmp_path / "brief.yaml"
    brief.write_text(yaml.safe_dump(data))
    with pytest.raises(stay.UsageError) as caught:
        build_course(brief, courses_dir=tmp_path / "courses", progress=quiet)
    message = str(caught.value)
    assert f"field '{field}' is missing" in message and str(brief) in message and "\n" not in message
    assert not (tmp_path / "courses").exists()


def test_a_brief_shorter_than_one_lesson_is_refused(tmp_path: Path) -> None:
    brief = tmp_path / "brief.yaml"
    brief.write_text(HTTP.read_text().replace("time_available: 5 hours", "time_available: 5 minutes"))
    with pytest.raises(stay.UsageError, match="is 5 minutes, shorter than the shortest lesson house style allows"):
        build_course(brief, courses_dir=tmp_path / "courses", progress=quiet)
    assert not (tmp_path / "courses").exists()


def test_an_unreadable_duration_is_refused_naming_the_field(tmp_path: Path) -> None:
    brief = tmp_path / "brief.yaml"
    brief.write_text(HTTP.read_text().replace("time_available: 5 hours", "time_available: soon"))
    with pytest.raises(stay.UsageError, match="field 'time_available': cannot read 'soon'"):
        build_course(brief, courses_dir=tmp_path, progress=quiet)


def test_a_crash_mid_wave_leaves_whole_files_and_a_rerun_finishes_the_same_course(tmp_path: Path) -> None:
    clean = build_course(HTTP, courses_dir=tmp_path / "clean", yes=True, progress=quiet)
    crashing = RiggedBackend(errors={"quiz": 1})
    with pytest.raises(InjectedFault):
        build_course(HTTP, courses_dir=tmp_path / "crash", yes=True, backend=crashing, progress=quiet)
    course = tmp_path / "crash" / clean.slug
    for path in course.rglob("*.yaml"):
        load(path) if not path.name.startswith(".") and path.parent.name != ".state" else None
    assert not list(course.rglob("*.tmp"))
    resumed = build_course(HTTP, courses_dir=tmp_path / "crash", yes=True, progress=quiet)
    assert resumed.complete and 0 < resumed.calls < clean.calls
    skip = ("run-log.md",)
    assert tree(course, skip) == tree(clean.course_dir, skip)


def test_a_flagged_brief_is_rejected_before_any_directory_exists(tmp_path: Path) -> None:
    backend = RiggedBackend(flag="violent content")
    with pytest.raises(BriefRejected, match=r"^Course brief rejected by input moderation: violent content$"):
        build_course(HTTP, courses_dir=tmp_path / "courses", backend=backend, progress=quiet)
    assert not (tmp_path / "courses").exists()
    assert backend.total_calls == 0


def test_a_screening_error_warns_and_continues(tmp_path: Path) -> None:
    class Flaky(RiggedBackend):
        def screen(self, text: str) -> str | None:
            raise TimeoutError("moderation endpoint slow")

    lines: list[str] = []
    result = build_course(HTTP, courses_dir=tmp_path, backend=Flaky(), progress=lines.append)
    assert result.stopped_at == "design gate"
    assert any(line.startswith("warning: input moderation failed (TimeoutError") for line in lines)


def test_the_offline_backend_is_announced_in_one_line(tmp_path: Path) -> None:
    lines: list[str] = []
    build_course(HTTP, courses_dir=tmp_path, progress=lines.append)
    announced = [line for line in lines if line.startswith("backend: offline")]
    assert announced == ["backend: offline (ANTHROPIC_API_KEY is not set): deterministic template "
                         "prose, no network"]


def test_progress_names_every_stage_and_every_lesson(tmp_path: Path) -> None:
    lines: list[str] = []
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=lines.append)
    for stage in OFFLINE:  # an offline build reviews nothing: it has no review node
        if stage.phase != "wave":
            assert f"[{stage.node_name}]" in lines
    tasks = wave_tasks(curriculum_of(result.course_dir))  # the lessons and the capstone
    counted = [line for line in lines if line.strip().startswith("[") and f"/{tasks}]" in line]
    assert len(counted) == tasks
