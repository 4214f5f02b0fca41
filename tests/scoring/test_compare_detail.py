"""The comparison page's detail (stay.scoring._compare_page): each brief's build means,
the items of both runs side by side, each run's cost, and the prompt files that differ.
Expectations are worked out from the input reports, never pinned."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from stay.scoring import compare_page
from stay.scoring._compare import compare
from stay.scoring._compare_page import MAX_DIFF_LINES, PER_KIND, compare_detail, pair_items, run_cost
from stay.view import PAIR_KINDS
from tests.scoring.reports import make_report, steady, with_
from tests.view.conftest import eval_reports, page_text  # noqa: F401  (eval_reports: two real offline runs)

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


# The lesson each item was judged on: two real offline runs (tests/view/conftest.py), their
# courses copied beside their reports and named by each build, as the suite names them.

def runs_with_courses(tmp_path: Path, reports: tuple[Path, Path]) -> tuple[Path, Path]:
    """Both runs' reports and courses copied into ``tmp_path``, each build naming its
    course relative to its report (``course``), as the suite's report records it."""
    from stay.scoring._judges import relative_course
    from stay.suite import epoch_dir

    copied = []
    for report in reports:
        courses = tmp_path / report.stem
        shutil.copytree(report.parent / report.stem, courses, symlinks=True)
        document = json.loads(report.read_text())
        path = tmp_path / report.name
        for slug, brief in document["briefs"].items():
            for build in brief["builds"]:
                build["course"] = relative_course(epoch_dir(courses, build["epoch"]) / slug, path)
        path.write_text(json.dumps(document))
        copied.append(path)
    return copied[0], copied[1]


def _recorded_lesson(build: Any, scorer: str, item: str) -> str:
    """The lesson the report records its judge read for ``item`` (``ItemResult.lesson``)."""
    return str(next(i["lesson"] for i in build["scorers"][scorer]["items"] if i["item"] == item))


def _judged_sides(detail: Any) -> list[tuple[int, str, Any, Any]]:
    """(run, scorer, pair, side) of every listed side judged on a lesson."""
    from stay.scoring._compare_page import judged_length

    return [(run, group.scorer, pair, side) for group in detail.scorers for pair in group.pairs
            for run, side in enumerate((pair.baseline, pair.candidate))
            if side is not None and judged_length(side.shown) is not None]


def test_an_item_judged_on_a_lesson_links_to_the_lesson_its_judge_read_each_shown_once(
        tmp_path: Path, eval_reports: tuple[Path, Path]) -> None:  # noqa: F811
    from stay.scoring import CourseOnDisk
    from stay.scoring._compare_page import MAX_LESSON_CHARS, judged_length
    from stay.scoring._compare_page import compare_page as page_of
    from stay.scoring._report import read_report

    paths = runs_with_courses(tmp_path, eval_reports)
    reports = (read_report(paths[0]), read_report(paths[1]))
    detail = compare_detail(*reports, paths=paths)
    judged = _judged_sides(detail)
    assert {"outcome_coverage", "distractor_quality", "exercise_alignment"} <= {s for _r, s, _p, _side in judged}
    lessons = {lesson.anchor: lesson for lesson in detail.lessons}
    expected: dict[str, set[str]] = {}
    courses: dict[Path, CourseOnDisk] = {}  # each course loaded once, not once per judged side
    for run, scorer, pair, side in judged:
        build = reports[run]["briefs"][pair.brief]["builds"][side.build]
        where = paths[run].parent / build["course"]
        if where not in courses:
            courses[where] = CourseOnDisk.load(where)
        course = courses[where]
        lesson = next(lsn for lsn in course.lessons if lsn.id == _recorded_lesson(build, scorer, side.item))
        assert lesson.content is not None and len(lesson.content.body) == judged_length(side.shown)
        assert side.lesson == lesson.id and side.lesson_why == "" and side.lesson_anchor in lessons
        shown = lessons[side.lesson_anchor]
        assert shown.text == lesson.content.body and len(shown.text) < MAX_LESSON_CHARS  # whole, not cut
        assert f"{('baseline', 'candidate')[run]} {pair.brief} e{side.epoch:02d}" in shown.read_by
        expected.setdefault(lesson.content.body, set()).add(side.lesson_anchor)
    assert len(detail.lessons) == len(expected) and all(len(a) == 1 for a in expected.values())  # once per text
    unjudged = [side for group in detail.scorers for pair in group.pairs for side in (pair.baseline, pair.candidate)
                if side is not None and judged_length(side.shown) is None]
    assert unjudged and not any(side.lesson or side.lesson_why for side in unjudged)  # the rubric, the validator
    comparison = compare(*reports, permutations=199)
    html = page_of(comparison, *reports, paths=(str(paths[0]), str(paths[1]))).html()
    for lesson in detail.lessons:
        links = sum(side.lesson_anchor == lesson.anchor for _r, _s, _p, side in judged)
        assert html.count(f'id="{lesson.anchor}"') == 1 and html.count(f'href="#{lesson.anchor}"') == links
        assert str(escape(lesson.text)) in html
    assert html == page_of(comparison, *reports, paths=(str(paths[0]), str(paths[1]))).html()  # deterministic


def _candidate_courses(paths: tuple[Path, Path]) -> Path:
    return paths[1].parent / paths[1].stem


@pytest.mark.sweep
@pytest.mark.parametrize(("case", "why"), [
    ("no course recorded", "course not on disk: the report names no course"),
    ("course moved", "course not on disk ("),
    ("course edited", "course changed since it was judged"),
    ("course through a link", "is reached through a symbolic link, which is not followed"),
    ("lesson file a link", "is not a regular file of the course (a symbolic link is not followed)"),
])
def test_a_lesson_that_cannot_be_trusted_is_not_shown_and_the_item_says_why(
        tmp_path: Path, eval_reports: tuple[Path, Path], case: str, why: str) -> None:  # noqa: F811
    from stay.scoring._report import read_report

    paths = runs_with_courses(tmp_path, eval_reports)
    courses = _candidate_courses(paths)
    if case == "no course recorded":
        document = json.loads(paths[1].read_text())
        for brief in document["briefs"].values():
            for build in brief["builds"]:
                del build["course"]
        paths[1].write_text(json.dumps(document))
    elif case == "course moved":
        courses.rename(tmp_path / "elsewhere")
    elif case == "course edited":
        for lesson in courses.rglob("*.md"):
            lesson.write_text(lesson.read_text() + "\nAdded after the run was judged.\n")
    elif case == "course through a link":
        courses.rename(tmp_path / "elsewhere")
        courses.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    else:  # the same bytes, so the course still hashes as judged: the link itself is refused
        outside = tmp_path / "outside"
        for n, lesson in enumerate(sorted(courses.rglob("m*-l*.md"))):
            outside.mkdir(exist_ok=True)
            (outside / f"{n}.md").write_bytes(lesson.read_bytes())
            lesson.unlink()
            lesson.symlink_to(outside / f"{n}.md")
    reports = (read_report(paths[0]), read_report(paths[1]))
    detail = compare_detail(*reports, paths=paths)
    judged = _judged_sides(detail)
    candidate = [side for run, _s, _p, side in judged if run == 1]
    assert candidate and all(side.lesson_anchor is None and why in side.lesson_why for side in candidate)
    assert all(side.lesson_anchor for run, _s, _p, side in judged if run == 0)  # the baseline's still show
    read_by = {label.split()[0] for lesson in detail.lessons for label in lesson.read_by}
    assert read_by == {"baseline"}
    text = page_text(compare_page(compare(*reports, permutations=199), *reports,
                                  paths=(str(paths[0]), str(paths[1]))).html())
    assert f"is not shown: {candidate[0].lesson_why}." in text


def test_the_lessons_a_page_shows_are_bounded_in_number_and_length(
        tmp_path: Path, eval_reports: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from stay.scoring import _compare_page
    from stay.scoring._report import read_report

    paths = runs_with_courses(tmp_path, eval_reports)
    reports = (read_report(paths[0]), read_report(paths[1]))
    every = compare_detail(*reports, paths=paths).lessons
    shortest = min(lesson.characters for lesson in every)
    monkeypatch.setattr(_compare_page, "MAX_LESSONS", len(every) - 1)
    monkeypatch.setattr(_compare_page, "MAX_LESSON_CHARS", shortest // 2)
    detail = compare_detail(*reports, paths=paths)
    assert [lesson.anchor for lesson in detail.lessons] == [lesson.anchor for lesson in every][:len(every) - 1]
    for lesson in detail.lessons:
        assert lesson.text.endswith(f"... ({lesson.characters - shortest // 2} more characters)")
    left = {side.lesson_why for _r, _s, _p, side in _judged_sides(detail) if side.lesson_anchor is None}
    assert left == {f"the page shows at most {len(every) - 1} lessons"}
