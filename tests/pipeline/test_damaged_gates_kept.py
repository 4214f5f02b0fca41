"""Adopting a course whose gates.json is damaged sets the damaged file aside under
.state/retired/; a second damaged gates.json, adopted later, is set aside beside the
first, never over it: each holds a person's approvals, the only copy of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from stay.errors import EnvironmentProblem
from stay.pipeline import _commands, adopt

SLUG = "how-http-requests-travel"


def _damage(courses: Path, text: str) -> None:
    (courses / SLUG / ".state" / "gates.json").write_text(text, encoding="utf-8")


def test_each_damaged_gates_file_is_kept_under_its_own_name(courses: Path) -> None:
    retired = courses / SLUG / ".state" / "retired"
    damaged = [f"{{ damaged, round {n}" for n in range(1, 4)]
    for text in damaged:
        _damage(courses, text)
        adopt(SLUG, courses_dir=courses)
    kept = sorted(retired.glob("damaged-gates*.json"))
    assert sorted(path.read_text(encoding="utf-8") for path in kept) == sorted(damaged)
    assert [path.name for path in kept] == ["damaged-gates-2.json", "damaged-gates-3.json", "damaged-gates.json"]


def test_past_the_limit_adopting_asks_for_room_and_moves_nothing(courses: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_commands, "SET_ASIDE_LIMIT", 2)
    for n in range(1, 3):
        _damage(courses, f"{{ round {n}")
        adopt(SLUG, courses_dir=courses)
    _damage(courses, "{ the third")
    with pytest.raises(EnvironmentProblem, match=r"already keeps 2 damaged copies of gates\.json"):
        adopt(SLUG, courses_dir=courses)
    assert (courses / SLUG / ".state" / "gates.json").read_text(encoding="utf-8") == "{ the third"
