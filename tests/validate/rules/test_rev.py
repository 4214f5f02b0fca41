"""The rev rules (`stay/validate/rules/rev.py`) on their fixtures (`tests/fixtures/rules/rev.py`):
each fires while its finding's quote stands, and says nothing once the file no longer holds it."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from stay.artefacts import LessonReview
from stay.validate import validate_course
from stay.validate.rules.rev import REVIEW
from tests.conftest import SAMPLE
from tests.fixtures.rules import codes_of, make_fixture
from tests.fixtures.rules._edit import edit_item
from tests.fixtures.rules.rev import LESSON, write_review
from tests.validate.rules._fires import assert_fires_on_its_fixture


@pytest.mark.parametrize("code", codes_of("rev"))
def test_rule_fires_on_its_fixture(code: str, tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    assert_fires_on_its_fixture(code, tmp_path, snapshot)


def test_a_finding_no_longer_in_its_item_is_not_reported(tmp_path: Path) -> None:
    """A repaired item no longer holds the quote, so the finding is gone without a second review;
    a quote named for the wrong item never stood, so it is not reported either."""
    course = make_fixture("rev001", tmp_path)
    (defect,) = validate_course(course, select="rev").defects
    assert (defect.code, defect.subject, defect.owner) == ("rev001", f"{LESSON}-q1", "quiz")
    quote = defect.message.split("'")[1]
    assert quote in (course / defect.path).read_text(encoding="utf-8")
    edit_item(course, defect.subject, lambda item: item.update(
        stem="Changed.", explanation="Changed.", options=[{**o, "text": f"Changed {n}."} for n, o in enumerate(item["options"])]))
    after = validate_course(course, select="rev")
    assert (after.defects, after.evaluated["rev001"]) == ((), 1)  # read, and no longer standing
    (course / defect.path).parent.joinpath(REVIEW.format(lesson=LESSON)).unlink()
    write_review(course, LESSON, [{"kind": "untaught", "file": "quiz", "item": f"{LESSON}-q2", "quote": "Changed 0.",
                                   "why": "w", "fix": "f"}])
    assert validate_course(course, select="rev").defects == ()


def test_the_sample_has_no_review_and_the_rules_read_where_the_stage_writes() -> None:
    assert REVIEW == LessonReview.FILE
    assert not list(SAMPLE.glob("modules/*/.review"))
    assert validate_course(SAMPLE, select="rev").defects == ()
