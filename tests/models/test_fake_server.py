"""stay, end to end over real HTTP, against a fake Messages API on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stay.artefacts import (
    Assessment,
    Audience,
    Curriculum,
    Exercises,
    LessonContent,
    LessonPlan,
    Outcomes,
    Project,
    Quiz,
    dump,
)
from tests.conftest import ROOT
from tests.models.fake_api import FakeMessagesAPI, inputs_of, stage_of

SQL = ROOT / "examples" / "briefs" / "sql-window-functions.yaml"  # 12 lessons, 45 calls


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[FakeMessagesAPI, Path, subprocess.CompletedProcess[str]]:
    courses = tmp_path_factory.mktemp("courses")
    with FakeMessagesAPI() as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STAY_MODEL")}
        env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key-not-real")
        done = subprocess.run([sys.executable, "-m", "stay.cli", "build", str(SQL), "--yes", "--backend",
                               "anthropic", "--courses-dir", str(courses)],
                              env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    return api, courses / "sql-window-functions", done


def test_the_build_completes_over_http(served: tuple[FakeMessagesAPI, Path, subprocess.CompletedProcess[str]]) -> None:
    api, _course, done = served
    assert done.returncode == 0, done.stderr
    assert "backend: anthropic (analysis claude-sonnet-5-5, planning claude-opus-5-5" in done.stderr
    assert "validation: 0 FAIL, 0 WARN" in done.stdout
    assert len(api.requests) == 45


def test_every_request_carries_the_schema_and_the_cached_prefix(
    served: tuple[FakeMessagesAPI, Path, subprocess.CompletedProcess[str]],
) -> None:
    api, _course, _done = served
    for body in api.requests:
        assert body["output_config"]["format"]["type"] == "json_schema"
        assert body["output_config"]["format"]["schema"]["properties"]
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert "temperature" not in body


def test_the_files_written_are_the_servers_answers(
    served: tuple[FakeMessagesAPI, Path, subprocess.CompletedProcess[str]],
) -> None:
    api, course, _done = served
    single = {"audience": ("audience.yaml", Audience), "curriculum": ("curriculum.yaml", Curriculum),
              "outcomes": ("outcomes.yaml", Outcomes), "assessment": ("assessment.yaml", Assessment),
              "capstone": ("project.yaml", Project)}
    checked = 0
    for body, answer in zip(api.requests, api.answers, strict=True):
        stage = stage_of(body)
        if stage in single:
            path, model = single[stage]
            assert (course / path).read_text() == dump(model.model_validate(answer)), path
        elif stage == "plan":
            for plan in answer["plans"]:
                (found,) = course.glob(f"modules/*/{plan['lesson']}.plan.yaml")
                assert found.read_text() == dump(LessonPlan.model_validate(plan))
        elif stage == "content":
            plan = inputs_of(body)["plan"]
            (found,) = course.glob(f"modules/*/{plan['lesson']}.md")
            assert found.read_text() == dump(LessonContent(lesson=plan["lesson"], title=plan["title"],
                                                           body=answer["body"]))
        else:
            model = Exercises if stage == "exercises" else Quiz
            suffix = ".exercises.yaml" if stage == "exercises" else ".quiz.yaml"
            (found,) = course.glob(f"modules/*/{answer['lesson']}{suffix}")
            assert found.read_text() == dump(model.model_validate(answer))
        checked += 1
    assert checked == 45


def test_at_least_70_percent_of_input_tokens_are_cache_reads(
    served: tuple[FakeMessagesAPI, Path, subprocess.CompletedProcess[str]],
) -> None:
    api, _course, done = served
    accounting = api.accounting
    print(f"cache reads: {accounting.cache_read_input_tokens} of "
          f"{accounting.input_tokens + accounting.cache_creation_input_tokens + accounting.cache_read_input_tokens}"
          f" input tokens ({accounting.read_share:.1%})")
    assert accounting.read_share >= 0.70
    assert f"{accounting.cache_read_input_tokens} cache-read" in done.stdout  # stay counts what was billed
