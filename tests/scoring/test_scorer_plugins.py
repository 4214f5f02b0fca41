"""Scorers as plug-ins: the ``stay.scorers`` entry points, stay's own declared there too,
and docs/plugins.md's sample scorer installed as a distribution and run with the others."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from stay.models import OfflineBackend
from stay.pipeline import build_course
from stay.scoring import OfflineJudge, default_scorers, score_course
from stay.scoring.scorers import BUILTIN_SCORERS, SCORER_GROUP, registered
from stay.testing import heuristic_judge
from tests.conftest import ROOT

SAMPLE_HEADING = "## A minimal scorer"
BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"


def _doc_sample() -> str:
    """The Python block under ``SAMPLE_HEADING`` in docs/plugins.md (the page's sample is what is installed)."""
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    return text.split(f"\n{SAMPLE_HEADING}\n", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/plugins.md's scorer as an install leaves it: its module and its dist-info's entry point."""
    (tmp_path / "my_scorer.py").write_text(_doc_sample())
    info = tmp_path / "my_scorer-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-scorer\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{SCORER_GROUP}]\nlesson_title = my_scorer:LessonTitle\n"
                                           "validator = my_scorer:LessonTitle\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_scorer", raising=False)


def test_stays_own_scorers_are_declared_once_in_the_registry() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert SCORER_GROUP not in pyproject["project"]["entry-points"]  # the group is the plug-ins'
    assert list(registered()) == list(BUILTIN_SCORERS)


def test_the_documented_scorer_is_scored_with_the_others(installed: None, tmp_path: Path) -> None:
    found = registered()
    assert list(found) == [*BUILTIN_SCORERS, "lesson_title"]
    assert found["validator"].cls.__module__ == "stay.scoring.scorers"  # a built-in's name stays stay's
    course = build_course(BRIEF, courses_dir=tmp_path / "c", yes=True, backend=OfflineBackend(),
                          progress=lambda _l: None).course_dir
    judged = score_course(course, default_scorers(heuristic_judge()))["lesson_title"]
    assert judged.items and judged.failed == 0 and judged.score == 1.0  # the heuristic judge finds nothing wrong
    offline = score_course(course, default_scorers(OfflineJudge()))["lesson_title"]
    assert not offline.judged and offline.score is None
