"""One test per brief: build (or load) its course, score it, keep the result for the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stay.scoring._suite import OFFLINE, evaluate_brief, make_judge
from stay.stages import Prompts

BRIEFS = sorted((Path(__file__).resolve().parent / "briefs").glob("*.yaml"))
SCORERS = {"outcome_coverage", "distractor_quality", "exercise_alignment", "rubric_specificity", "validator"}


def test_the_suite_has_at_least_six_briefs() -> None:
    assert len(BRIEFS) >= 6


@pytest.mark.parametrize("brief", BRIEFS, ids=lambda p: p.stem)
def test_brief(brief: Path, eval_config) -> None:  # type: ignore[no-untyped-def]
    from evals.conftest import EvalConfig

    cfg: EvalConfig = eval_config
    prompts = Prompts.load(cfg.prompts_dir)
    judge = make_judge(cfg.backend, cfg.courses / ".judge-cache")
    _slug, entry = evaluate_brief(brief, courses_dir=cfg.courses, backend=cfg.backend, prompts=prompts,
                                 judge=judge, rebuild=not cfg.rescore, quality=cfg.quality)
    cfg.parts.mkdir(parents=True, exist_ok=True)
    (cfg.parts / f"{brief.stem}.json").write_text(json.dumps(entry, sort_keys=True))
    assert set(entry["scorers"]) == SCORERS
    for name, result in entry["scorers"].items():
        assert result["items"], f"{name} judged nothing"
        if cfg.backend == OFFLINE:
            assert result["failed"] == 0
            assert name == "validator" or result["judge"] == "offline heuristic judge (not a model)"
    assert entry["scorers"]["validator"]["score"] == 1.0 or cfg.rescore
