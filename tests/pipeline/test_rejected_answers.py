"""A rejected answer is never replayed: an answer that fails its stage's check (the
schema, then the stage's own checks) leaves the request cache for ``.runs/rejected/``,
so "ask again" is true: the rerun asks the model again and, with a good answer,
finishes. For every stage, not just the plan's."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import stay.pipeline._runner
from stay.errors import EXIT_REFUSED, AnswerError, ReplayMiss
from stay.models import ModelAnswer, ModelRequest, OfflineBackend
from stay.pipeline import build_course
from stay.stages import REGISTRY
from tests.conftest import run_stay
from tests.parity.harness import reference_report
from tests.pipeline.test_build import HTTP, quiet

Spoil = Callable[[dict[str, Any]], dict[str, Any]]


def no_plans(data: dict[str, Any]) -> dict[str, Any]:
    """Fits the plan schema, fails the plan stage's own check (one plan per lesson)."""
    return {**data, "plans": []}


def nothing(_data: dict[str, Any]) -> dict[str, Any]:
    """Fits no stage's schema: every stage's answer has required fields."""
    return {}


@dataclass
class Spoiling:
    """The offline backend, except that the first ``bad`` answers for one file of ``stage``
    (the first the stage is asked for; a wave asks for its files at once) are spoiled."""

    stage: str
    spoil: Spoil
    bad: int = 2
    inner: OfflineBackend = field(default_factory=OfflineBackend)
    name: str = "spoiling"
    spoiled: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    target: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        answer = self.inner.complete(request, model)
        with self._lock:
            self.calls += 1
            if request.stage == self.stage and self.target is None:
                self.target = request.artefact
            if (request.stage, request.artefact) != (self.stage, self.target) or len(self.spoiled) >= self.bad:
                return answer
            self.spoiled.append(self.spoil(answer.data))
            return answer.model_copy(update={"data": self.spoiled[-1]})

    def screen(self, text: str) -> str | None:
        return self.inner.screen(text)


def _answers(folder: Path) -> list[Any]:
    return [json.loads(path.read_text())["answer"]["data"] for path in sorted(folder.glob("*.json"))]


def _rejected(folder: Path) -> list[str]:
    """Every rejected answer kept in ``folder``, as sorted JSON texts (the files are by request key)."""
    return sorted(json.dumps(item["answer"]["data"], sort_keys=True) for path in folder.glob("*.json")
                  for item in json.loads(path.read_text())["rejections"])


def _texts(answers: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(data, sort_keys=True) for data in answers)


@pytest.mark.parametrize(("stage", "spoil"), [("plan", no_plans), *((s.name, nothing) for s in REGISTRY)],
                         ids=["plan-semantic", *(f"{s.name}-schema" for s in REGISTRY)])
def test_an_answer_rejected_twice_is_asked_again_by_the_rerun(tmp_path: Path, stage: str, spoil: Spoil,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    backend = Spoiling(stage, spoil)
    with pytest.raises(AnswerError) as failed:
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, cache=True, progress=quiet)
    assert "\n" not in str(failed.value)
    course = tmp_path / "how-http-requests-travel"
    cache, rejected = course / ".runs" / "cache", course / ".runs" / "rejected"
    # both spoiled answers (the first, and the one asked for with the error) are kept for diagnosis only
    assert len(backend.spoiled) == backend.bad and _rejected(rejected) == _texts(backend.spoiled)
    assert not [data for data in _answers(cache) if data in backend.spoiled]

    calls = backend.calls
    with pytest.raises(ReplayMiss, match=r"its answer was rejected \(.*\); it is kept for diagnosis only"):
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, replay=True, progress=quiet)
    assert backend.calls == calls  # a replay never serves a rejected answer, and never asks
    again = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend, cache=True, progress=quiet)
    assert again.complete and again.calls > 0 and backend.calls > calls  # the model was asked again
    summary = reference_report(course, strict=True)["summary"]
    assert (summary["fail"], summary["warn"]) == (0, 0), summary
    assert _rejected(rejected) == _texts(backend.spoiled)  # still there, still never served


def test_the_command_line_says_ask_again_in_one_line_and_the_rerun_finishes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = Spoiling("plan", no_plans)
    monkeypatch.setattr(stay.pipeline._runner, "default_backend", lambda *_args: backend)
    courses, env = ["--courses-dir", str(tmp_path)], {"STAY_CACHE": "1", "SOURCE_DATE_EPOCH": "1780000000"}
    first = run_stay("build", str(HTTP), "--yes", *courses, env=env)
    assert first.returncode == EXIT_REFUSED
    *_progress, line = first.stderr.strip().splitlines()  # progress goes to stderr too, before the error
    assert line.startswith("refused: stage plan: ") and line.endswith("answer holds 0 plans; ask again"), line
    assert "Traceback" not in first.stderr
    again = run_stay("build", "how-http-requests-travel", "--yes", *courses, env=env)
    assert again.returncode == 0, again.stderr
    strict = run_stay("validate", "--strict", str(tmp_path / "how-http-requests-travel"))
    assert strict.returncode == 0 and strict.stdout.endswith("0 FAIL, 0 WARN\n"), strict.stdout
