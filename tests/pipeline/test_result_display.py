"""A run's result in a notebook and a terminal: ``BuildResult._repr_html_`` and
``_repr_markdown_`` show where it stopped and why, the defects by owner, the tokens and the
cost per stage; ``summary()`` is what ``stay build`` prints. Everything a course holds is
shown as text, and the same result gives the same strings."""

from __future__ import annotations

from pathlib import Path

from stay import BuildResult, CourseReport, Defect, Severity, build_course
from stay._display import plural
from stay.models import OfflineBackend, Usage
from stay.pipeline._run import RepairReport, RepairRound, tokens_of
from tests.conftest import ROOT
from tests.validate.test_display import HOSTILE, _Tables

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"


def _result(**changes: object) -> BuildResult:
    defects = (
        Defect("course.yaml", "man001", "-", f"title {HOSTILE}", Severity.FAIL, "manifest"),
        Defect("modules/m01/m01-l01.quiz.yaml", "qz003", "q1", "two correct options", Severity.FAIL, "quiz"),
        Defect("modules/m01/m01-l01.quiz.yaml", "qz003", "q2", "two correct options", Severity.FAIL, "quiz"),
        Defect("modules/m01/m01-l01.md", "les004", "-", "over budget", Severity.WARN, "content"),
    )
    report = CourseReport(dir="courses/x", slug="x", strict=False, evaluated={"man001": 3, "qz003": 7, "les004": 2},
                          passed={"man001": 2, "qz003": 5, "les004": 1}, defects=defects)
    fields: dict[str, object] = dict(
        slug="x", course_dir=Path("courses/x"), command="build", stopped_at=None, reason="done",
        validation=report, repair=RepairReport("the round limit was reached",
                                               (RepairRound(4, 3, ("modules/m01/m01-l01.quiz.yaml",)),),
                                               unrepaired=defects[:3]),
        written=("a.yaml", "b.yaml"), calls=3,
        usage=Usage(input_tokens=1200, cache_creation_input_tokens=300, cache_read_input_tokens=900,
                    output_tokens=450),
        trace_id="0af7651916cd43dd8448eb211c80319c", cost=0.0123,
        usage_by_stage={"quiz": Usage(input_tokens=700, output_tokens=250),
                        "content": Usage(input_tokens=500, cache_creation_input_tokens=300,
                                         cache_read_input_tokens=900, output_tokens=200)},
        cost_by_stage={"content": 0.0071, "quiz": 0.0052})
    fields.update(changes)
    return BuildResult(**fields)  # type: ignore[arg-type]


def test_the_html_shows_the_outcome_defects_by_owner_and_usage_and_cost_by_stage() -> None:
    page = _result()._repr_html_()
    tables = _Tables()
    tables.feed(page)
    rows = tables.rows
    assert "stay build x: complete" in page
    assert ["model calls", "3"] in rows and ["files written", "2"] in rows and ["cost", "$0.0123"] in rows
    assert ["tokens", "1200 input, 300 cache-write, 900 cache-read, 450 output tokens"] in rows
    assert ["validation", "3 FAIL, 1 WARN, 12 checks"] in rows
    assert ["repair", "1 round, stopped because the round limit was reached; 3 defects left"] in rows
    owners = rows[rows.index(["owner", "FAIL", "WARN", "codes"]) + 1:][:3]
    assert owners == [["manifest", "1", "0", "man001"], ["content", "0", "1", "les004"], ["quiz", "2", "0", "qz003 x2"]]
    stages = rows[rows.index(["stage", "input", "cache writes", "cache reads", "output", "cost"]) + 1:]
    assert stages == [["content", "500", "300", "900", "200", "$0.0071"], ["quiz", "700", "0", "0", "250", "$0.0052"]]
    assert set(tables.tags) == {"div", "p", "strong", "table", "thead", "tbody", "tr", "th", "td"}


def test_the_markdown_has_the_same_tables_and_a_stop_says_where_and_why() -> None:
    stopped = _result(stopped_at="plan gate", reason=f"review {HOSTILE}", validation=None, repair=None)
    text = stopped._repr_markdown_()
    assert text.startswith("**stay build x: stopped at the plan gate: review &lt;script&gt;")
    assert "<script>" not in text and "[link](" not in text
    assert "Not validated: the run stopped before the validator." in text
    assert "| owner |" not in text
    assert "| content | 500 | 300 | 900 | 200 | $0.0071 |" in _result()._repr_markdown_()


def test_an_unknown_price_is_said_not_summed() -> None:
    unpriced = _result(cost=None, unpriced=("claude-new-1",), cost_by_stage={"content": 0.0071})
    text = unpriced._repr_markdown_()
    assert "| cost | cost unknown (no price on file for claude-new-1) |" in text
    assert "| quiz | 700 | 0 | 0 | 250 | unknown |" in text
    assert "usage: 3 calls; 1200 input" in unpriced.summary() and "cost unknown" in unpriced.summary()


def test_a_real_run_shows_the_same_strings_twice_and_its_summary_is_the_command_lines(tmp_path: Path) -> None:
    first = build_course(HTTP, courses_dir=tmp_path / "a", yes=True, backend=OfflineBackend(), progress=lambda _l: None)
    second = build_course(HTTP, courses_dir=tmp_path / "b", yes=True, backend=OfflineBackend(),
                          progress=lambda _l: None)
    same = {"course_dir": Path("c"), "trace_id": "t", "wave": None}
    one, two = (BuildResult(**{**r.__dict__, **same}) for r in (first, second))
    assert one._repr_html_() == two._repr_html_() and one._repr_markdown_() == two._repr_markdown_()
    text = first._repr_markdown_()
    assert text.startswith(f"**stay build {first.slug}: complete**")
    assert "No defects." in text and "| validation | 0 FAIL, 0 WARN," in text
    assert first.validation is not None
    assert first.usage_by_stage and first.calls_by_stage
    assert sum(first.calls_by_stage.values()) == first.calls  # every call is some stage's
    assert first.summary().splitlines()[1:] == [
        f"usage: {first.calls} calls; {first.tokens()}; $0.0000",
        *[f"usage: {stage}: {plural(first.calls_by_stage[stage], 'call')}; {tokens_of(usage)}; $0.0000"
          for stage, usage in sorted(first.usage_by_stage.items())],
        f"validation: 0 FAIL, 0 WARN ({first.validation.checks} checks)",
        f"review: not run, so no lesson was reviewed ({first.not_reviewed})",
        "repair: stopped because nothing remains"]


def test_what_the_check_at_the_write_left_and_what_repair_kept_are_shown() -> None:
    from stay.pipeline._run import Change

    left = Defect("outcomes.yaml", "out005", "m01-l01-o1", "verb 'understand'", Severity.FAIL, "outcomes")
    quiz = "modules/m01/m01-l01.quiz.yaml"
    change = Change.of(quiz, "a\nb\nc\nd\n", f"a\nb\nc\n{HOSTILE}\n")
    result = _result(unresolved=(left,), repair=RepairReport(
        "nothing remains", (RepairRound(1, 0, (quiz,), (change,)),)))
    text = result._repr_markdown_()
    assert "| outcomes.yaml | out005 |" in text
    assert f"| 1 | {quiz} | 3 | 4 | 75% |" in text and "<script>" not in text
    summary = result.summary().splitlines()
    assert "unresolved at the write: outcomes.yaml: out005" in summary
    assert f"repair: round 1: {quiz}: 3 of 4 lines kept (75%)" in summary
    assert "unresolved" not in _result().summary() and "lines kept" not in _result()._repr_markdown_()
