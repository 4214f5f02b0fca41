"""A rejected answer is never replayed: an answer that fails its stage's check (the
schema, then the stage's own checks) leaves the request cache for ``.runs/rejected/``,
so "ask again" is true: the rerun asks the model again and, with a good answer,
finishes. For every stage, not just the plan's."""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stay.pipeline._runner
from stay.errors import EXIT_REFUSED, AnswerError, PipelineError, ReplayMiss
from stay.models import CachedBackend, ModelAnswer, ModelRequest, OfflineBackend, RequestCache
from stay.pipeline import build_course, run_command
from stay.pipeline._run import ModelGateway, Tally
from stay.pipeline._trace import Reporter
from stay.settings import Settings
from stay.stages import REGISTRY
from stay.testing import DEFECTS, RiggedBackend
from stay.validate import Defect, Severity
from tests.conftest import run_stay
from tests.models.helpers import audience_request
from tests.parity.harness import examples, reference_report
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


@pytest.mark.sweep
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


# -- an answer whose file fails the validator is rejected too -------------------------------


@pytest.fixture
def _rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAY_REPAIR_ROUNDS", raising=False)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")


@pytest.mark.usefixtures("_rounds")
def test_a_repair_answer_the_validator_still_fails_is_asked_again_by_the_next_repair(tmp_path: Path) -> None:
    # every answer of the content stage is damaged, repairs included: repair stops with no reduction
    first = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=RiggedBackend(defects={"banned-phrase": None}),
                         cache=True, progress=quiet)
    assert first.repair is not None and first.repair.stop == "a round reduced no count"
    damaged = first.repair.rounds[-1].regenerated
    good = RiggedBackend()  # the backend answers well now: the repair must ask it, not the cache
    again = run_command("repair", first.slug, courses_dir=tmp_path, backend=good, cache=True, progress=quiet)
    assert good.calls.get("content", 0) == len(damaged) and again.calls == len(damaged)
    assert again.repair is not None and again.repair.stop == "nothing remains"
    assert [(r.actionable_before, r.actionable_after) for r in again.repair.rounds] == [(len(damaged), 0)]


@pytest.mark.sweep
@pytest.mark.usefixtures("_rounds")
@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_no_answer_whose_file_failed_the_validator_is_served_to_a_build_from_its_cache(
        tmp_path: Path, defect: str) -> None:
    """Every defect the rigged backend can inject, in every answer of its stage (the first,
    the check at the write's, repair's): a build from the same cache, with a backend that
    now answers well, asks that stage again rather than being served what failed."""
    with contextlib.suppress(PipelineError):  # a FAIL in a gated file stops the build at its gate
        build_course(HTTP, courses_dir=tmp_path / "a", yes=True, backend=RiggedBackend(defects={defect: None}),
                     cache=True, progress=quiet)
    runs = tmp_path / "b" / "how-http-requests-travel" / ".runs"
    shutil.copytree(tmp_path / "a" / "how-http-requests-travel" / ".runs" / "cache", runs / "cache")
    good = RiggedBackend()
    again = build_course(HTTP, courses_dir=tmp_path / "b", yes=True, backend=good, cache=True, progress=quiet)
    assert again.complete and good.calls.get(DEFECTS[defect], 0) > 0
    summary = reference_report(again.course_dir, strict=True)["summary"]
    assert (summary["fail"], summary["warn"]) == (0, 0), summary


@dataclass
class _Numbered:
    """A backend whose every answer is a new one (numbered), so that a served answer is told apart."""

    name: str = "numbered"
    asked: int = 0

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        self.asked += 1
        return ModelAnswer(data={"n": self.asked}, model=model)

    def screen(self, text: str) -> str | None:
        return None


FILES = ("audience.yaml", "modules/01-a/l1.md", "modules/02-b/l2.md", "modules/02-b/l3.md")
PATTERNS = ("audience.yaml", "modules/01-a/l1.md", "modules/02-b/*.md", "modules/02-b/*.md")
"""Each file, and the request ``artefact`` its answer comes from: two files of their own,
and a module's two, which one module-scope call answers."""


@settings(max_examples=examples(80, dev=30), deadline=None)  # CI runs the 80
@given(steps=st.lists(st.tuples(st.booleans(), st.integers(0, len(FILES) - 1)), max_size=30))
def test_the_cache_never_serves_an_answer_whose_file_failed(tmp_path_factory: pytest.TempPathFactory,
                                                             steps: list[tuple[bool, int]]) -> None:
    """Against a model of the cache (request -> the answer it holds): asking is served the
    answer held, else asks the backend; a file the validator fails takes the answer it was
    written from out of the cache, so no answer that failed is ever served again."""
    inner = _Numbered()
    gateway = ModelGateway(CachedBackend(inner, RequestCache(tmp_path_factory.mktemp("cache"))), Settings(),
                           Tally(), Reporter(quiet))
    base = audience_request()
    held: dict[str, int] = {}
    failed: set[int] = set()
    for ask, index in steps:
        path, pattern = FILES[index], PATTERNS[index]
        if ask:
            before = inner.asked
            (answer,) = gateway.produce(base.model_copy(update={"artefact": pattern}), lambda a: [a.data["n"]])
            assert answer not in failed
            assert answer == held[pattern] if pattern in held else inner.asked == before + 1
            held[pattern] = answer
        else:
            gateway.reject_failed({path: [Defect(path, "les009", "-", "banned", Severity.FAIL, "content")]}, {path})
            if pattern in held:
                failed.add(held.pop(pattern))
