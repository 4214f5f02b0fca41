"""Judging sessions (issue 22, item 1): two runs a model judged in different sessions are
refused with the command that re-judges them, the offline judge is exempt, ``--allow
sessions`` says in every output that drift is not accounted for; ``stay evals rejudge``
judges both runs' saved courses in one session, interleaved, afresh, and byte-identically
on a rerun; and the suite builds and judges a baseline arm beside the candidate in one
session (``--stay-baseline-prompts``)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.conftest import EvalConfig
from stay.artefacts import Brief
from stay.briefs import slugify
from stay.errors import RunsNotComparable, UsageError, exit_code
from stay.scoring import OfflineJudge
from stay.scoring._compare import compare
from stay.scoring._judges import interleaved, make_judge, rejudge
from stay.scoring._report import read_report, run_checks
from stay.scoring.scorers import declared
from stay.suite import OFFLINE, epoch_dir, evaluate_build, finish_run, finish_runs, part_name, suite_session
from tests.conftest import ROOT, run_stay
from tests.scoring.reports import SUITE_BRIEF, make_report, steady, suite_run
from tests.scoring.test_scorers import FakeModel

BRIEF = SUITE_BRIEF
SLUG = slugify(Brief.from_yaml(BRIEF).title)
EPOCHS = 2
OFFLINE_JUDGE = OfflineJudge.name
NOT_ACCOUNTED = "judge drift between days is not in the test, so it is not accounted for"


def written(tmp: Path, *documents: dict[str, Any]) -> list[str]:
    paths = []
    for name, document in zip(("baseline", "candidate"), documents, strict=True):
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    return paths


def apart(judge: str = "model", judge_model: str | None = "claude-sonnet-5-5") -> tuple[dict[str, Any], ...]:
    """Two runs judged on two days: each in a session of its own."""
    return tuple(make_report(steady(drop={"a": drop}), label=label, judge=judge, judge_model=judge_model,
                             session=f"s-{label}-day") for label, drop in (("baseline", 0.0), ("candidate", 0.1)))


def test_two_runs_a_model_judged_in_different_sessions_are_refused_with_the_command_that_rejudges(
        tmp_path: Path) -> None:
    paths = written(tmp_path, *apart())
    done = run_stay("evals", "compare", *paths)
    assert done.returncode == exit_code(RunsNotComparable("")) and done.stdout == ""
    assert done.stderr.count("\n") == 1 and NOT_ACCOUNTED in done.stderr
    assert "judged in session s-candidate-day, baseline " + paths[0] + " in session s-baseline-day" in done.stderr
    assert f"re-judge both in one session with `stay evals rejudge {paths[0]} {paths[1]}`, or pass --allow " \
           "sessions" in done.stderr


def test_a_report_from_before_sessions_were_recorded_is_an_unknown_session_and_refused() -> None:
    base = make_report(steady(), label="baseline", session=None)
    cand = make_report(steady(), label="candidate")  # the session of today's run
    with pytest.raises(RunsNotComparable, match="baseline baseline in an unknown session"):
        compare(base, cand)


def test_the_offline_judge_cannot_drift_so_its_runs_are_compared_across_sessions() -> None:
    base, cand = apart(judge=OFFLINE_JUDGE, judge_model=None)
    assert not [f for f in run_checks(("baseline", base), ("candidate", cand)) if f.check == "sessions"]
    assert compare(base, cand).exit_code in (0, 1)  # compared, not refused
    with pytest.raises(RunsNotComparable, match="different sessions"):
        compare(*apart())  # the same two runs judged by a model are refused


def test_allow_sessions_compares_and_every_output_says_drift_is_not_accounted_for(tmp_path: Path) -> None:
    paths = written(tmp_path, *apart())
    markdown, html = tmp_path / "compare.md", tmp_path / "compare.html"
    done = run_stay("evals", "compare", *paths, "--allow", "sessions", "--markdown", str(markdown), "--html", str(html))
    assert done.returncode in (0, 1), done.stderr
    assert re.search(rf"^allowed: .*{re.escape(NOT_ACCOUNTED)}", done.stdout, re.MULTILINE), done.stdout
    assert NOT_ACCOUNTED in markdown.read_text(encoding="utf-8")
    assert NOT_ACCOUNTED in html.read_text(encoding="utf-8")


def test_one_session_interleaves_the_arms_by_brief_and_epoch() -> None:
    base = make_report(steady(briefs=2, epochs=2), label="baseline")
    cand = make_report(steady(briefs=2, epochs=3), label="candidate")
    cand["briefs"]["brief-0"]["builds"].reverse()  # filed out of order: judged by epoch all the same
    order = [(run, brief, (base, cand)[run]["briefs"][brief]["builds"][i]["epoch"])
             for run, brief, i in interleaved(base, cand)]
    assert order == [(0, "brief-0", 1), (1, "brief-0", 1), (0, "brief-0", 2), (1, "brief-0", 2), (1, "brief-0", 3),
                     (0, "brief-1", 1), (1, "brief-1", 1), (0, "brief-1", 2), (1, "brief-1", 2), (1, "brief-1", 3)]


# --- stay evals rejudge, over two runs the suite wrote, each judged by a model on its own day


def Arm(label: str, seed: int, courses: Path, output: Path, **changes: Any) -> EvalConfig:
    """One arm of a run on this file's brief, judged by a model: the suite's own configuration."""
    return suite_run(label, seed, courses, output, **{"judge_model": "claude-sonnet-5-5", **changes})


def verdict(value: bool) -> Any:
    """A judge that answers every item ``value`` (a lenient day, or a harsh one)."""
    def reply(request: Any) -> dict[str, Any]:
        scorer = declared(request)
        # an unquoted finding is dropped: both days say the key is fine
        return scorer.reply(value or scorer.name == "answer_key", f"said {value}")
    return reply


def judged_on_its_own_day(tmp: Path, label: str, seed: int, model: FakeModel) -> Arm:
    """One arm of the suite, built offline and judged by ``model`` in a session of its own;
    each course's judge cache (where `stay evals score` keeps one) holds that day's verdicts."""
    arm = Arm(label, seed, tmp / "courses" / label, tmp / f"{label}.json", quality={"distractors": 0.2})
    arm = dataclasses.replace(arm, session=suite_session([arm]))
    arm.parts.mkdir(parents=True)
    for epoch in range(1, EPOCHS + 1):
        cache = epoch_dir(arm.courses, epoch) / SLUG / ".runs" / "judge-cache"
        judge = make_judge("anthropic", cache, judge_model=arm.judge_model, client=model)
        slug, entry = evaluate_build(BRIEF, epoch=epoch, courses_dir=arm.courses, backend=OFFLINE, prompts_dir=None,
                                     judge=judge, run_seed=seed, quality=arm.quality)
        (arm.parts / part_name(BRIEF, epoch)).write_text(json.dumps({"slug": slug, "build": entry}))
    document, _line = finish_run(arm)
    assert document is not None
    return arm


@pytest.fixture(scope="module")
def two_days(tmp_path_factory: pytest.TempPathFactory) -> tuple[Arm, Arm]:
    tmp = tmp_path_factory.mktemp("days")
    lenient = FakeModel(verdict(True))
    return judged_on_its_own_day(tmp, "baseline", 1, lenient), judged_on_its_own_day(tmp, "candidate", 2, lenient)


def test_the_suite_records_where_each_course_is_and_the_session_it_was_judged_in(two_days: tuple[Arm, Arm]) -> None:
    for arm in two_days:
        document = read_report(arm.output)
        assert document["sessions"] == {"built_in": [arm.session], "judged_in": [arm.session]}
        for build in document["briefs"][SLUG]["builds"]:
            assert build["judged_in"] == arm.session
            assert build["course"] == f"courses/{arm.label}/e{build['epoch']:02d}/{SLUG}"
    assert two_days[0].session != two_days[1].session
    with pytest.raises(RunsNotComparable, match="different sessions"):
        compare(read_report(two_days[0].output), read_report(two_days[1].output))


def test_rejudge_judges_both_runs_afresh_in_one_session_interleaved_and_a_rerun_pays_nothing(
        two_days: tuple[Arm, Arm], tmp_path: Path) -> None:
    harsh = FakeModel(verdict(False))  # today's judge: the cached lenient verdicts must not be replayed
    lines: list[str] = []
    session, reports = rejudge(two_days[0].output, two_days[1].output, backend="anthropic", output_dir=tmp_path,
                               client=harsh, progress=lines.append)
    assert [path.name for path, _document in reports] == ["baseline.rejudged.json", "candidate.rejudged.json"]
    assert harsh.seen  # answered afresh
    for (path, document), arm in zip(reports, two_days, strict=True):
        assert read_report(path) == document and document["sessions"]["judged_in"] == [session]
        assert document["sessions"]["built_in"] == [arm.session]  # built when it was built: kept
        assert all(b["judged_in"] == session and (path.parent / b["course"] / "course.yaml").is_file()
                   for b in document["briefs"][SLUG]["builds"])
        assert document["means"]["distractor_quality"] == 0.0  # today's verdicts, not yesterday's 1.0
        assert read_report(arm.output)["means"]["distractor_quality"] == 1.0
    assert [re.sub(r" \(|, session.*", " ", line).split()[1:] for line in lines] == [
        [str(arm.courses / f"e{epoch:02d}" / SLUG), arm.label] for epoch in range(1, EPOCHS + 1) for arm in two_days]
    compare(reports[0][1], reports[1][1])  # one session: not refused
    unused = FakeModel(verdict(True))
    again, rerun = rejudge(two_days[0].output, two_days[1].output, backend="anthropic", output_dir=tmp_path,
                           client=unused)
    assert again == session and unused.seen == []  # the same session again: answered from its own cache
    # the same report, but for what this run paid for judging (nothing: every verdict was cached)
    assert [unpaid(document) for _path, document in rerun] == [unpaid(document) for _path, document in reports]
    assert all(document["totals"]["judge_input_tokens"] == 0 for _path, document in rerun)
    assert all(document["totals"]["judge_input_tokens"] > 0 for _path, document in reports)


def unpaid(document: dict[str, Any]) -> dict[str, Any]:
    """A report less what its run paid for judging (usage and cost): what a rerun repeats."""
    found = json.loads(json.dumps(document))
    found.pop("totals")
    for brief in found["briefs"].values():
        for build in brief["builds"]:
            for result in build["scorers"].values():
                result.pop("usage"), result.pop("cost")
    return dict(found)


def test_rejudging_offline_again_writes_the_same_bytes(two_days: tuple[Arm, Arm], tmp_path: Path) -> None:
    first = [path.read_bytes() for path, _d in rejudge(two_days[0].output, two_days[1].output, backend=OFFLINE,
                                                          output_dir=tmp_path)[1]]
    second = [path.read_bytes() for path, _d in rejudge(two_days[0].output, two_days[1].output, backend=OFFLINE,
                                                           output_dir=tmp_path)[1]]
    assert first == second


def test_the_rejudge_command_writes_beside_the_inputs(two_days: tuple[Arm, Arm]) -> None:
    done = run_stay("evals", "rejudge", str(two_days[0].output), str(two_days[1].output), "--backend", "offline")
    assert done.returncode == 0, done.stderr
    outputs = [arm.output.with_name(f"{arm.label}.rejudged.json") for arm in two_days]
    assert done.stdout.startswith(f"wrote {outputs[0]} and {outputs[1]} ({2 * EPOCHS} builds judged interleaved")
    documents = [read_report(path) for path in outputs]
    assert documents[0]["sessions"]["judged_in"] == documents[1]["sessions"]["judged_in"]
    assert documents[0]["judge"] == OFFLINE_JUDGE


def test_a_rescore_is_a_session_of_its_own_that_names_its_courses_so_it_can_be_rejudged(
        two_days: tuple[Arm, Arm], tmp_path: Path) -> None:
    courses = [str(epoch_dir(two_days[1].courses, epoch) / SLUG) for epoch in range(1, EPOCHS + 1)]
    output = tmp_path / "rescored.json"
    assert run_stay("evals", "score", *courses, "--output", str(output), "--backend", "offline").returncode == 0
    rescored = read_report(output)
    builds = rescored["briefs"][SLUG]["builds"]
    assert len(rescored["sessions"]["judged_in"]) == 1 and all(b["judged_in"] for b in builds)
    assert [str((output.parent / b["course"]).resolve()) for b in builds] == [str(Path(c).resolve()) for c in courses]
    session, _reports = rejudge(two_days[0].output, output, backend=OFFLINE, output_dir=tmp_path / "rejudged")
    assert session != rescored["sessions"]["judged_in"][0]


@pytest.mark.parametrize("damage, message", [
    (lambda build, tmp: build.pop("course"), "no course directory recorded"),
    (lambda build, tmp: build.update(course="elsewhere"), "is not a course directory"),
    (lambda build, tmp: (os.symlink(tmp / build["course"], tmp / "link"), build.update(course="link")),
     "goes through a symbolic link"),
    (lambda build, tmp: build.update(course_sha256="0" * 64), "is not the course the report scored"),
])
def test_rejudge_refuses_a_course_it_cannot_trust_in_one_line(two_days: tuple[Arm, Arm], tmp_path: Path,
                                                              damage: Any, message: str) -> None:
    document = json.loads(two_days[0].output.read_text(encoding="utf-8"))
    build = document["briefs"][SLUG]["builds"][0]
    build["course"] = os.path.relpath(two_days[0].output.parent / build["course"], tmp_path)
    damage(build, tmp_path)
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        rejudge(base, two_days[1].output, backend=OFFLINE)
    done = run_stay("evals", "rejudge", str(base), str(two_days[1].output), "--backend", "offline")
    assert done.returncode == exit_code(UsageError("")) and done.stderr.count("\n") == 1
    assert f"{base}: briefs.{SLUG}.builds[0].course" in done.stderr and message in done.stderr


def test_an_arm_of_a_two_arm_run_is_not_written_without_the_other(two_days: tuple[Arm, Arm], tmp_path: Path) -> None:
    arms = [Arm(arm.label, arm.seed, arm.courses, tmp_path / arm.output.name) for arm in two_days]
    for arm in arms:
        arm.parts.mkdir()
    for epoch in range(1, EPOCHS + 1):  # the baseline's builds all ran; the candidate's second did not
        (arms[0].parts / part_name(BRIEF, epoch)).write_text(json.dumps({"slug": SLUG, "build": {}}))
    (arms[1].parts / part_name(BRIEF, 1)).write_text(json.dumps({"slug": SLUG, "build": {}}))
    lines = finish_runs(arms)
    assert not any(arm.output.exists() or arm.parts.exists() for arm in arms)
    assert "the other arm's are not" in lines[0] and "of 2 builds, 1 did not run" in lines[1]


@pytest.mark.slow
def test_the_suite_builds_and_judges_a_baseline_arm_beside_the_candidate_in_one_session(tmp_path: Path) -> None:
    """`pytest evals --stay-prompts CAND --stay-baseline-prompts BASE`, offline, one epoch."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pytest", str(ROOT / "evals"), "-v", "-n", "0", "-p", "no:randomly",
               "--stay-epochs", "1", "--stay-backend", "offline", "--stay-prompts", str(ROOT / "prompts"),
               "--stay-baseline-prompts", str(ROOT / "prompts"), "--stay-output", str(out / "candidate.json"),
               "--stay-courses", str(out / "courses" / "candidate")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ran = re.findall(r"test_build\[([a-z-]+)-e01-(baseline|candidate)\] PASSED", done.stdout)
    briefs = sorted(path.stem for path in (ROOT / "evals" / "briefs").glob("*.yaml"))
    assert ran == [(brief, arm) for brief in briefs for arm in ("baseline", "candidate")]  # interleaved
    documents = [read_report(out / f"{label}.json") for label in ("baseline", "candidate")]
    assert documents[0]["sessions"] == documents[1]["sessions"] and len(documents[0]["sessions"]["judged_in"]) == 1
    seeds = [{b["seed"].split("/")[0] for brief in d["briefs"].values() for b in brief["builds"]} for d in documents]
    assert seeds == [{"1000"}, {"0"}]  # the baseline arm's own seed: its own builds
    assert all((out / b["course"] / "course.yaml").is_file() for d in documents for brief in d["briefs"].values()
               for b in brief["builds"])
    assert not [f for f in run_checks(("baseline", documents[0]), ("candidate", documents[1]))
                if f.check in ("sessions", "built-apart")]
