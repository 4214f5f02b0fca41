"""The comparison page's detail (stay.scoring._compare_detail): each brief's build means,
the items of both runs side by side, each run's cost, and the prompt files that differ.
Expectations are worked out from the input reports, never pinned."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from stay.scoring import compare_page
from stay.scoring._compare import compare
from stay.scoring._compare_detail import MAX_DIFF_LINES, PER_KIND, compare_detail, pair_items, run_cost
from stay.view import PAIR_KINDS
from tests.scoring.reports import make_report, steady, with_
from tests.view.conftest import page_text

CHANGED, FAILED, PASSED = PAIR_KINDS


def _build_means(report: dict[str, Any], brief: str, scorer: str) -> list[float]:
    means = []
    for build in report["briefs"][brief]["builds"]:
        values = [i["score"] for i in build["scorers"][scorer]["items"] if i["failure"] is None]
        means.append(sum(values) / len(values))
    return means


def _page(baseline: dict[str, Any], candidate: dict[str, Any], **kwargs: Any) -> str:
    comparison = compare(baseline, candidate, permutations=199)
    return compare_page(comparison, baseline, candidate, **kwargs).html()


def test_the_page_gives_each_briefs_mean_of_build_means_and_their_number_per_run() -> None:
    baseline = make_report(steady(), label="b")
    candidate = make_report(steady(drop={"a": 0.25}, epochs=3), label="c")
    detail = compare_detail(baseline, candidate)
    assert len(detail.brief_means) == len(baseline["briefs"]) * len(baseline["scorers"])
    text = page_text(_page(baseline, candidate))
    for cell in detail.brief_means:
        before, after = (_build_means(r, cell.brief, cell.scorer) for r in (baseline, candidate))
        assert (cell.baseline, cell.baseline_builds) == (pytest.approx(sum(before) / len(before)), len(before))
        assert (cell.candidate, cell.candidate_builds) == (pytest.approx(sum(after) / len(after)), len(after))
    row = next(c for c in detail.brief_means if c.scorer == "a")
    assert (f"{row.brief} {row.baseline:.3f} N {row.baseline_builds} {row.candidate:.3f} N {row.candidate_builds}"
            in text)


def test_items_that_judged_the_same_content_sit_side_by_side_and_the_changed_ones_are_marked() -> None:
    baseline = make_report(steady(briefs=2, epochs=2), content="course", label="b")
    candidate = make_report(steady(briefs=2, epochs=2, drop={"a": 0.25}), content="course", label="c",
                            reasons="stricter")
    briefs = sorted(baseline["briefs"])
    pairs = pair_items(baseline, candidate, "a", briefs)
    items = sum(len(b["scorers"]["a"]["items"]) for brief in baseline["briefs"].values() for b in brief["builds"])
    assert len(pairs) == items and all(p.matched for p in pairs)
    for pair in pairs:
        assert pair.baseline is not None and pair.candidate is not None
        assert (pair.baseline.epoch, pair.baseline.item) == (pair.candidate.epoch, pair.candidate.item)
        assert (CHANGED in pair.kinds) == (pair.baseline.score != pair.candidate.score)
        assert (PASSED in pair.kinds) == (pair.baseline.score == pair.candidate.score == 1.0)
    changed = sum(CHANGED in p.kinds for p in pairs)
    listed = compare_detail(baseline, candidate, per_kind=3).scorers[0]
    assert listed.scorer == "a" and dict(listed.totals)[CHANGED] == changed > 3
    assert [CHANGED in p.kinds for p in listed.pairs[:3]] == [True] * 3 and len(listed.pairs) <= 3 * len(PAIR_KINDS)
    page = _page(baseline, candidate)
    shown = min(changed, PER_KIND) + min(items - changed - sum(PASSED in p.kinds for p in pairs), PER_KIND) + min(
        sum(PASSED in p.kinds for p in pairs), PER_KIND)
    assert page.count('<section class="pairs" id="pairs-a">') == 1
    section = page.split('id="pairs-a"')[1].split("</section>")[0]
    assert section.count('<div class="pair ') == shown and section.count(" is-changed") == min(changed, PER_KIND)
    assert "not the same content" not in section and "stricter a-" in section


def test_regenerated_items_pair_by_brief_epoch_and_id_and_say_they_are_not_the_same_content() -> None:
    baseline = make_report(steady(briefs=1, epochs=2), label="b")
    candidate = make_report(steady(briefs=1, epochs=3), label="c")  # no content shared, one epoch more
    pairs = pair_items(baseline, candidate, "b", ["brief-0"])
    both = [p for p in pairs if p.baseline and p.candidate]
    alone = [p for p in pairs if p.baseline is None]
    items = len(baseline["briefs"]["brief-0"]["builds"][0]["scorers"]["b"]["items"])
    assert len(both) == 2 * items and len(alone) == items and not any(p.matched for p in pairs)
    assert all(p.baseline.item == p.candidate.item and p.baseline.epoch == p.candidate.epoch
               for p in both if p.baseline and p.candidate)
    assert all(CHANGED in p.kinds and p.candidate and p.candidate.epoch == 3 for p in alone)
    assert "not in the baseline run" in page_text(_page(baseline, candidate))


def test_a_side_shows_its_quote_raw_reply_and_what_the_judge_saw_escaped_and_a_judge_failure_as_failed() -> None:
    baseline = make_report(steady(briefs=1, epochs=2, scorers=("a",)), content="course", label="b")
    candidate = make_report(steady(briefs=1, epochs=2, scorers=("a",)), content="course", label="c")
    item = candidate["briefs"]["brief-0"]["builds"][0]["scorers"]["a"]["items"][0]
    item.update(quote="the <b>passage</b>", raw='{"teaches": true}', shown="## outcome\n<script>x()</script>")
    failed = candidate["briefs"]["brief-0"]["builds"][1]["scorers"]["a"]
    failed["items"][0].update(score=None, failure="unparseable", raw="Sure!")
    failed["unparseable"] = 1
    page = _page(baseline, candidate)
    assert "<script>x()</script>" not in page and escape("## outcome\n<script>x()</script>") in page
    assert f"{escape('the <b>passage</b>')}</blockquote>" in page and escape('{"teaches": true}') in page
    assert "judge failed (unparseable)" in page_text(page)
    pair = next(p for p in pair_items(baseline, candidate, "a", ["brief-0"])
                if p.candidate and p.candidate.failure)
    assert set(pair.kinds) == {CHANGED, FAILED}


def test_each_runs_cost_is_the_sum_of_its_builds_or_unknown_never_zero() -> None:
    priced = make_report(steady(briefs=2, epochs=2), label="b")
    for brief in priced["briefs"].values():
        for build in brief["builds"]:
            build["build"] = {"cost": 0.25}
            for result in build["scorers"].values():
                result["cost"] = 0.125
    builds = sum(len(b["builds"]) for b in priced["briefs"].values())
    cost = run_cost(priced)
    assert (cost.build, cost.judge) == (0.25 * builds, 0.125 * builds * len(priced["scorers"]))
    unpriced = with_(priced)
    unpriced["briefs"]["brief-1"]["builds"][0]["scorers"]["a"]["cost"] = None
    assert run_cost(unpriced).judge is None and run_cost(make_report(steady())).build is None
    text = page_text(_page(priced, unpriced))
    assert f"baseline ${cost.build:.4f} ${cost.judge:.4f}" in text
    assert f"candidate ${cost.build:.4f} unknown" in text and "$0.0000" not in text


def _prompts(tmp_path: Path, name: str, text: str) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "content.md").write_text(text)
    return directory


def _with_prompts(report: dict[str, Any], directory: Path | str, text: str) -> dict[str, Any]:
    return with_(report, prompts={"dir": str(directory), "source": "requested",
                                  "sha256": {"content.md": hashlib.sha256(text.encode()).hexdigest()}})


def test_a_prompt_file_that_differs_is_shown_as_a_unified_diff_when_both_texts_are_on_disk(tmp_path: Path) -> None:
    before, after = "Write the lesson.\nKeep it short.\n", "Write the lesson.\nKeep it short and concrete.\n"
    baseline = _with_prompts(make_report(steady(), label="b"), _prompts(tmp_path, "old", before), before)
    candidate = _with_prompts(make_report(steady(), label="c"), _prompts(tmp_path, "new", after), after)
    [changed] = compare_detail(baseline, candidate).prompts
    assert changed.name == "content.md" and changed.diff is not None and changed.why == ""
    assert "-Keep it short.\n+Keep it short and concrete.\n" in changed.diff
    assert changed.diff.startswith("--- baseline/content.md\n+++ candidate/content.md\n")
    assert escape(changed.diff) in _page(baseline, candidate)


@pytest.mark.parametrize("case", ["missing", "edited since", "symlinked directory", "file outside"])
def test_a_prompt_file_whose_text_cannot_be_trusted_is_listed_with_its_hashes_and_no_diff(
        tmp_path: Path, case: str) -> None:
    before, after = "old text\n", "new text\n"
    old, new = _prompts(tmp_path, "old", before), _prompts(tmp_path, "new", after)
    if case == "missing":
        new = tmp_path / "gone"
    elif case == "edited since":
        (new / "content.md").write_text("edited after the run\n")
    elif case == "symlinked directory":
        (tmp_path / "link").symlink_to(new, target_is_directory=True)
        new = tmp_path / "link"
    else:
        (tmp_path / "outside.md").write_text(after)
        (new / "content.md").unlink()
        (new / "content.md").symlink_to(tmp_path / "outside.md")
    baseline = _with_prompts(make_report(steady(), label="b"), old, before)
    candidate = _with_prompts(make_report(steady(), label="c"), new, after)
    [changed] = compare_detail(baseline, candidate).prompts
    assert changed.diff is None and changed.why.startswith("candidate: ")
    assert changed.candidate == hashlib.sha256(after.encode()).hexdigest()[:16]
    text = page_text(_page(baseline, candidate))
    assert f"candidate {changed.candidate}" in text and "The text is not available: candidate:" in text


def test_a_long_prompt_diff_is_cut_and_counted(tmp_path: Path) -> None:
    before = "".join(f"line {n}\n" for n in range(MAX_DIFF_LINES))
    after = "".join(f"line {n} changed\n" for n in range(MAX_DIFF_LINES))
    baseline = _with_prompts(make_report(steady(), label="b"), _prompts(tmp_path, "old", before), before)
    candidate = _with_prompts(make_report(steady(), label="c"), _prompts(tmp_path, "new", after), after)
    [changed] = compare_detail(baseline, candidate).prompts
    assert changed.diff is not None and len(changed.diff.splitlines()) == MAX_DIFF_LINES + 1
    more = int(re.findall(r"\.\.\. \((\d+) more lines of the diff\)", changed.diff)[0])
    assert more == 2 * MAX_DIFF_LINES + 3 - MAX_DIFF_LINES  # ---, +++, one hunk header, every line out and in
