"""Repair checks a course against the run's own house style, however the run was told it.

Issue 21: with ``Settings(data_dir=...)`` from Python (no ``STAY_DATA_DIR``), the validate
node used the run's data directory but repair re-validated against the default one, so a
build whose house style its lessons break reported 0 FAIL after repair and would exit 0
instead of 1. Every validation of a run goes through one function over one resolution of
the data directory; the last test holds the pipeline to it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from stay.artefacts import Curriculum, load
from stay.models import OfflineBackend
from stay.pipeline import build_course, run_command
from stay.settings import Settings
from stay.validate import validate_course
from tests.conftest import ROOT
from tests.pipeline.test_build import quiet

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
BANNED = "the"
"""A phrase every lesson of English prose uses, and so every offline lesson and every
offline repair of it: banned, it is a FAIL in each lesson that repair cannot remove."""


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("STAY_DATA_DIR", "STAY_REPAIR_ROUNDS", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no ./data here: the default is the packaged house style


def _strict_house(tmp_path: Path) -> Path:
    """The packaged data with one more banned phrase."""
    data = tmp_path / "strict-data"
    data.mkdir()
    (data / "bloom-verbs.yaml").write_bytes((ROOT / "data" / "bloom-verbs.yaml").read_bytes())
    house = yaml.safe_load((ROOT / "data" / "house-style.yaml").read_text(encoding="utf-8"))
    house["prose"]["banned_phrases"].append(BANNED)
    (data / "house-style.yaml").write_text(yaml.safe_dump(house), encoding="utf-8")
    return data


def _lessons(course_dir: Path) -> int:
    curriculum = load(course_dir / "curriculum.yaml", Curriculum)
    return sum(len(module.lessons) for module in curriculum.modules)


def test_a_build_told_its_data_directory_from_python_repairs_and_reports_against_it(tmp_path: Path) -> None:
    data = _strict_house(tmp_path)
    result = build_course(HTTP, courses_dir=tmp_path / "courses", yes=True, backend=OfflineBackend(),
                          progress=quiet, settings=Settings(data_dir=data))
    assert result.repair is not None and result.repair.rounds  # repair tried, and could not fix house style
    assert result.repair.stop == "a round reduced no count"
    own = validate_course(result.course_dir, data_dir=data)
    assert [d.code for d in own.defects if d.code == "les009"] == ["les009"] * _lessons(result.course_dir)
    assert result.validation is not None
    assert result.validation.fails == own.fails > 0  # so `stay build` exits 1, as the CLI's rule has it
    assert validate_course(result.course_dir).fails < own.fails  # the default house style would have hidden them


def test_the_repair_command_told_its_data_directory_from_python_validates_against_it(tmp_path: Path) -> None:
    data = _strict_house(tmp_path)
    # the stages are told the house style they are checked against (one copy): a course
    # built under another is stale under this one, and repair writes no stale file
    strict = Settings(data_dir=data)
    built = build_course(HTTP, courses_dir=tmp_path / "courses", yes=True, backend=OfflineBackend(),
                         progress=quiet, settings=Settings(data_dir=data, repair_rounds=0))
    assert validate_course(built.course_dir).fails == 0  # the default house style would hide them
    again = run_command("repair", built.slug, courses_dir=tmp_path / "courses", backend=OfflineBackend(),
                        progress=quiet, settings=strict)
    assert again.validation is not None
    assert again.validation.fails == validate_course(built.course_dir, data_dir=data).fails > 0


def test_the_pipeline_validates_a_course_in_one_place() -> None:
    """``validate_course`` without a data directory falls back to the environment's: a
    pipeline module calling it directly could check against other data than its run's."""
    callers = sorted(path.name for path in (ROOT / "stay" / "pipeline").glob("*.py")
                     for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "validate_course")
    assert callers == ["_layout.py"]
