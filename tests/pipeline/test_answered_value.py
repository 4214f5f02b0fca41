"""What ``approve`` and ``status`` return are values a caller can keep: copied, deep-copied
and pickled (a notebook's cache, a multiprocessing pool) into equal objects of the same
type with the same extra fields, and an ``Answered`` says its gate and what was not kept."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import pytest

import stay

SLUG = "how-http-requests-travel"


def _round_trips(value: Any) -> list[Any]:
    return [copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))]


def test_an_answer_survives_copy_and_pickle_with_its_gate_and_not_kept(courses: Path) -> None:
    answered = stay.approve(SLUG, "design", courses_dir=courses)
    assert isinstance(answered, stay.Answered)
    for again in _round_trips(answered):
        assert type(again) is stay.Answered and tuple(again) == tuple(answered)
        assert (again.gate, again.not_kept, again.lines()) == (answered.gate, answered.not_kept, answered.lines())
    shown = repr(answered)
    assert repr(answered.gate) in shown and repr(answered.not_kept) in shown


@pytest.mark.parametrize("call", ["status", "adopt"])
def test_statuses_survive_copy_and_pickle_with_their_proposals(courses: Path, call: str) -> None:
    found = getattr(stay, call)(SLUG, courses_dir=courses)
    found.proposals = ("a line",)  # as one waiting proposal would give
    for again in _round_trips(found):
        assert type(again) is stay.Statuses and dict(again) == dict(found) and again.proposals == ("a line",)
