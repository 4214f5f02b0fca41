"""Judges' requests (the lesson first, as a cached block every item on it shares), the
quote check's normalisation, content hashes, and the judge model on record."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.models import OfflineBackend
from stay.models._anthropic import _user_content as user_content
from stay.pipeline import build_course
from stay.scoring import (
    CourseOnDisk,
    DistractorQuality,
    ExerciseAlignment,
    ModelJudge,
    OfflineJudge,
    OutcomeCoverage,
    RubricSpecificity,
    default_scorers,
    score_course,
    scorer_versions,
)
from stay.scoring.scorers import SCORERS, declared, quoted_in
from stay.testing import heuristic_judge
from tests.conftest import ROOT
from tests.scoring.test_scorers import FakeModel

BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> CourseOnDisk:
    result = build_course(BRIEF, courses_dir=tmp_path_factory.mktemp("c"), yes=True, backend=OfflineBackend(),
                          progress=lambda _l: None)
    return CourseOnDisk.load(result.course_dir)


def canned(request: Any) -> dict[str, Any]:
    scorer = declared(request)
    return scorer.reply(scorer.name != "outcome_coverage")


def test_the_lesson_comes_first_as_one_cached_block_shared_by_every_item_on_it(course: CourseOnDisk) -> None:
    fake = FakeModel(canned)
    judge = ModelJudge(fake, "judge-model")
    for scorer in (OutcomeCoverage(judge), DistractorQuality(judge), ExerciseAlignment(judge)):
        scorer.score(course)
    first = course.lessons[0]
    assert first.content is not None
    on_first = [r for r in fake.seen if r.inputs.get("lesson") == first.content.body]
    assert {r.stage for r in on_first} == {"judge-outcome_coverage", "judge-distractor_quality",
                                           "judge-exercise_alignment"}
    prefixes = {(r.system, r.shared) for r in on_first}
    assert len(prefixes) == 1  # every outcome, exercise and distractor of the lesson: one cacheable prefix
    lesson_block, item_block = user_content(on_first[0])  # what the Claude backend sends (no SDK import)
    assert lesson_block["cache_control"] == {"type": "ephemeral"} and first.content.body in lesson_block["text"]
    assert "# What to judge" in item_block["text"] and first.content.body not in item_block["text"]
    assert len(on_first[0].system) == 1 and not on_first[0].system[0].cache  # too short to be cached alone


def test_rubric_judging_has_no_lesson_block(course: CourseOnDisk) -> None:
    fake = FakeModel(canned)
    RubricSpecificity(ModelJudge(fake)).score(course)
    assert fake.seen and all(r.shared == "" and "lesson" not in r.inputs for r in fake.seen)


@pytest.mark.parametrize("body, quote", [
    ("A **retry** waits *longer* each time.", "A retry waits longer each time."),
    ("Run `git rebase` on your branch.", "Run git rebase on your branch."),
    ("The __blameless__ review asks “what happened”, not ‘who’.", 'The blameless review asks "what happened", not \'who\'.'),
    ("See [the timeline](https://example.com/t) first.", "See the timeline first."),
    ("A ~~wrong~~ right answer.", "A wrong right answer."),
    ("Keep snake_case names as they are.", "Keep snake_case names as they are."),
    ("Two\n   lines   here.", "Two lines here."),
])
def test_a_verbatim_quote_without_markdown_markers_is_found(body: str, quote: str) -> None:
    assert quoted_in(quote, body) and quoted_in(body, body)


@pytest.mark.parametrize("body, quote", [
    ("A **retry** waits longer each time.", "A retry waits shorter each time."),
    ("Run `git rebase` on your branch.", "Run git merge on your branch."),
    ("Anything at all.", ""),
    ("Anything at all.", "**"),
])
def test_a_quote_that_is_not_in_the_lesson_is_not_found(body: str, quote: str) -> None:
    assert not quoted_in(quote, body)


_words = st.lists(st.text("abcdefghijklmnopqrstuvwxyzABC", min_size=1, max_size=6), min_size=1, max_size=12)
_wrappers = st.sampled_from(["", "**", "*", "`", "_", "__", "~~"])


def _slow_clean(text: str) -> str:
    """The slow path: split on whitespace and strip the markers from each token's ends."""
    return " ".join(token.strip("*`_~") for token in text.split() if token.strip("*`_~"))


@settings(deadline=None)
@given(_words, st.lists(_wrappers, min_size=12, max_size=12), st.integers(0, 11), st.integers(1, 12),
       st.lists(_wrappers, min_size=12, max_size=12), _words)
def test_the_normalised_check_agrees_with_a_token_by_token_reading(
        words: list[str], wrappers: list[str], start: int, length: int, quote_wrappers: list[str],
        other: list[str]) -> None:
    start = min(start, len(words) - 1)
    body = " ".join(f"{w}{word}{w}" for word, w in zip(words, wrappers, strict=False))
    span = words[start:start + length]
    assert quoted_in(" ".join(span), body)  # the judge quoted what it read, without the markers
    for candidate in (" ".join(f"{w}{word}{w}" for word, w in zip(span, quote_wrappers, strict=False)),
                      " ".join(other), " ".join([*span, *other])):
        assert quoted_in(candidate, body) == (_slow_clean(candidate) in _slow_clean(body))


def test_content_hashes_name_what_was_judged_not_the_judge_or_the_id(course: CourseOnDisk) -> None:
    by_double = score_course(course, default_scorers(heuristic_judge()))
    by_model = score_course(course, default_scorers(ModelJudge(FakeModel(canned), "another-model")))
    for name, result in by_double.items():
        hashes = [item.content for item in result.items]
        assert len(set(hashes)) == len(hashes) and all(len(h) == 64 for h in hashes)
        assert hashes == [item.content for item in by_model[name].items]


def test_every_scorer_has_a_version_and_a_judge_model_can_be_set() -> None:
    versions = scorer_versions(default_scorers(OfflineJudge()))
    assert set(versions) == {scorer.name for scorer in SCORERS}
    assert all(isinstance(v, int) and v >= 1 for v in versions.values())
    assert ModelJudge(FakeModel(canned), "claude-opus-5-5").name == "model:claude-opus-5-5"
