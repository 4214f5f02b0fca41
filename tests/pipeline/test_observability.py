"""Moderation before anything is written, traces of every run, and no secret anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stay.artefacts import DEFAULT_LIMITS, Brief
from stay.pipeline import build_course
from stay.pipeline._run import Run, RunConfig
from stay.pipeline._runner import HANDLERS
from stay.pipeline._state import Sources
from stay.settings import Settings
from stay.stages import REGISTRY, Prompts
from stay.testing import RiggedBackend
from stay.validate import OWNERS
from tests.conftest import ROOT
from tests.expected import LESSON_WRITERS
from tests.pipeline.test_build import quiet

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
SECRET = "sk-ant-api03-THIS-IS-A-TEST-SECRET-0123456789"


def test_the_screen_sees_the_whole_brief_as_one_message(tmp_path: Path) -> None:
    backend = RiggedBackend()
    build_course(HTTP, courses_dir=tmp_path, backend=backend, progress=quiet)
    (message,) = backend.screened
    brief = Brief.from_yaml(HTTP)
    for value in (brief.title, brief.audience, brief.time_available, *(brief.constraints or [])):
        assert " ".join(value.split()) in " ".join(message.split())


def test_an_empty_brief_makes_no_screening_call(tmp_path: Path) -> None:
    backend = RiggedBackend(flag="would reject anything")
    empty = Brief.model_construct(title=" ", topic="", audience="\n", time_available="  ")
    run = Run.start(RunConfig(command="build", slug="x", root=tmp_path / "x", courses_arg=str(tmp_path), authors=(),
                              settings=Settings(), prompts=Prompts.load(), stages=REGISTRY, limits=DEFAULT_LIMITS,
                              sources=Sources(Prompts.load(), Settings().models)),
                    backend, quiet, empty)
    HANDLERS["moderate"](run)  # no exception: nothing to screen
    assert backend.screened == []


def test_every_run_writes_a_trace_with_a_span_per_node_and_scores(tmp_path: Path) -> None:
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=RiggedBackend(), progress=quiet)
    path = result.course_dir / ".runs" / "traces" / f"{result.trace_id}.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert {r["trace_id"] for r in records} == {result.trace_id}
    assert {r["session_id"] for r in records} == {result.slug}
    spans = {r["name"]: r for r in records if r["type"] == "span"}
    assert {"moderate", "scaffold", "audience", "design_ask", "plan_modules", "write_lesson",
            "gather", "merge_glossary", "land_manifest", "validate", "repair"} <= set(spans)
    assert spans["audience"]["calls"][0]["stage"] == "audience"
    assert spans["audience"]["models"] == ["offline"] and spans["audience"]["input_tokens"] > 0
    assert len(spans["write_lesson"]["calls"]) == 6 * len(LESSON_WRITERS)  # the calls it started, while gather waits
    assert [c["stage"] for c in spans["write_capstone"]["calls"]] == ["capstone"]
    assert spans["gather"]["calls"] == []
    assert all("seconds" in span and "cache_read_input_tokens" in span for span in spans.values())
    scores = {r["name"]: r["value"] for r in records if r["type"] == "score"}
    assert scores == {**{f"validator_{owner}": 0 for owner in OWNERS},
                      "validator_checks_run": result.validation.checks}  # type: ignore[union-attr]


def test_scores_count_defects_per_owner(tmp_path: Path) -> None:
    backend = RiggedBackend(defects={"banned-phrase": None})
    result = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, progress=quiet)
    path = result.course_dir / ".runs" / "traces" / f"{result.trace_id}.jsonl"
    scores = {r["name"]: r["value"] for r in map(json.loads, path.read_text().splitlines())
              if r["type"] == "score"}
    assert scores["validator_content"] == 6 and scores["validator_quiz"] == 0


def test_the_api_key_never_reaches_a_trace_a_log_or_a_file(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    lines: list[str] = []
    build_course(HTTP, courses_dir=tmp_path, yes=True, backend=RiggedBackend(), progress=lines.append)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(".runs" in p.parts for p in written) and any(p.name == "run-log.md" for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
        assert SECRET[:16].encode() not in path.read_bytes(), path
    assert not any(SECRET[:16] in line for line in lines)
