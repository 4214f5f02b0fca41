"""What every pipeline test shares: offline, reproducible runs, and one finished course
(the HTTP brief, both gates auto-approved) built once per worker, copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stay.pipeline import build_course
from tests.conftest import ROOT

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
EPOCH = "1780000000"


@pytest.fixture(autouse=True)
def _offline_and_reproducible(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key (so the offline backend), and a fixed clock for every timestamp written."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.fixture(scope="session")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of courses holding the finished HTTP course: to copy from, never to change."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", EPOCH)
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        courses = tmp_path_factory.mktemp("finished")
        build_course(HTTP, courses_dir=courses, yes=True, progress=lambda _line: None)
        return courses


@pytest.fixture
def courses(finished: Path, tmp_path: Path) -> Path:
    """A private copy of ``finished``."""
    target = tmp_path / "courses"
    shutil.copytree(finished, target)
    return target
