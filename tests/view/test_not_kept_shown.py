"""The review page lists the files the last answer at its gate could not keep (so a later
change to them shows no diff), each with why, as ``.state/gates.json`` records it. What it
reads there is untrusted: a name that is not a file the gate covers is never shown, and a
reason is escaped and cut to one bounded line."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from stay.pipeline import _state, approve
from stay.pipeline._state import LINE_CHARS
from tests.view.test_review import _offline, _review, at_design, design_copy  # noqa: F401  (fixtures)


@pytest.fixture
def course(design_copy: Path) -> Path:  # noqa: F811  (the imported fixture, by its name here)
    """A private copy of the course stopped at the design gate."""
    return design_copy


def _gates(course: Path) -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = json.loads((course / ".state" / "gates.json").read_text())["gates"]
    return found


def _listed(page: str) -> list[str]:
    """The not-kept list's items, as a reader sees them."""
    block = re.search(r'<ul class="review-not-kept">(.*?)</ul>', page, re.DOTALL)
    if block is None:
        return []
    return [html.unescape(re.sub(r"<[^>]+>", "", item)).strip()
            for item in re.findall(r"<li>(.*?)</li>", block.group(1), re.DOTALL)]


def test_each_file_the_last_answer_did_not_keep_is_listed_with_why(
        course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_state, "MAX_FILE_BYTES", (course / "curriculum.yaml").stat().st_size - 1)
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="again")
    recorded = dict(_gates(course)["design"]["not_kept"])  # type: ignore[call-overload]
    assert "curriculum.yaml" in recorded
    assert _listed(_review(course)) == [f"{path}: {why}" for path, why in sorted(recorded.items())]


def test_an_answer_that_kept_everything_lists_nothing(course: Path) -> None:
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="again")
    assert "not_kept" not in _gates(course)["design"]
    page = _review(course)
    assert "review-not-kept" not in page and "Since the last answer" in page


def test_a_planted_reason_is_escaped_and_bounded_and_a_planted_name_never_shown(course: Path) -> None:
    approve(course.name, "design", courses_dir=course.parent, decline=True, note="again")
    ledger = course / ".state" / "gates.json"
    data = json.loads(ledger.read_text())
    hostile = "<script>alert(1)</script> " + "x" * (4 * LINE_CHARS)
    data["gates"]["design"]["not_kept"] = {"curriculum.yaml": hostile, "/etc/passwd": "PLANTED-REASON",
                                           "../outside.yaml": "PLANTED-REASON", "outcomes.yaml": ["not", "a", "reason"]}
    ledger.write_text(json.dumps(data))
    page = _review(course)
    (item,) = _listed(page)
    path, _, why = item.partition(": ")
    assert path == "curriculum.yaml"
    assert len(why) == LINE_CHARS and why.endswith("…") and hostile.startswith(why[:-1])
    assert "<script>alert(1)</script>" not in page and "/etc/passwd" not in page and "PLANTED-REASON" not in page
