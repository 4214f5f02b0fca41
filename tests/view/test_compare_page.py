"""From ``compare``'s result to the comparison page: every figure of every scorer reaches
the page, each run's own interval is right, and items are listed only when matched by
content."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.cli import main
from stay.scoring import compare_page
from stay.scoring._compare import BETTER, INCONCLUSIVE, ITEMS, NOTHING, SAME, WORSE, Comparison, compare
from stay.scoring._compare_page import run_intervals, stratified_interval, t_quantile
from stay.scoring.scorers import SCORERS
from stay.testing import heuristic_judge
from stay.view import render_compare_refused_html
from stay.view._reports import Interval
from tests.parity.harness import examples
from tests.scoring.reports import make_report, steady
from tests.view.conftest import page_text


def _noisy() -> tuple[dict[str, Any], dict[str, Any]]:
    """Three briefs, two epochs: too small to exclude a drop that matters (inconclusive)."""
    noisy = {f"brief-{b}": [{"a": [1.0] * (3 + 5 * ((b + e) % 2)) + [0.0] * (9 - 5 * ((b + e) % 2))}
                            for e in range(2)] for b in range(3)}
    shifted = {brief: [{"a": [0.0, *epoch["a"][1:]]} for epoch in epochs] for brief, epochs in noisy.items()}
    return make_report(noisy, label="noisy"), make_report(shifted, label="shifted")


def _nothing_judged() -> tuple[dict[str, Any], dict[str, Any]]:
    """Scorer z judged no item in either run."""
    def builds(drop: float) -> dict[str, Any]:
        return {brief: [{**epoch, "z": []} for epoch in epochs]
                for brief, epochs in steady(scorers=("a",), drop={"a": drop}).items()}
    return make_report(builds(0.0), label="b"), make_report(builds(0.0), label="c")


CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    # name: (baseline, candidate, compare's options)
    "builds": (make_report(steady(scorers=("a", "b", "c"), drop={"b": 0.25}), label="baseline"),
               make_report(steady(scorers=("a", "b", "c"), drop={"a": 0.25}), label="candidate"), {}),
    "inconclusive": (*_noisy(), {}),
    "items": (make_report(steady(), label="baseline", content="course"),
              make_report(steady(drop={"a": 0.25}), label="candidate", content="course",
                          judge_model="claude-opus-5-5", reasons="stricter"), {"allow": ["judge-model"]}),
    "nothing judged": (*_nothing_judged(), {}),
    "one epoch": (make_report(steady(epochs=1), label="b"), make_report(steady(epochs=1, drop={"a": 0.25}), label="c"),
                  {}),
}


def _compared(name: str) -> tuple[Comparison, dict[str, Any], dict[str, Any]]:
    baseline, candidate, options = CASES[name]
    return compare(baseline, candidate, permutations=999, **options), baseline, candidate


def _pvalue(p: float) -> str:
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def _interval(interval: Interval | None) -> str:
    return "(no interval)" if interval is None else f"[{interval.low:.3f}, {interval.high:.3f}] at 95%"


def _row_text(page: str, scorer: str) -> tuple[str, str]:
    found = re.search(rf'<tr id="scorer-{scorer}">.*?</tr>', page, re.DOTALL)
    assert found is not None, scorer
    return found.group(0), page_text(found.group(0))


def test_the_cases_cover_every_verdict_and_both_tests() -> None:
    seen = {(r.verdict, r.test) for name in CASES for r in _compared(name)[0].scorers}
    assert {v for v, _t in seen} == {WORSE, BETTER, SAME, INCONCLUSIVE, NOTHING}
    assert {t for _v, t in seen} == {"builds", ITEMS}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_field_of_every_scorer_reaches_the_page(name: str) -> None:
    comparison, baseline, candidate = _compared(name)
    page = compare_page(comparison, baseline, candidate, paths=("b.json", "c.json"))
    html = page.html()
    intervals = run_intervals(comparison)
    assert [row.scorer for row in page.rows] == [r.scorer for r in comparison.scorers]
    for r, row in zip(comparison.scorers, page.rows, strict=True):
        tested = r.difference is not None
        assert (row.baseline_mean, row.candidate_mean, row.difference) == (r.baseline, r.candidate, r.difference)
        assert (row.baseline_interval, row.candidate_interval) == intervals[r.scorer]
        assert row.difference_interval == (Interval(r.low, r.high) if tested else None)
        assert (row.p_raw, row.p_adjusted) == ((r.p, r.p_adjusted) if tested else (None, None))
        assert (row.mde, row.threshold, row.spread, row.verdict) == (r.mde, r.threshold, r.spread, r.verdict)
        assert (row.test, row.units) == ((r.test, r.units) if tested else ("", None))
        raw, cells = _row_text(html, r.scorer)
        assert cells.startswith(r.scorer) and cells.endswith(r.verdict)
        if not tested:  # nothing judged: every figure says so, none is made up
            assert cells == f"{r.scorer} n/a n/a (no interval) n/a (no interval) n/a n/a (no interval) 0 n/a n/a n/a {NOTHING}"
            assert 'class="verdict-none"' in raw
            continue
        assert r.baseline is not None and r.candidate is not None and r.low is not None and r.high is not None
        figures = [f"{r.baseline:.3f} {_interval(row.baseline_interval)}",
                   f"{r.candidate:.3f} {_interval(row.candidate_interval)}",
                   f"{r.difference:+.3f} [{r.low:.3f}, {r.high:.3f}] at 95%",
                   f"{r.units[0]} item pairs" if r.test == ITEMS else f"{r.units[0]} + {r.units[1]} builds",
                   f"{_pvalue(r.p)} {_pvalue(r.p_adjusted)}"]
        figures.append(f"{r.mde:.3f} threshold {r.threshold:.3f}" if r.mde is not None and r.threshold is not None
                       else "n/a")
        if r.spread is not None:
            figures.append(f"sd {r.spread:.3f}")
        for figure in figures:
            assert figure in cells, (figure, cells)
        css = {WORSE: "verdict-worse", BETTER: "verdict-better"}.get(r.verdict, "verdict-none")
        assert f'class="{"verdict-inconclusive" if r.verdict.startswith("inconclusive") else css}"' in raw
    text = page_text(html)
    assert f"Gate {'fires' if comparison.regressions else 'passes'} (exit {comparison.exit_code})" in text
    for regression in comparison.regressions:
        assert f'<a href="#scorer-{regression}">{regression}</a>' in html


def test_each_runs_interval_is_a_t_interval_over_the_tests_units() -> None:
    # two briefs of two builds: means 0.6 and 0.3; pooled variance 0.02 on 2 df; t(0.975, 2) = 4.303
    interval = stratified_interval([(1.0, [0.5, 0.7]), (1.0, [0.2, 0.4])])
    assert interval is not None
    half = 4.302653 * math.sqrt(0.02 * (0.25 / 2 + 0.25 / 2))
    assert (interval.low, interval.high) == (pytest.approx(0.45 - half), pytest.approx(0.45 + half))
    assert stratified_interval([(1.0, [0.5]), (2.0, [0.2])]) is None  # one build per brief: nothing to estimate
    assert stratified_interval([(1.0, [0.0, 0.0, 1.0])]).low == 0.0  # type: ignore[union-attr]  # clipped to the scale
    for name in CASES:
        comparison = _compared(name)[0]
        for r in comparison.scorers:
            for mean, found in zip((r.baseline, r.candidate), run_intervals(comparison)[r.scorer],
                                   strict=True):
                if found is not None and mean is not None:  # centred on compare's own mean, over the same units
                    assert found.low <= mean <= found.high
                    if found.low > 0 and found.high < 1:
                        assert (found.low + found.high) / 2 == pytest.approx(mean)


def test_one_build_per_brief_gives_each_run_no_interval() -> None:
    assert all(pair == (None, None) for pair in run_intervals(_compared("one epoch")[0]).values())


@pytest.mark.parametrize("df, critical", [(1, 12.7062), (2, 4.3027), (5, 2.5706), (10, 2.2281), (30, 2.0423),
                                          (100, 1.9840), (1000, 1.9623)])
def test_t_quantiles_match_the_tables(df: int, critical: float) -> None:
    assert t_quantile(0.95, df) == pytest.approx(critical, abs=1e-4)


@settings(max_examples=examples(200, dev=40), deadline=None)
@given(df=st.integers(1, 5000), level=st.floats(0.5, 0.999))
def test_t_quantiles_agree_with_scipy(df: int, level: float) -> None:
    from scipy import stats  # the oracle: a dev dependency, so this differential test always runs

    assert t_quantile(level, df) == pytest.approx(float(stats.t.ppf((1 + level) / 2, df)), rel=1e-8)


def test_regenerated_courses_get_no_item_diff_and_the_page_says_why() -> None:
    comparison, baseline, candidate = _compared("builds")
    page = compare_page(comparison, baseline, candidate)
    assert page.items is None and page.header.items_matched == {} and page.header.items_changed is None
    assert "No item diff: the items of the two runs were not matched by content" in page_text(page.html())


def test_content_matched_items_are_listed_with_both_reasons_most_changed_first() -> None:
    comparison, baseline, candidate = _compared("items")
    page = compare_page(comparison, baseline, candidate, items=5)
    assert page.header.items_matched == {"a": (288, 288), "b": (288, 288)}
    assert page.header.items_changed is not None and page.header.items_changed > 5
    assert page.items is not None and len(page.items) == 5
    assert all(i.scorer == "a" and i.change == WORSE and i.candidate_reason.startswith("stricter") for i in page.items)
    html = page.html()
    assert html.count('<tr class="changed-worse">') == 5 and "<strong>candidate:</strong> stricter a-" in html
    text = page_text(html)
    assert f"{page.header.items_changed} changed score; the 5 that changed most are listed" in text
    assert "a 288 of 288; b 288 of 288" in text
    everything = compare_page(comparison, baseline, candidate, items=None)
    assert everything.items is not None and len(everything.items) == page.header.items_changed


def test_matched_items_that_did_not_change_are_counted_not_listed() -> None:
    baseline = make_report(steady(scorers=("a",)), content="course")
    comparison = compare(baseline, make_report(steady(scorers=("a",)), content="course", label="c"), permutations=999)
    page = compare_page(comparison, baseline, make_report(steady(scorers=("a",)), content="course", label="c"))
    assert page.items == () and page.header.items_changed == 0
    assert "a 288 of 288. None changed score." in page_text(page.html())


def test_the_header_names_the_judge_the_models_the_gate_and_the_notes() -> None:
    comparison, baseline, candidate = _compared("items")
    baseline = {**baseline, "models": {"writing": "claude-sonnet-5-5"}, "quality": {}}
    candidate = {**candidate, "models": {"writing": "claude-haiku-5-5"}, "quality": {"distractors": 0.3}}
    page = compare_page(comparison, baseline, candidate, paths=("runs/b.json", "runs/c.json"))
    header = page.header
    assert header.judge == "model" and header.backend == "anthropic"
    assert header.judge_model == "baseline claude-sonnet-5-5; candidate claude-opus-5-5"  # allowed to differ
    assert header.exit_code == 1 and header.regressions == ("a",) and header.sources == ("runs/b.json", "runs/c.json")
    text = page_text(page.html())
    for fact in ("claude-haiku-5-5 (changed)", "allowed: judge-model differs", "judge failures, baseline (runs/b.json)",
                 "offline quality knob", "candidate distractors 0.3", "Holm-Bonferroni across 2 scorers",
                 "baseline 4, candidate 4 builds per brief", "t interval over the test's own units"):
        assert fact in text, fact


def test_the_same_comparison_gives_the_same_page() -> None:
    comparison, baseline, candidate = _compared("items")
    assert compare_page(comparison, baseline, candidate).html() == compare_page(comparison, baseline, candidate).html()


def test_the_refusal_page_says_why_and_escapes_it() -> None:
    page = render_compare_refused_html("a.json", "<b>c</b>.json", "cannot compare: judge differs <script>", 2)
    text = page_text(page)
    assert "Refused: no comparison (exit 2)" in text and "cannot compare: judge differs <script>" in text
    assert "<script>" not in page and "&lt;b&gt;c&lt;/b&gt;.json" in page


def test_the_command_on_two_real_offline_runs_finds_the_degraded_distractors(
        eval_reports: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline, candidate = eval_reports
    page = tmp_path / "compare.html"
    # the offline heuristic judge is calibrated by nothing: told to gate anyway
    assert main(["evals", "compare", str(baseline), str(candidate), "--html", str(page), "--allow", "uncalibrated"]) == 1
    assert capsys.readouterr().out.count(f"wrote {page}") == 1
    html = page.read_text()
    verdicts = dict(re.findall(r'<tr id="scorer-(\w+)">.*?<td class="verdict-\w+">([^<]+)<', html, re.DOTALL))
    assert verdicts.pop("distractor_quality") == WORSE
    assert set(verdicts) == {scorer.name for scorer in SCORERS} - {"distractor_quality"}
    assert set(verdicts.values()) == {SAME}  # only the distractors were degraded
    text = page_text(html)
    assert heuristic_judge().name in text and "baseline distractors 0.0; candidate distractors 0.3" in text
    assert "distractor_quality" in text.split("Items matched by content")[1]  # the undegraded items matched by content
