"""What a judged item records besides its score: the text the judge was shown, its quote
and its raw reply, for passing items as for failed ones, each bounded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stay.scoring import (
    CourseOnDisk,
    DistractorQuality,
    ModelJudge,
    OutcomeCoverage,
    default_scorers,
    registered,
    score_course,
)
from stay.scoring._core import MAX_QUOTE, MAX_RAW, MAX_SHOWN, WHAT_TO_JUDGE, ItemResult, bounded, lesson_note
from stay.scoring._report import shape_problem
from stay.testing import heuristic_judge
from tests.scoring.reports import make_report, steady
from tests.scoring.test_scorers import BRIEF, FakeModel


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> CourseOnDisk:
    from stay.models import OfflineBackend
    from stay.pipeline import build_course

    built = build_course(BRIEF, courses_dir=tmp_path_factory.mktemp("courses"), yes=True, backend=OfflineBackend(),
                         progress=lambda _line: None)
    return CourseOnDisk.load(built.course_dir)


def test_a_passing_item_keeps_the_judges_quote_raw_reply_and_what_it_was_shown(course: CourseOnDisk) -> None:
    lesson = course.lessons[0].content
    assert lesson is not None
    real = lesson.body.split("\n")[6]
    answer = {"quote": real, "teaches": True, "reason": "it explains it"}
    model = FakeModel(lambda r: answer)
    result = OutcomeCoverage(ModelJudge(model, "judge-model")).score(course)
    passing = [item for item in result.items if item.score == 1.0]
    assert passing, "the lesson's own line teaches at least one outcome"
    shown = {request.artefact: request.user for request in model.seen}
    for item in passing:
        assert item.quote == real and json.loads(item.raw or "") == answer
        # what the judge was shown after its instructions: the item's inputs, and a note for the lesson
        assert item.shown and item.shown.startswith(lesson_note(lesson.body)) and WHAT_TO_JUDGE not in item.shown
        assert shown[item.item].endswith(item.shown.removeprefix(lesson_note(lesson.body)))
        assert item.item in item.shown and lesson.body not in item.shown


def test_an_answer_without_a_quote_records_none_and_a_failed_item_keeps_what_it_was_shown(
        course: CourseOnDisk) -> None:
    passed = DistractorQuality(ModelJudge(FakeModel(lambda r: {"embodies": True, "reason": "yes"}))).score(course)
    assert all(i.quote is None and i.raw and i.shown and "wrong_option" in i.shown for i in passed.items)
    failed = DistractorQuality(ModelJudge(FakeModel(lambda r: "no JSON here"))).score(course)
    assert all(i.failed and i.shown == p.shown for i, p in zip(failed.items, passed.items, strict=True))


@pytest.mark.parametrize("field, limit", [("quote", MAX_QUOTE), ("raw", MAX_RAW)])
def test_a_long_quote_or_reply_is_cut_to_its_bound_and_says_so(course: CourseOnDisk, field: str, limit: int) -> None:
    long = "word " * limit  # 5 characters a word: five times the bound
    model = FakeModel(lambda r: {"quote": long, "teaches": False, "reason": "r"} if field == "quote" else long)
    item = OutcomeCoverage(ModelJudge(model, "judge-model")).score(course).items[0]
    kept = getattr(item, field)
    assert kept == bounded(long, limit) and kept.startswith(long[:limit])
    assert kept.endswith(f"... ({len(long) - limit} more characters)")


def test_bounded_leaves_short_text_alone() -> None:
    assert bounded("short", MAX_SHOWN) == "short" and bounded(None, MAX_SHOWN) is None
    assert bounded("x" * (MAX_SHOWN + 3), MAX_SHOWN) == "x" * MAX_SHOWN + "... (3 more characters)"


def test_a_report_without_the_new_fields_reads_as_before_and_one_with_them_is_a_report() -> None:
    old = make_report(steady(briefs=1, epochs=1))
    assert shape_problem(old) is None
    item: dict[str, Any] = old["briefs"]["brief-0"]["builds"][0]["scorers"]["a"]["items"][0]
    assert "quote" not in item and ItemResult.model_validate(item).quote is None
    item.update(quote="a passage", shown="## outcome", raw="{}")
    assert shape_problem(old) is None and ItemResult.model_validate(item).shown == "## outcome"


def test_an_item_judged_on_a_lesson_records_the_id_of_the_lesson_its_judge_read(course: CourseOnDisk) -> None:
    judge = heuristic_judge()
    results = score_course(course, default_scorers(judge))
    by_text = {f"# The lesson\n\n{lsn.content.body}": lsn.id for lsn in course.lessons if lsn.content}
    read = {(r.stage.removeprefix("judge-"), r.artefact): by_text.get(r.shared) for r in judge.requests}
    for declared in registered().values():
        items = results[declared.name].items
        assert all(item.lesson == read.get((declared.name, item.item)) for item in items), declared.name
        assert any(item.lesson for item in items) == (declared.judged == "lesson"), declared.name
