"""One test per build (brief x epoch, and arm in a two-arm run): build (or load) its
course, score it, keep the result for the report (``stay.suite.run_build``: a build that
raises is kept as failed, and the run then writes no report)."""

from __future__ import annotations

from pathlib import Path

from evals.conftest import BRIEFS, EvalConfig
from stay.scoring._judges import make_judge
from stay.suite import OFFLINE, run_build

SCORERS = {"outcome_coverage", "distractor_quality", "exercise_alignment", "rubric_specificity", "validator"}


def test_the_suite_has_at_least_six_briefs() -> None:
    assert len(BRIEFS) >= 6


def test_build(brief: Path, epoch: int, arm: str | None, eval_config: EvalConfig) -> None:
    cfg = eval_config.arm(arm)
    # the cache is salted with the session: its verdicts are this session's, never another day's
    judge = make_judge(cfg.judging, cfg.courses / ".judge-cache", judge_model=cfg.judge_model, salt=cfg.session)
    _slug, entry = run_build(cfg, brief, epoch, judge)
    assert set(entry["scorers"]) == SCORERS
    for name, result in entry["scorers"].items():
        assert result["items"], f"{name} judged nothing"
        if cfg.judging == OFFLINE:
            assert result["unparseable"] == result["errors"] == 0
            assert name == "validator" or result["judge"] == "offline heuristic judge (not a model)"
    assert entry["scorers"]["validator"]["score"] == 1.0 or cfg.rescore
