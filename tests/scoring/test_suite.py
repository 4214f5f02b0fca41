"""The suite's code path in-process, on one brief: epochs as independent builds in their
own directories, seeds, the report, rescoring saved courses, and compare over real runs."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from stay.cli import main
from stay.errors import InvalidRun, RunsNotComparable, StayError, exit_code
from stay.models import Usage
from stay.scoring import CourseOnDisk, ModelJudge, OfflineJudge, default_scorers, score_course, scorer_versions
from stay.scoring._compare import ITEMS, WORSE, compare
from stay.scoring._report import build_entry, check_report, report
from stay.scoring.scorers import JUDGE_FREE_NAMES, declared
from stay.suite import OFFLINE, evaluate_build, finish_run, incomplete_record, part_name, run_build
from stay.testing import InjectedFault, RiggedBackend, heuristic_judge
from tests.conftest import ROOT
from tests.scoring.reports import SUITE_BRIEF, suite_run
from tests.scoring.test_scorers import FakeModel

BRIEF = SUITE_BRIEF
QUALITY = {"distractors": 0.1, "untaught": 0.1, "exercises": 0.1, "rubrics": 0.1}
EPOCHS = 2


Run = suite_run
"""A suite run of this file's brief: the suite's own configuration."""


def suite(tmp: Path, label: str, seed: int) -> tuple[Run, dict[str, Any]]:
    """What `pytest evals/ --stay-epochs 2 --stay-seed S --stay-quality ...` does, on one brief."""
    run = Run(label, seed, tmp / "courses" / label, tmp / f"{label}.json", quality=QUALITY)
    run.parts.mkdir()
    for epoch in range(1, EPOCHS + 1):
        slug, entry = evaluate_build(BRIEF, epoch=epoch, courses_dir=run.courses, backend=OFFLINE,
                                     prompts_dir=None, judge=heuristic_judge(), run_seed=seed, quality=QUALITY)
        (run.parts / part_name(BRIEF, epoch)).write_text(json.dumps({"slug": slug, "build": entry}))
    document, line = finish_run(run)
    assert document is not None and line.startswith(f"stay evals: wrote {run.output}") and not run.parts.exists()
    return run, document


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Run, dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("suite")
    return {"one": suite(tmp, "one", 1), "two": suite(tmp, "two", 2)}


def test_a_run_with_a_build_missing_writes_no_report_and_keeps_the_last(
        runs: dict[str, tuple[Run, dict[str, Any]]], tmp_path: Path) -> None:
    done, _document = runs["one"]
    run = Run("partial", 1, done.courses, tmp_path / "partial.json", briefs=(BRIEF, BRIEF.with_name("other.yaml")))
    run.output.write_bytes(done.output.read_bytes())  # a complete report from an earlier run
    run.parts.mkdir()
    for epoch in range(1, EPOCHS + 1):  # every build of the first brief; the second's never ran
        (run.parts / part_name(BRIEF, epoch)).write_text(json.dumps({"slug": "x", "build": {}}))
    document, line = finish_run(run)
    wanted = len(run.briefs) * EPOCHS
    assert document is None and run.output.read_bytes() == done.output.read_bytes()
    assert line.splitlines()[0] == (f"stay evals: {run.output} not written (an earlier report is kept as it was): of "
                                    f"{wanted} builds, {wanted - EPOCHS} did not run; listed in "
                                    f"{incomplete_record(run.output)}")
    assert line.splitlines()[1] == f"  did not run: {', '.join(f'other-e{e:02d}' for e in range(1, EPOCHS + 1))}"
    assert "failed" not in line
    assert json.loads(incomplete_record(run.output).read_text())["did_not_run"] == [
        f"other-e{e:02d}" for e in range(1, EPOCHS + 1)]


def test_a_build_that_raises_is_recorded_as_failed_and_named_with_its_error(
        runs: dict[str, tuple[Run, dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing build (here the backend raises in the outcomes stage) writes its part as
    failed, so the run names it as failed, with its error, not as one that did not run;
    the earlier report stays, and a complete rerun writes the report and drops the record."""
    done, _document = runs["one"]
    run = Run("failing", 1, tmp_path / "courses", tmp_path / "failing.json", quality=QUALITY)
    run.output.write_bytes(done.output.read_bytes())
    rigged = functools.partial(RiggedBackend, errors={"outcomes": 1})
    monkeypatch.setattr("stay.suite.RiggedBackend", rigged)
    with pytest.raises(InjectedFault):
        run_build(run, BRIEF, 1, OfflineJudge())
    monkeypatch.undo()
    run_build(run, BRIEF, 2, OfflineJudge())
    part = json.loads((run.parts / part_name(BRIEF, 1)).read_text())
    assert part["build"]["failed"] == {"error": "InjectedFault", "message": part["build"]["failed"]["message"]}
    assert part["build"]["scorers"] == {} and "outcomes" in part["build"]["failed"]["message"]
    other = BRIEF.with_name("other.yaml")  # a brief none of whose builds ran (Ctrl-C)
    document, line = finish_run(dataclasses.replace(run, briefs=(BRIEF, other)))
    assert document is None and run.output.read_bytes() == done.output.read_bytes()
    failed = f"{BRIEF.stem}-e01"
    assert f"of {2 * EPOCHS} builds, 1 failed and {EPOCHS} did not run;" in line
    assert line.splitlines()[1] == f"  failed: {failed}: InjectedFault: {part['build']['failed']['message']}"
    assert "injected error in stage outcomes" in line.splitlines()[1]
    assert line.splitlines()[2] == f"  did not run: {', '.join(f'other-e{e:02d}' for e in range(1, EPOCHS + 1))}"
    assert json.loads(incomplete_record(run.output).read_text())["failed"][failed]["error"] == "InjectedFault"
    reran = {epoch: run_build(run, BRIEF, epoch, OfflineJudge())[1] for epoch in range(1, EPOCHS + 1)}
    assert reran[1]["build"]["usage"]["input_tokens"] > 0  # the failed build is built now
    assert all(reran[e]["build"]["usage"]["input_tokens"] == 0 for e in range(2, EPOCHS + 1))  # the rest reused
    document, line = finish_run(run)
    assert document is not None and line.startswith(f"stay evals: wrote {run.output}")
    assert not incomplete_record(run.output).exists()


def test_a_brief_that_cannot_be_read_is_a_failed_build_filed_under_its_file(tmp_path: Path) -> None:
    brief = tmp_path / "broken.yaml"
    brief.write_text("title: [\n", encoding="utf-8")
    run = Run("broken", 1, tmp_path / "courses", tmp_path / "broken.json", briefs=(brief,), epochs=1)
    with pytest.raises(StayError):
        run_build(run, brief, 1, OfflineJudge())
    _document, line = finish_run(run)
    assert "  failed: broken-e01: BriefError: " in line


def test_each_epoch_is_its_own_build_in_its_own_directory(runs: dict[str, tuple[Run, dict[str, Any]]]) -> None:
    run, document = runs["one"]
    check_report(document)
    assert json.loads(run.output.read_text()) == document
    builds = document["briefs"]["accessible-web-forms"]["builds"]
    assert [b["epoch"] for b in builds] == [1, 2] and all(b["built"] for b in builds)
    assert [b["seed"] for b in builds] == ["1/accessible-web-forms/1", "1/accessible-web-forms/2"]
    assert (run.courses / "e01" / "accessible-web-forms" / "course.yaml").is_file()
    assert (run.courses / "e02" / "accessible-web-forms" / "course.yaml").is_file()
    assert builds[0]["course_sha256"] != builds[1]["course_sha256"]  # seeded noise: two different builds
    assert document["epochs"] == EPOCHS and document["seed"] == 1 and document["quality"] == QUALITY
    assert document["scorers"] == scorer_versions(default_scorers(OfflineJudge()))
    assert document["judge"] == heuristic_judge().name and document["judge_model"] is None
    assert document["failures"]["outcome_coverage"] == {"items": 12, "unparseable": 0, "errors": 0}
    item = builds[0]["scorers"]["distractor_quality"]["items"][0]
    assert {"item", "content", "score", "reason", "failure"} <= set(item) and len(item["content"]) == 64


def test_a_build_is_reproducible_from_its_seed(runs: dict[str, tuple[Run, dict[str, Any]]], tmp_path: Path) -> None:
    _run, document = runs["one"]
    _slug, again = evaluate_build(BRIEF, epoch=2, courses_dir=tmp_path, backend=OFFLINE, prompts_dir=None,
                                  judge=heuristic_judge(), run_seed=1, quality=QUALITY)
    written = document["briefs"]["accessible-web-forms"]["builds"][1]
    assert written["course"] == "courses/one/e02/accessible-web-forms"  # the report says where, relative to it
    assert again == {key: value for key, value in written.items() if key != "course"}


def test_two_seeds_at_equal_quality_are_not_a_regression(runs: dict[str, tuple[Run, dict[str, Any]]]) -> None:
    comparison = compare(runs["one"][1], runs["two"][1])
    assert comparison.exit_code == 0
    # one brief, two epochs a run: six ways to split four builds, so no p-value below 1/3 and
    # nothing this small can be called either way; it says so rather than "no difference"
    assert all(r.mde is None and r.verdict.startswith("inconclusive") for r in comparison.scorers)
    assert {r.scorer: r.test for r in comparison.scorers}["distractor_quality"] == "builds"


def test_rescoring_saved_courses_pairs_every_item_by_content(runs: dict[str, tuple[Run, dict[str, Any]]],
                                                             tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, _document = runs["one"]
    courses = sorted(str(p) for p in run.courses.glob("e*/accessible-web-forms"))
    output = tmp_path / "rescored.json"
    assert main(["evals", "score", *courses, "--output", str(output), "--backend", "offline"]) == 0
    rescored = json.loads(output.read_text())
    assert [b["epoch"] for b in rescored["briefs"]["accessible-web-forms"]["builds"]] == [1, 2]
    assert all(not b["built"] for b in rescored["briefs"]["accessible-web-forms"]["builds"])
    capsys.readouterr()
    # rescored offline, only what needs no judge is judged: a judge difference, tested where both judged
    assert main(["evals", "compare", str(run.output), str(output)]) == exit_code(RunsNotComparable(""))
    assert "answer_key judged only in the baseline" in capsys.readouterr().err
    assert main(["evals", "compare", str(run.output), str(output), "--allow", "judge"]) == 0
    out = capsys.readouterr().out
    for name in scorer_versions(default_scorers(OfflineJudge())):
        if name not in JUDGE_FREE_NAMES:
            assert re.search(rf"^{name} +- +n/a .* not judged \(offline\)$", out, re.MULTILINE), out
            continue
        # 2 items a build: even if every one had flipped, the smallest p-value they can give
        # (2/2^n) is above Holm's level, so no effect is detectable there: said, not hidden
        verdict = "n/a  inconclusive: judge more items" if name == "answer_cues" else "no detectable difference"
        assert re.search(rf"^{name} +items .* \+0\.000 .*{verdict}$", out, re.MULTILINE), out


def test_a_harsher_judge_on_the_same_courses_is_caught_item_by_item(runs: dict[str, tuple[Run, dict[str, Any]]]) -> None:
    run, document = runs["one"]

    def harsh(request: Any) -> dict[str, Any]:
        scorer = declared(request)
        if scorer.name == "distractor_quality":
            return scorer.reply(False, "no misconception is named")
        return scorer.reply(True, "fine")

    judge = ModelJudge(FakeModel(harsh), "claude-opus-5-5")
    builds = []
    for entry in document["briefs"]["accessible-web-forms"]["builds"]:
        course = run.courses / f"e{entry['epoch']:02d}" / "accessible-web-forms"
        loaded = CourseOnDisk.load(course)
        builds.append(build_entry(score_course(loaded, default_scorers(judge)), epoch=entry["epoch"], seed=None,
                                  course_sha256=loaded.sha256, build_usage=Usage(), build_cost=0.0,
                                  built=False))
    rejudged = report(label="opus", backend=OFFLINE, prompts_dir="-", prompt_hashes={},
                      scorers=scorer_versions(default_scorers(judge)), builds={"accessible-web-forms": builds},
                      epochs=EPOCHS)
    assert rejudged["judge"] == "model" and rejudged["judge_model"] == "claude-opus-5-5"
    # a model judged the candidate in a session of its own: allowed, as the judges differ anyway
    result = {r.scorer: r for r in compare(document, rejudged, allow=["judge", "judge-model", "sessions"]).scorers}
    assert result["distractor_quality"].test == ITEMS and result["distractor_quality"].verdict == WORSE


def test_rerunning_a_label_after_a_prompt_edit_rebuilds_that_stage_and_records_it(tmp_path: Path) -> None:
    """Issue 11, item 1: a label rerun into the same courses directory after one prompt
    changed rebuilds exactly that stage's files, and the report says what each file was
    actually built with (not what the run was asked to use)."""

    courses = tmp_path / "courses"
    common: dict[str, Any] = dict(epoch=1, courses_dir=courses, backend=OFFLINE, judge=OfflineJudge())
    _, before = evaluate_build(BRIEF, prompts_dir=None, **common)
    prompts = tmp_path / "prompts"
    shutil.copytree(ROOT / "prompts", prompts)
    quiz = prompts / "quiz.md"
    quiz.write_text(quiz.read_text(encoding="utf-8") + "\nEvery distractor names one misconception.\n",
                    encoding="utf-8")
    _, after = evaluate_build(BRIEF, prompts_dir=prompts, **common)

    changed = sorted(path for path, record in after["built_with"].items() if before["built_with"][path] != record)
    quizzes = sorted(path for path in after["built_with"] if path.endswith(".quiz.yaml"))
    assert quizzes and changed == quizzes  # the quiz stage, and nothing else
    assert all(after["built_with"][p]["prompts/quiz.md"] != before["built_with"][p]["prompts/quiz.md"]
               for p in quizzes)
    assert after["built"] and after["build"]["usage"]["input_tokens"] > 0  # the calls were made, not skipped
    _, again = evaluate_build(BRIEF, prompts_dir=prompts, **common)
    assert again["build"]["usage"]["input_tokens"] == 0  # nothing left stale: a rerun calls no model
    assert again["built_with"] == after["built_with"]


def test_rescoring_a_course_that_cannot_be_read_records_it_as_failed_and_compare_refuses_the_report(
        runs: dict[str, tuple[Run, dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, _document = runs["one"]
    good = sorted(run.courses.glob("e*/accessible-web-forms"))
    damaged = tmp_path / "e03" / "accessible-web-forms"
    shutil.copytree(good[0], damaged)
    (damaged / "curriculum.yaml").write_text("modules: [\n", encoding="utf-8")
    not_a_course = tmp_path / "e04" / "accessible-web-forms"
    not_a_course.mkdir(parents=True)
    output = tmp_path / "rescored.json"
    code = main(["evals", "score", *map(str, good), str(damaged), str(not_a_course), "--output", str(output),
                 "--backend", "offline"])
    _out, err = capsys.readouterr()
    assert code == exit_code(InvalidRun(""))
    assert f"failed {damaged}: ArtefactLoadError: {damaged / 'curriculum.yaml'}: not valid YAML" in err
    rescored = json.loads(output.read_text())
    check_report(rescored)  # a report with failed builds is a report
    builds = rescored["briefs"]["accessible-web-forms"]["builds"]
    assert [b["epoch"] for b in builds] == [1, 2, 3, 4] and rescored["epochs"] == len(builds)
    assert [b.get("failed", {}).get("error") for b in builds] == [None, None, "ArtefactLoadError", "ArtefactLoadError"]
    assert main(["evals", "compare", str(run.output), str(output), "--allow", "judge"]) == exit_code(InvalidRun(""))
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("refused: invalid run: ")
    assert (f"candidate {output}: briefs.accessible-web-forms.builds[2].failed: epoch 3 of brief "
            "accessible-web-forms failed (ArtefactLoadError: ") in err
    assert "rebuild them (run the suite again: the builds that passed are reused)" in err
    assert main(["evals", "show", str(output)]) == 0
    assert "2 failed (accessible-web-forms e03, accessible-web-forms e04)" in capsys.readouterr().out


def test_a_run_built_under_two_quality_knobs_is_refused(runs: dict[str, tuple[Run, dict[str, Any]]],
                                                         tmp_path: Path) -> None:
    """Epoch 1 built under the run's knob, epoch 2 under another (a rerun into the same parts
    with another --stay-quality): the header's quality names one knob, the builds two."""
    _done, document = runs["one"]
    run = Run("mixed", 1, tmp_path / "courses", tmp_path / "mixed.json", quality=QUALITY)
    for epoch, knob in ((1, QUALITY), (2, {k: v * 2 for k, v in QUALITY.items()})):
        run_build(dataclasses.replace(run, quality=knob), BRIEF, epoch, heuristic_judge())
    mixed, _line = finish_run(run)
    assert mixed is not None and mixed["quality"] == QUALITY  # the header says one knob
    with pytest.raises(RunsNotComparable, match=r"builds\[1\]\.quality: built under quality knob .*"
                                                 r"rebuild the run under one --stay-quality"):
        compare(document, mixed)


def test_each_build_records_the_backends_its_course_was_built_by(runs: dict[str, tuple[Run, dict[str, Any]]],
                                                                 tmp_path: Path) -> None:
    """From the course's own run log, so a rescore says who built the course, not who judges it."""
    from stay.scoring._report import REPLAY, course_built_by

    run, document = runs["one"]
    assert all(b["built_by"] == [OFFLINE] for b in document["briefs"]["accessible-web-forms"]["builds"])
    course = tmp_path / "course"
    shutil.copytree(run.courses / "e01" / "accessible-web-forms", course)
    log = course / ".state" / "run-log.md"
    log.write_text(log.read_text() + f"\n## run 9: build (anthropic{REPLAY})\n\n- completed\n")
    assert course_built_by(course) == sorted({OFFLINE, "anthropic"})
    output = tmp_path / "rescored.json"
    assert main(["evals", "score", str(course), "--output", str(output), "--backend", OFFLINE]) == 0
    rescored = json.loads(output.read_text())["briefs"]["course"]["builds"]
    assert rescored[0]["built_by"] == sorted({OFFLINE, "anthropic"})
    log.unlink()  # a course from outside stay: unknown, never a guess
    assert course_built_by(course) == []
