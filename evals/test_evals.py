"""One test per build (brief x epoch, and arm in a two-arm run): build (or load) its
course, score it, keep the result for the report."""

from __future__ import annotations

import json
from pathlib import Path

from evals.conftest import BRIEFS, EvalConfig
from stay.scoring._judges import make_judge
from stay.suite import OFFLINE, evaluate_build, part_name

SCORERS = {"outcome_coverage", "distractor_quality", "exercise_alignment", "rubric_specificity", "validator"}


def test_the_suite_has_at_least_six_briefs() -> None:
    assert len(BRIEFS) >= 6


def test_build(brief: Path, epoch: int, arm: str | None, eval_config: EvalConfig) -> None:
    cfg = eval_config.arm(arm)
    # the cache is salted with the session: its verdicts are this session's, never another day's
    judge = make_judge(cfg.backend, cfg.courses / ".judge-cache", judge_model=cfg.judge_model, salt=cfg.session)
    slug, entry = evaluate_build(brief, epoch=epoch, courses_dir=cfg.courses, backend=cfg.backend,
                                 prompts_dir=cfg.prompts_dir, judge=judge, run_seed=cfg.seed, rebuild=not cfg.rescore,
                                 quality=cfg.quality)
    cfg.parts.mkdir(parents=True, exist_ok=True)
    (cfg.parts / part_name(brief, epoch)).write_text(json.dumps({"slug": slug, "build": entry},
                                                                          sort_keys=True))
    assert set(entry["scorers"]) == SCORERS
    for name, result in entry["scorers"].items():
        assert result["items"], f"{name} judged nothing"
        if cfg.backend == OFFLINE:
            assert result["unparseable"] == result["errors"] == 0
            assert name == "validator" or result["judge"] == "offline heuristic judge (not a model)"
    assert entry["scorers"]["validator"]["score"] == 1.0 or cfg.rescore
