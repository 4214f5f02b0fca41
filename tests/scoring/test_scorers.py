"""Scorers, driven by a fake model returning canned structured output."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from stay.errors import AnswerError, ModelError, ModelUnavailable, RefusalError
from stay.models import CachedBackend, ModelAnswer, ModelRequest, OfflineBackend, RequestCache, Usage
from stay.pipeline import build_course
from stay.scoring import (
    CourseOnDisk,
    DistractorQuality,
    ExerciseAlignment,
    ModelJudge,
    OfflineJudge,
    OutcomeCoverage,
    RubricSpecificity,
    Validator,
    default_scorers,
    score_course,
)
from stay.scoring.scorers import JUDGE_FREE_NAMES, SCORERS
from stay.validate import OWNERS
from tests.conftest import ROOT, SAMPLE, run_stay

BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"


@dataclass
class FakeModel:
    """A ModelClient whose answers are canned: a function of the request."""

    reply: Any
    name: str = "fake"
    seen: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        self.seen.append(request)
        data = self.reply(request)  # may raise, as a backend does
        if isinstance(data, str):
            raise AnswerError("not JSON", raw=data)
        return ModelAnswer(data=data, model=model, usage=Usage(input_tokens=10, output_tokens=5))

    def screen(self, text: str) -> str | None:
        return None


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> CourseOnDisk:
    root = tmp_path_factory.mktemp("courses")
    result = build_course(BRIEF, courses_dir=root, yes=True, backend=OfflineBackend(), progress=lambda _l: None)
    return CourseOnDisk.load(result.course_dir)


def test_a_real_quote_scores_and_a_fabricated_one_is_caught(course: CourseOnDisk) -> None:
    lesson = course.lessons[0].content
    assert lesson is not None
    real = lesson.body.split("\n")[6]  # a line of prose from the lesson

    def reply(request: ModelRequest) -> dict[str, Any]:
        if request.artefact.endswith("-o1"):
            return {"quote": "  " + real.replace(" ", "   ") + " ", "teaches": True, "reason": "it explains it"}
        return {"quote": "A sentence that appears nowhere in the lesson at all.", "teaches": True,
                "reason": "confident"}

    result = OutcomeCoverage(ModelJudge(FakeModel(reply), "judge-model")).score(course)
    by_item = {item.item: item for item in result.items}
    assert by_item["m01-l01-o1"].score == 1.0  # whitespace is normalised before the check
    assert by_item["m01-l01-o2"].score == 0.0
    assert by_item["m01-l01-o2"].reason.startswith("fabricated quote (not in the lesson)")
    assert result.judge == "model:judge-model"
    assert result.usage.input_tokens == 10 * len(result.items)


def test_an_unparseable_reply_is_a_failed_item_keeping_the_raw_text(course: CourseOnDisk) -> None:
    result = DistractorQuality(ModelJudge(FakeModel(lambda r: "Sure! The distractor is great."))).score(course)
    assert result.unparseable == len(result.items) > 0 and result.errors == 0 and result.score is None
    assert all(item.failure == "unparseable" and item.score is None and item.raw == "Sure! The distractor is great."
               for item in result.items)


def test_a_reply_of_the_wrong_shape_is_a_failed_item_too(course: CourseOnDisk) -> None:
    result = ExerciseAlignment(ModelJudge(FakeModel(lambda r: {"verdict": "yes"}))).score(course)
    assert result.unparseable == len(result.items)
    assert "does not fit AlignmentAnswer: aligned: Field required" in result.items[0].reason
    assert json.loads(result.items[0].raw or "") == {"verdict": "yes"}


@pytest.mark.parametrize("error", [ModelUnavailable("stage judge: the API is overloaded (529) after 4 retries"),
                                   RefusalError("stage judge: the model refused"), ModelError("HTTP 500")])
def test_a_model_or_api_error_is_an_evaluator_error_not_a_low_score(course: CourseOnDisk,
                                                                  error: ModelError | ModelUnavailable) -> None:
    calls = []

    def reply(request: ModelRequest) -> dict[str, Any]:
        calls.append(request)
        if len(calls) % 2:
            raise error
        return {"embodies": True, "reason": "names the belief"}

    result = DistractorQuality(ModelJudge(FakeModel(reply))).score(course)
    errors = [item for item in result.items if item.failed]
    assert result.errors == len(errors) == (len(result.items) + 1) // 2 and result.unparseable == 0
    assert all(item.failure == "error" and item.score is None and type(error).__name__ in item.reason
               for item in errors)
    assert result.score == 1.0  # the mean of the verdicts given; an error is not a "no"


def test_verdicts_become_scores(course: CourseOnDisk) -> None:
    judge = ModelJudge(FakeModel(lambda r: {"distinguishable": r.artefact == "r1", "reason": "levels"}))
    result = RubricSpecificity(judge).score(course)
    assert [(i.item, i.score) for i in result.items] == [("r1", 1.0)]
    exercises = ExerciseAlignment(ModelJudge(FakeModel(lambda r: {"aligned": False, "reason": "recall"})))
    assert exercises.score(course).score == 0.0


def test_judges_use_the_judging_role_and_the_request_cache(course: CourseOnDisk, tmp_path: Path) -> None:
    fake = FakeModel(lambda r: {"embodies": True, "reason": "ok"})
    judge = ModelJudge(CachedBackend(fake, RequestCache(tmp_path)))
    first = DistractorQuality(judge).score(course)
    asked = len(fake.seen)
    again = DistractorQuality(judge).score(course)
    assert asked > 0 and len(fake.seen) == asked  # a cached judge answer is never paid twice
    assert again.items == first.items
    assert {r.role for r in fake.seen} == {"judging"}
    assert all(r.output_schema["properties"] for r in fake.seen)


def test_a_judge_reply_that_is_no_verdict_is_never_served_again(course: CourseOnDisk, tmp_path: Path) -> None:
    answers = [{"verdict": "yes"}]  # no "embodies": unreadable as the verdict the scorer asked for

    def reply(_request: ModelRequest) -> dict[str, Any]:
        return answers[0]

    fake = FakeModel(reply)
    cache = RequestCache(tmp_path / "cache")
    judge = ModelJudge(CachedBackend(fake, cache))
    first = DistractorQuality(judge).score(course)
    asked = len(fake.seen)
    assert asked > 0 and first.unparseable == len(first.items) == asked
    assert not list(cache.directory.glob("*.json")) and len(list(cache.rejected_dir.glob("*.json"))) == asked
    answers[0] = {"embodies": True, "reason": "names the belief"}
    again = DistractorQuality(judge).score(course)
    assert len(fake.seen) == 2 * asked and again.unparseable == 0 and again.score == 1.0  # asked anew


def test_offline_only_what_needs_no_judge_is_scored_and_score_and_show_say_so(course: CourseOnDisk,
                                                                              tmp_path: Path) -> None:
    results = score_course(course.root, default_scorers(OfflineJudge()))
    assert set(results) == {scorer.name for scorer in SCORERS}
    for name, result in results.items():
        free = name in JUDGE_FREE_NAMES
        assert result.judged is free and bool(result.items) is free and (result.score is None) is not free
        assert result.not_judged == (None if free else "not judged (offline)")
    report = tmp_path / "r.json"
    assert run_stay("evals", "score", str(course.root), "--output", str(report), "--backend", "offline").returncode == 0
    shown = run_stay("evals", "show", str(report), "--markdown", str(tmp_path / "r.md"), "--html",
                     str(tmp_path / "r.html"))
    unjudged = sorted(n for n in results if n not in JUDGE_FREE_NAMES)
    rows = [line.split() for line in shown.stdout.splitlines() if line.split()[:1] and line.split()[0] in results]
    assert sorted(row[0] for row in rows if row[2:] == ["not", "judged", "(offline)"]) == unjudged
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert all(f"| {name} | not judged (offline) | - |" in markdown for name in unjudged)
    assert (tmp_path / "r.html").read_text(encoding="utf-8").count("not judged (offline): no mean") == len(unjudged)


def test_the_validator_scorer_counts_every_owner_zeros_included(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / SAMPLE.name)
    (tmp_path / SAMPLE.name / "glossary.yaml").unlink()
    result = Validator().score(CourseOnDisk.load(tmp_path / SAMPLE.name))
    by_item = {item.item: item for item in result.items}
    assert len(by_item) == len(OWNERS) + 1  # every owner and the checks run
    assert by_item["owner glossary"].score == 0.0 and by_item["owner quiz"].score == 1.0
    assert by_item["checks run"].reason.endswith("passed")


def test_scorers_are_small_frozen_objects_with_settings_as_fields() -> None:
    scorer = OutcomeCoverage(OfflineJudge(), min_quote_words=3)
    with pytest.raises(AttributeError):
        scorer.min_quote_words = 9  # type: ignore[misc]
    assert replace(scorer, min_quote_words=9).min_quote_words == 9


def test_a_report_entry_prices_what_the_judge_used(course: CourseOnDisk) -> None:
    from stay.scoring._report import build_entry

    judge = ModelJudge(FakeModel(lambda r: {"embodies": True, "reason": "ok"}), "claude-sonnet-5-5")
    scores = {"distractor_quality": DistractorQuality(judge).score(course)}
    entry = build_entry(scores, epoch=1, seed=None, course_sha256=course.sha256, build_usage=Usage(),
                        build_cost=0.0, built=False)
    calls = len(scores["distractor_quality"].items)
    assert entry["scorers"]["distractor_quality"]["cost"] == pytest.approx(calls * (10 * 2 + 5 * 10) / 1e6)
    assert entry["scorers"]["distractor_quality"]["version"] == DistractorQuality.version
