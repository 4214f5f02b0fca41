"""One test per build (brief x epoch, and arm in a two-arm run): build (or load) its
course, score it, keep the result for the report (``stay.suite.run_build``: a build that
raises is kept as failed, and the run then writes no report)."""

from __future__ import annotations

from pathlib import Path

from evals.conftest import BRIEFS, EvalConfig
from stay.scoring import SCORERS
from stay.scoring._judges import make_judge
from stay.scoring.scorers import JUDGE_FREE_NAMES
from stay.suite import OFFLINE, run_build


def test_the_suite_has_at_least_six_briefs() -> None:
    assert len(BRIEFS) >= 6


def test_build(brief: Path, epoch: int, arm: str | None, eval_config: EvalConfig) -> None:
    cfg = eval_config.arm(arm)
    # the cache is salted with the session: its verdicts are this session's, never another day's
    judge = make_judge(cfg.judging, cfg.courses / ".judge-cache", judge_model=cfg.judge_model, salt=cfg.session)
    _slug, entry = run_build(cfg, brief, epoch, judge)
    assert set(entry["scorers"]) == {scorer.name for scorer in SCORERS}
    for name, result in entry["scorers"].items():
        # offline, only what needs no judge is scored; the rest says it was not judged, with no score
        unjudged = cfg.judging == OFFLINE and name not in JUDGE_FREE_NAMES
        assert result["judged"] is not unjudged and (result["score"] is None) is unjudged
        assert bool(result["items"]) is not unjudged, f"{name}: {len(result['items'])} items"
    assert entry["scorers"]["validator"]["score"] == 1.0 or cfg.rescore
