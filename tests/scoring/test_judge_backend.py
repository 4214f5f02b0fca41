"""The judge's backend is its own choice (``--stay-judge-backend``; ``stay evals score`` and
``rejudge``'s ``--backend``): build with one backend, judge with another. It defaults to the
backend that builds (offline judges offline, a model through the build's backend), and a
judge through another backend than Anthropic says so in its name, so the run's header
names it and ``compare``'s judge guard refuses two runs judged through different backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evals.conftest import _config
from stay.errors import RunsNotComparable, UsageError, exit_code
from stay.scoring import ModelJudge, OfflineJudge
from stay.scoring._compare import compare
from stay.scoring._core import NAMELESS_BACKEND, model_judge_name
from stay.scoring._judges import judge_name, make_judge
from stay.scoring._report import OFFLINE
from stay.scoring.scorers import JUDGE_FREE_NAMES
from stay.settings import checked_backend, registered_backends
from stay.suite import evaluate_build
from tests.conftest import run_stay
from tests.scoring.reports import SUITE_BRIEF, make_report, steady
from tests.scoring.test_judges import canned
from tests.scoring.test_scorers import FakeModel

MODEL_BACKEND = "anthropic"
"""A backend a model judges through (one of the registry's, checked below)."""
ELSEWHERE = "elsewhere"
"""A backend name that is not the nameless one: how a third backend's judge is named."""


class Options:
    """What ``evals/conftest.py`` reads of pytest's config: the options given, else their defaults."""

    def __init__(self, tmp: Path, **given: Any) -> None:
        self.values = {"--stay-label": "candidate", "--stay-output": str(tmp / "candidate.json"),
                       "--stay-courses": str(tmp / "courses"), "--stay-epochs": 1, "--stay-seed": 0,
                       "--stay-rescore": False, "--stay-quality": [], "--stay-backend": OFFLINE,
                       **{f"--stay-{k.replace('_', '-')}": v for k, v in given.items()}}

    def getoption(self, name: str) -> Any:
        return self.values.get(name)


def test_the_judge_backend_defaults_to_the_builder_s_and_can_be_another(tmp_path: Path) -> None:
    alike = _config(Options(tmp_path))  # type: ignore[arg-type]
    assert (alike.backend, alike.judging) == (OFFLINE, OFFLINE)  # as before the option: offline judges offline
    apart = _config(Options(tmp_path, judge_backend=MODEL_BACKEND))  # type: ignore[arg-type]
    assert (apart.backend, apart.judging) == (OFFLINE, MODEL_BACKEND)
    # the session is the judge's: a model judging the same builds is another session
    assert apart.session != alike.session


def test_an_unknown_judge_backend_is_one_line_naming_the_flag_and_the_choices(tmp_path: Path) -> None:
    with pytest.raises(pytest.UsageError) as refused:
        _config(Options(tmp_path, judge_backend="nope"))  # type: ignore[arg-type]
    assert MODEL_BACKEND in registered_backends()
    said = str(refused.value)
    assert said.startswith("--stay-judge-backend 'nope' is not an installed backend") and "\n" not in said
    assert all(name in said for name in registered_backends())
    with pytest.raises(UsageError, match=r"^--backend 'nope' is not an installed backend"):
        checked_backend("nope", "--backend")
    done = run_stay("evals", "score", str(tmp_path), "--output", str(tmp_path / "r.json"), "--backend", "nope")
    assert done.returncode == exit_code(UsageError("")) and done.stderr.count("\n") == 1
    assert "--backend 'nope' is not an installed backend" in done.stderr


def test_an_offline_build_is_judged_by_a_model_and_records_both(tmp_path: Path) -> None:
    judge = make_judge(MODEL_BACKEND, tmp_path / "cache", judge_model="judge-m", client=FakeModel(canned))
    _slug, entry = evaluate_build(SUITE_BRIEF, epoch=1, courses_dir=tmp_path / "courses", backend=OFFLINE,
                                  prompts_dir=None, judge=judge)
    assert entry["built_by"] == [OFFLINE]
    judged = {r["judge"] for name, r in entry["scorers"].items() if name not in JUDGE_FREE_NAMES}
    assert judged == {judge_name(MODEL_BACKEND, "judge-m")} and OfflineJudge().name not in judged


def test_a_judge_through_another_backend_is_named_so_and_refused_against_the_nameless_one() -> None:
    assert model_judge_name("m", NAMELESS_BACKEND) == model_judge_name("m") == "model:m"  # old reports stay valid
    elsewhere = ModelJudge(FakeModel(canned), "m", via=ELSEWHERE)
    assert elsewhere.name == judge_name(ELSEWHERE, "m") == f"model:m via {ELSEWHERE}"
    base = make_report(steady(), label="baseline", judge_model="m")
    cand = make_report(steady(), label="candidate", judge_model=elsewhere.name.removeprefix("model:"))
    with pytest.raises(RunsNotComparable, match=f"judge-model differs \\(baseline m, candidate m via {ELSEWHERE}\\)"):
        compare(base, cand)
    assert "judge-model" in compare(base, cand, allow=["judge-model"]).allowed
