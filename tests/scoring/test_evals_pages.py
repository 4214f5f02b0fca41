"""`stay evals compare --html` and `stay evals show`: the pages the commands write, with
the exit codes they always had, and never a half-written or stale page."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from stay.cli import main
from tests.scoring.reports import calibration, make_report, steady, with_
from tests.view.conftest import page_text

BASE = make_report(steady(), label="baseline")


def _write(tmp_path: Path, baseline: dict[str, Any], candidate: dict[str, Any]) -> tuple[str, str]:
    paths = []
    for name, document in (("baseline", baseline), ("candidate", candidate)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    (tmp_path / "calibration.json").write_text(json.dumps(calibration(candidate)))  # its judge may gate
    return paths[0], paths[1]


def compare_html(tmp_path: Path, capsys: pytest.CaptureFixture[str], baseline: dict[str, Any],
                 candidate: dict[str, Any], *args: str) -> tuple[int, str, str, Path]:
    page = tmp_path / "out" / "compare.html"
    code = main(["evals", "compare", *_write(tmp_path, baseline, candidate), "--html", str(page),
                 "--permutations", "999", *args])
    out, err = capsys.readouterr()
    return code, out, err, page


def test_the_page_is_written_when_the_gate_fires_and_the_exit_code_is_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err, page = compare_html(tmp_path, capsys, BASE, make_report(steady(drop={"a": 0.25}),
                                                                             label="candidate"))
    assert code == 1 and f"wrote {page}\n" in out and out.rstrip().splitlines()[-1].startswith("regression: a")
    html = page.read_text()
    text = page_text(html)
    assert "Gate fires (exit 1): at least one scorer is worse at a Holm-adjusted p below 0.05. Regressions: a." in text
    assert re.search(r'<tr id="scorer-a">.*class="verdict-worse">worse<br><small>judge: kappa 0.90', html, re.DOTALL)
    assert re.search(r'<tr id="scorer-b">.*class="verdict-none">no detectable difference<br>', html, re.DOTALL)
    assert "No item diff" in text  # regenerated courses: nothing is matched by content
    assert [p.name for p in page.parent.iterdir()] == ["compare.html"]  # no temporary file left beside it


def test_a_passing_comparison_writes_the_same_page_every_time(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    candidate = make_report(steady(), label="candidate")
    code, _out, _err, page = compare_html(tmp_path, capsys, BASE, candidate)
    first = page.read_bytes()
    assert code == 0 and "Gate passes (exit 0)" in page_text(first.decode())
    assert compare_html(tmp_path, capsys, BASE, candidate)[0] == 0 and page.read_bytes() == first


def test_items_bounds_the_pages_item_diff_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = make_report(steady(), content="course")
    candidate = make_report(steady(drop={"a": 0.25}), content="course", judge_model="claude-opus-5-5", label="c",
                            reasons="stricter")
    code, out, _err, page = compare_html(tmp_path, capsys, baseline, candidate, "--allow", "judge-model,uncalibrated",
                                         "--items", "3")
    assert code == 1 and out.count(": 1.00 -> 0.00") == 3
    html = page.read_text()
    assert html.count('<tr class="changed-worse">') == 3 and "the 3 that changed most are listed" in page_text(html)
    assert "candidate:</strong> stricter a-" in html


@pytest.mark.parametrize("case, expected_code, said", [
    ("not comparable", 2, "refused: cannot compare"),
    ("invalid", 5, "refused: invalid run"),
    ("not a report", 2, "error: "),
])
def test_a_refusal_replaces_any_earlier_page_with_one_that_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, expected_code: int, said: str) -> None:
    candidate = {
        "not comparable": with_(make_report(steady(), label="candidate"), backend="offline"),
        "invalid": make_report({b: [{"a": [], "b": e["b"]} for e in es] for b, es in steady().items()}, label="c"),
        "not a report": with_(BASE, version=1),
    }[case]
    page = tmp_path / "out" / "compare.html"
    page.parent.mkdir()
    page.write_text("an earlier run's comparison")
    code, out, err, page = compare_html(tmp_path, capsys, BASE, candidate)
    assert code == expected_code and err.startswith(said) and len(err.splitlines()) == 1
    assert out == f"wrote {page} (refused, exit {expected_code})\n"
    text = page_text(page.read_text())
    assert f"Refused: no comparison (exit {expected_code})" in text
    assert " ".join(err.split(": ", 1)[1].split()) in text  # the reason, word for word
    assert [p.name for p in page.parent.iterdir()] == ["compare.html"]


def test_a_page_that_fails_to_render_leaves_the_earlier_one_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import stay.scoring._compare_page as compare_page

    def broken(_self: Any) -> str:
        raise RuntimeError("a bug while rendering")

    monkeypatch.setattr(compare_page.ComparePage, "html", broken)
    page = tmp_path / "out" / "compare.html"
    page.parent.mkdir()
    page.write_text("the earlier page")
    code, _out, err, page = compare_html(tmp_path, capsys, BASE, make_report(steady(), label="candidate"))
    assert code == 3 and err.startswith("internal error: RuntimeError: a bug while rendering")
    assert page.read_text() == "the earlier page" and len(list(page.parent.iterdir())) == 1


def test_show_prints_a_run_and_writes_its_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = with_(make_report(steady(), label="nightly"), models={"judging": "claude-sonnet-5-5"}, means={"a": 0.75},
                     failures={"a": {"items": 288, "unparseable": 1, "errors": 2}}, seed=7,
                     totals={"build_cost": None, "judge_cost": 0.5, "judge_input_tokens": 10,
                             "judge_output_tokens": 3})
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    page = tmp_path / "pages" / "run.html"
    assert main(["evals", "show", str(path), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"run: {path} (nightly, 4 epochs, seed 7)\n")
    assert re.search(r"^a +v2 +0\.750 +288 +1 +2  \d\.\d{3} ± \d\.\d{3} \(24 builds\)$", out, re.MULTILINE)
    assert "judge model (claude-sonnet-5-5)" in out and "models: judging claude-sonnet-5-5" in out
    assert ("cost: building unknown (a model has no price on file, or the report records none), judging $0.5000 "
            "(10 input, 3 output tokens)") in out
    assert out.endswith(f"wrote {page}\n")
    text = page_text(page.read_text())
    assert "Eval run nightly" in text and "1 unparseable, 2 errors of 288 items" in text
    assert "Builds 24 (4 epochs a brief, run seed 7)" in text
    assert "building unknown (a model has no price on file" in text and "$n/a" not in text  # unknown, not $n/a


def test_show_refuses_a_file_that_is_not_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.json"
    path.write_text("[]")
    assert main(["evals", "show", str(path), "--html", str(tmp_path / "run.html")]) == 2
    assert capsys.readouterr().err == f"error: {path}: not an eval report (a JSON object is expected)\n"
    assert not (tmp_path / "run.html").exists()


def test_items_must_list_at_least_one_and_the_page_default_is_the_commands(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stay.scoring import _cli, _compare_page

    assert _cli.PAGE_ITEMS == _compare_page.PAGE_ITEMS  # kept apart so `stay --help` does not import Jinja2
    code, _out, err, page = compare_html(tmp_path, capsys, BASE, make_report(steady(), label="c"), "--items", "-3")
    assert code == 2 and err == "error: --items -3: list at least 1 item, or leave --items out\n"
    assert "Refused: no comparison (exit 2)" in page_text(page.read_text())


def _stratified(report: dict[str, Any], scorer: str) -> tuple[float, float]:
    """The brief-weighted mean of build means and its standard error, worked out here from
    the report: weights a brief's items a build, variance pooled within briefs."""
    strata = []
    for brief in report["briefs"].values():
        means, counts = [], []
        for build in brief["builds"]:
            values = [i["score"] for i in build["scorers"][scorer]["items"] if i["failure"] is None]
            means.append(sum(values) / len(values))
            counts.append(len(values))
        strata.append((sum(counts) / len(counts), means))
    total = sum(w for w, _m in strata)
    mean = sum(w * sum(m) / len(m) for w, m in strata) / total
    df = sum(len(m) - 1 for _w, m in strata)
    pooled = sum((x - sum(m) / len(m)) ** 2 for _w, m in strata for x in m) / df
    return mean, (pooled * sum((w / total) ** 2 / len(m) for w, m in strata)) ** 0.5


def test_show_gives_each_scorers_mean_over_builds_with_its_standard_error_in_every_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = make_report(steady(drop={"b": 0.25}), label="nightly")
    document["briefs"]["brief-0"]["builds"][0]["scorers"]["a"]["items"][0].update(score=None, failure="error")
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    page, notes = tmp_path / "run.html", tmp_path / "run.md"
    assert main(["evals", "show", str(path), "--html", str(page), "--markdown", str(notes)]) == 0
    out = capsys.readouterr().out
    builds = sum(len(b["builds"]) for b in document["briefs"].values())
    for scorer in document["scorers"]:
        mean, error = _stratified(document, scorer)
        assert error > 0  # steady builds vary a little from epoch to epoch
        said = f"{mean:.3f} ± {error:.3f} ({builds} builds)"
        assert re.search(rf"^{scorer} .*  {re.escape(said)}$", out, re.MULTILINE)
        assert f"| {scorer} | " in notes.read_text() and f" | {said} |" in notes.read_text()
        assert f"{scorer} " in page_text(page.read_text())
        assert f"{mean:.3f} ± {error:.3f} {builds} builds" in page_text(page.read_text())
    assert "sqrt(s2 * sum((w_b / W)^2 / n_b))" in out and "sqrt(s2" in page_text(page.read_text())
    bars = len(document["scorers"]) + len(document.get("means") or {})  # one over builds; the item mean's, if any
    assert page.read_text().count('<svg class="interval"') == bars


def test_show_says_no_standard_error_with_one_build_per_brief(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(make_report(steady(epochs=1), label="once")))
    assert main(["evals", "show", str(path)]) == 0
    assert re.search(r"^a .*  0\.\d{3} ± n/a \(6 builds\)$", capsys.readouterr().out, re.MULTILINE)


def test_the_compare_page_has_the_brief_means_side_by_side_items_cost_and_prompt_sections(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = make_report(steady(), content="course", label="b")
    candidate = make_report(steady(drop={"a": 0.25}), content="course", label="c")
    code, _out, _err, page = compare_html(tmp_path, capsys, baseline, candidate)
    html = page.read_text()
    for section in ("briefs", "side-by-side", "cost", "prompts"):
        assert f'<h2 id="{section}">' in html and f'href="#{section}"' in html
    for kind in ("all", "changed", "failed", "passed"):  # the filters: radio buttons, no script
        assert f'<input type="radio" name="pair-filter" id="show-{kind}"' in html
    assert "<script" not in html and code == 1


def _real_run(tmp_path: Path, judges: tuple[str, ...], *, sessions: bool = True,
              failed: BaseException | None = None) -> Path:
    """A report as the suite's ``report`` writes it: one brief, a build per judge (each
    judged by that model, with tokens used), and a failed build when ``failed`` is given."""
    from stay.models import Usage
    from stay.scoring._core import ItemResult, ScoreResult
    from stay.scoring._report import build_entry, failed_entry, report, write_report

    builds = []
    for epoch, judge in enumerate(judges, 1):
        result = ScoreResult.of("a", judge, [ItemResult(item="x", content="c", score=1.0, reason="taught")],
                                Usage(input_tokens=1_000, output_tokens=100))
        entry = build_entry({"a": result}, epoch=epoch, seed=None, course_sha256=f"sha-{epoch}",
                            build_usage=Usage(), build_cost=0.0, built=True,
                            judged_in="s-judged" if sessions else None)
        builds.append({**entry, "built_in": "s-built"} if sessions else entry)
    if failed is not None:
        builds.append(failed_entry(failed, epoch=len(judges) + 1, seed=None))
    document = report(label="priced", backend="anthropic", prompts_dir="prompts", prompt_hashes={},
                      scorers={"a": 2}, builds={"brief-0": builds}, epochs=len(builds))
    path = tmp_path / "run.json"
    write_report(path, document)
    return path


def test_show_says_a_judging_cost_with_a_model_of_no_price_is_unknown_never_zero(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stay.models import PRICES

    priced = next(iter(PRICES))
    unpriced = "no-price-model"
    assert unpriced not in PRICES
    path = _real_run(tmp_path, (f"model:{priced}", f"model:{unpriced}"))
    assert json.loads(path.read_text())["totals"]["judge_cost"] is None  # unknown, not the priced part alone
    page = tmp_path / "run.html"
    assert main(["evals", "show", str(path), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "judging unknown (a model has no price on file" in out and "judging $" not in out
    assert "judging unknown (a model has no price on file" in page_text(page.read_text())
    known = _real_run(tmp_path, (f"model:{priced}",) * 2)  # every price known: the sum, as before
    cost = json.loads(known.read_text())["totals"]["judge_cost"]
    assert cost > 0 and main(["evals", "show", str(known)]) == 0
    assert f"judging ${cost:.4f}" in capsys.readouterr().out


def test_show_names_the_sessions_the_run_was_built_and_judged_in_or_says_they_are_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _real_run(tmp_path, ("offline",))
    sessions = json.loads(path.read_text())["sessions"]
    said = f"built in {', '.join(sessions['built_in'])}; judged in {', '.join(sessions['judged_in'])}"
    page, notes = tmp_path / "run.html", tmp_path / "run.md"
    assert main(["evals", "show", str(path), "--html", str(page), "--markdown", str(notes)]) == 0
    assert f"\nsessions: {said}\n" in capsys.readouterr().out
    assert f"- sessions: {said}\n" in notes.read_text()
    assert f"Sessions {said}" in page_text(page.read_text())
    document = json.loads(path.read_text())
    del document["sessions"]  # a report from before sessions were recorded
    path.write_text(json.dumps(document))
    assert main(["evals", "show", str(path), "--html", str(page), "--markdown", str(notes)]) == 0
    unknown = "unknown (a report from before sessions were recorded)"
    assert f"\nsessions: {unknown}\n" in capsys.readouterr().out and f"- sessions: {unknown}" in notes.read_text()
    assert f"Sessions {unknown}" in page_text(page.read_text())


def test_the_run_page_lists_failed_builds_with_their_error_and_says_compare_refuses_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stay.errors import ModelUnavailable

    path = _real_run(tmp_path, ("offline",) * 2, failed=ModelUnavailable("the judging model is overloaded"))
    build = json.loads(path.read_text())["briefs"]["brief-0"]["builds"][-1]
    page = tmp_path / "run.html"
    assert main(["evals", "show", str(path), "--html", str(page)]) == 0
    assert "1 failed (brief-0 e03): compare refuses this run until they are rebuilt" in capsys.readouterr().out
    text = page_text(page.read_text())
    builds = len(json.loads(path.read_text())["briefs"]["brief-0"]["builds"])
    assert (f"Failed builds 1 of {builds} builds failed and have no scores: stay evals compare refuses this run "
            "until they are rebuilt.") in text
    assert f"brief-0 e{build['epoch']:02d} {build['failed']['error']} {build['failed']['message']}" in text
    healthy = _real_run(tmp_path, ("offline",) * 2)
    assert main(["evals", "show", str(healthy), "--html", str(page)]) == 0
    assert "Failed builds" not in page_text(page.read_text())
