"""Issue 22, items 4 and 5: a report names what its courses were built with (from their
ledgers, not from what the run was asked to use), and a comparison names each run's
backend and judge, the prompt files that differ, and when the generator cannot see them.
Also (issue 21): the offline quality knob is part of what a build is recorded as made with."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stay.cli import main
from stay.scoring import OfflineJudge, provenance_notes
from stay.suite import OFFLINE, evaluate_build, write_run_report
from tests.conftest import ROOT

BRIEF = ROOT / "evals" / "briefs" / "accessible-web-forms.yaml"
EDITED = "quiz.md"
OFFLINE_BLIND = "the offline backend does not read prompt text: this comparison cannot see a prompt change"


@dataclass(frozen=True)
class Run:
    """What evals/conftest.py's EvalConfig gives write_run_report."""
    label: str
    output: Path
    prompts_dir: Path | None = None
    rescore: bool = False
    backend: str = OFFLINE
    epochs: int = 1
    seed: int = 0
    quality: Any = None


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the packaged prompts with one prompt changed."""
    prompts = tmp_path_factory.mktemp("prompts") / "prompts"
    shutil.copytree(ROOT / "prompts", prompts)
    (prompts / EDITED).write_text((prompts / EDITED).read_text(encoding="utf-8") + "\nName one misconception.\n",
                                  encoding="utf-8")
    return prompts


def run(tmp: Path, label: str, prompts_dir: Path | None, *, rescore: bool = False,
        asked: Path | None = None) -> dict[str, Any]:
    """One brief, one epoch: build (or, rescoring, load) and write the report, as the suite does;
    ``asked`` is the --stay-prompts the report is told about (default: ``prompts_dir``)."""
    slug, entry = evaluate_build(BRIEF, epoch=1, courses_dir=tmp / "courses" / label, backend=OFFLINE,
                                 prompts_dir=prompts_dir, judge=OfflineJudge(), rebuild=not rescore)
    cfg = Run(label, tmp / f"{label}.json", prompts_dir=asked if asked is not None else prompts_dir, rescore=rescore)
    return write_run_report(cfg, {slug: [entry]})


def test_a_prompts_directory_from_the_environment_is_what_the_header_names(
        edited: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAY_PROMPTS_DIR", str(edited))
    document = run(tmp_path, "env", None)  # no --stay-prompts: the builds read STAY_PROMPTS_DIR
    assert document["prompts"]["sha256"][EDITED] == sha(edited / EDITED)[:16]
    assert document["prompts"]["source"] == "ledger"
    assert document["prompts"]["dir"] == str(edited)


def test_a_rescore_names_the_prompts_its_courses_were_built_with_not_the_ones_it_was_given(
        edited: Path, tmp_path: Path) -> None:
    run(tmp_path, "r", None)  # built with the packaged prompts
    document = run(tmp_path, "r", None, rescore=True, asked=edited)  # --stay-rescore --stay-prompts EDITED
    assert document["prompts"]["sha256"][EDITED] == sha(ROOT / "prompts" / EDITED)[:16]
    assert document["prompts"]["dir"].startswith("(not generated")


def test_stay_evals_score_keeps_what_the_courses_were_built_with(edited: Path, tmp_path: Path) -> None:
    built = run(tmp_path, "s", edited)
    output = tmp_path / "scored.json"
    assert main(["evals", "score", str(tmp_path / "courses" / "s" / "e01" / "accessible-web-forms"),
                 "--output", str(output), "--backend", "offline"]) == 0
    scored = json.loads(output.read_text(encoding="utf-8"))
    (entry,) = scored["briefs"]["accessible-web-forms"]["builds"]
    assert entry["built_with"] == built["briefs"]["accessible-web-forms"]["builds"][0]["built_with"]
    assert scored["prompts"]["sha256"][EDITED] == sha(edited / EDITED)[:16] != sha(ROOT / "prompts" / EDITED)[:16]


def test_compare_names_backends_judges_the_changed_prompt_and_that_offline_cannot_see_it(
        edited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(tmp_path, "base", None)
    run(tmp_path, "cand", edited)
    capsys.readouterr()
    markdown, html = tmp_path / "compare.md", tmp_path / "compare.html"
    main(["evals", "compare", str(tmp_path / "base.json"), str(tmp_path / "cand.json"), "--markdown", str(markdown),
          "--html", str(html)])
    out = capsys.readouterr().out
    page = markdown.read_text(encoding="utf-8")
    judge = OfflineJudge().name
    assert OFFLINE_BLIND in html.read_text(encoding="utf-8")
    for shown in (out, page):
        assert f"baseline: backend {OFFLINE}, judge {judge}; candidate: backend {OFFLINE}, judge {judge}" in shown
        assert f"prompt files that differ between the runs: {EDITED}\n" in shown
        assert OFFLINE_BLIND in shown


def test_compare_of_two_runs_with_the_same_prompts_names_no_prompt_change(tmp_path: Path) -> None:
    base, cand = run(tmp_path, "a", None), run(tmp_path, "b", None)
    notes = provenance_notes(base, cand)
    assert not any("prompt" in line for line in notes) and len(notes) == 1


def test_compare_says_when_a_header_names_prompts_its_courses_were_not_built_with(edited: Path,
                                                                                 tmp_path: Path) -> None:
    base, cand = run(tmp_path, "a", None), run(tmp_path, "b", None)
    cand["prompts"]["sha256"][EDITED] = sha(edited / EDITED)  # a header that lies
    notes = provenance_notes(base, cand)
    assert f"candidate: its header names prompts its courses were not built with (the builds' ledgers differ): " \
           f"{EDITED}" in notes
    assert not any(line.startswith("prompt files that differ") for line in notes)  # the builds agree


def test_a_rerun_under_another_quality_knob_rebuilds_and_records_the_knob(tmp_path: Path) -> None:
    """Issue 21: the knob is not a ledger input, so a rerun over the same courses with another
    knob used to find nothing stale and report the old builds as the new knob's."""
    knob = {"distractors": 0.9, "exercises": 0.9}
    common: dict[str, Any] = dict(epoch=1, backend=OFFLINE, prompts_dir=None, judge=OfflineJudge())
    _, plain = evaluate_build(BRIEF, courses_dir=tmp_path / "same", **common)
    _, rerun = evaluate_build(BRIEF, courses_dir=tmp_path / "same", quality=knob, **common)
    _, fresh = evaluate_build(BRIEF, courses_dir=tmp_path / "fresh", quality=knob, **common)
    assert rerun["course_sha256"] == fresh["course_sha256"] != plain["course_sha256"]
    assert plain["quality"] == {} and rerun["quality"] == fresh["quality"] == knob
    _, rescored = evaluate_build(BRIEF, courses_dir=tmp_path / "same", rebuild=False, **common)
    assert rescored["quality"] == knob  # a rescore reports the knob the course was built with


def test_show_says_where_the_prompt_hashes_come_from_and_names_a_prompt_built_in_two_versions(
        edited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stay.scoring._report import report

    one, two = run(tmp_path, "a", None), run(tmp_path, "b", edited)
    builds = [b for document in (one, two) for b in document["briefs"]["accessible-web-forms"]["builds"]]
    for epoch, build in enumerate(builds, 1):
        build["epoch"] = epoch
    mixed = report(label="mixed", backend=OFFLINE, prompts_dir="-", prompt_hashes={}, scorers=one["scorers"],
                   builds={"accessible-web-forms": builds}, epochs=len(builds))
    assert sorted(mixed["prompts"]["mixed"]) == [EDITED] and EDITED not in mixed["prompts"]["sha256"]
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(mixed), encoding="utf-8")
    capsys.readouterr()
    assert main(["evals", "show", str(path)]) == 0
    assert f"hashes as the builds' ledgers record them; built in more than one version: {EDITED}\n" \
        in capsys.readouterr().out


@pytest.mark.sweep
@pytest.mark.parametrize("record", [b"{not json", b'{"distractors": "lots"}', b'{"distractors": NaN}', b"[0.5]"])
def test_a_damaged_quality_record_is_one_line_and_a_rerun_rebuilds_rather_than_trust_it(
        tmp_path: Path, record: bytes) -> None:
    """The record beside a course is read from disk, so it is untrusted: read bounded and
    checked, a damaged one is a one-line Damaged, and the suite's rerun builds afresh."""
    from stay._bounds import Damaged
    from stay.scoring import QUALITY_RECORD, recorded_quality

    common: dict[str, Any] = dict(epoch=1, backend=OFFLINE, prompts_dir=None, judge=OfflineJudge())
    _, fresh = evaluate_build(BRIEF, courses_dir=tmp_path / "fresh", **common)
    _, first = evaluate_build(BRIEF, courses_dir=tmp_path / "same", quality={"distractors": 0.9}, **common)
    (path,) = (tmp_path / "same").glob(f"*/*/{QUALITY_RECORD.as_posix()}")
    path.write_bytes(record)
    with pytest.raises(Damaged, match=r"not a quality record|JSON") as raised:
        recorded_quality(path.parents[1])
    assert "\n" not in str(raised.value) and str(path) in str(raised.value)
    _, rerun = evaluate_build(BRIEF, courses_dir=tmp_path / "same", **common)
    assert rerun["course_sha256"] == fresh["course_sha256"] != first["course_sha256"] and rerun["quality"] == {}


@pytest.mark.parametrize("damage", ["not json", '{"artefacts": []}'])
def test_a_damaged_ledger_is_one_line_naming_its_file_and_the_way_out(tmp_path: Path, damage: str) -> None:
    """The scorers read a course's ledger themselves (they stand apart from the pipeline),
    with the ledger's own refusal: the file, and ``adopt`` to rebuild it."""
    from stay.errors import EnvironmentProblem
    from stay.scoring import ledger_built_with

    ledger = tmp_path / "a-course" / ".state" / "hashes.json"
    ledger.parent.mkdir(parents=True)
    ledger.write_text(damage, encoding="utf-8")
    with pytest.raises(EnvironmentProblem, match=r"adopt\('a-course'") as raised:
        ledger_built_with(ledger.parents[1])
    assert raised.value.path == str(ledger) and "\n" not in str(raised.value)
    assert str(raised.value).startswith(f"{ledger} is damaged (")
