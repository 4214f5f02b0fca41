"""A judge through any backend is priced at that backend's own table (``Backend.prices``),
as a build's answers are: a judge through the openai backend or a plug-in costs what its
prices say, and "unknown" (None) only when the backend has no price for the reply's model,
never $0. Before, a judge named ``model:ID via NAME`` was looked up in Claude's table by
its name and always came out unknown."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from stay.models import Price, Rates, Usage, cost
from stay.scoring._judges import make_judge
from stay.scoring._report import OFFLINE
from stay.suite import evaluate_build
from tests.scoring.reports import SUITE_BRIEF
from tests.scoring.test_judges import canned
from tests.scoring.test_scorers import FakeModel

ELSEWHERE = "elsewhere"
"""A backend other than Anthropic: its judge is named ``model:ID via elsewhere``."""
JUDGE_PRICE = Price(Rates(input=3.0, output=15.0, cache_write=0.0, cache_read=0.3), "this test", "2026-12-01")


@dataclass
class PricedModel(FakeModel):
    """A backend that declares its own price table, as the openai backend and a plug-in do."""

    prices: Mapping[str, Price] = field(default_factory=dict)


@pytest.mark.parametrize("priced", [True, False])
def test_a_judge_through_another_backend_is_priced_at_that_backend_s_prices(tmp_path: Path, priced: bool) -> None:
    model = "judge-m"  # in no table but the backend's own (when it declares one)
    backend = PricedModel(canned, name=ELSEWHERE, prices={model: JUDGE_PRICE} if priced else {})
    judge = make_judge(ELSEWHERE, tmp_path / "cache", judge_model=model, client=backend)
    _slug, entry = evaluate_build(SUITE_BRIEF, epoch=1, courses_dir=tmp_path / "courses", backend=OFFLINE,
                                  prompts_dir=None, judge=judge)
    judged = [r for r in entry["scorers"].values() if r["judge"] == judge.name]
    assert judged and all(Usage(**r["usage"]).output_tokens > 0 for r in judged)
    for r in judged:
        if priced:  # the backend's price of what the judge was billed
            expected = cost(model, Usage(**r["usage"]), prices=backend.prices)
            assert expected is not None and expected > 0 and r["cost"] == pytest.approx(expected)
        else:  # the backend has no price for it: unknown, never $0
            assert r["cost"] is None
