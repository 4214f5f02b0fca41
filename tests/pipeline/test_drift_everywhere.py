"""Every entry point that reads bloom-verbs.yaml or house-style.yaml, or builds a prompt
from them, refuses a drift between the prompts' copy and the data directory's the same
way (a line per differing file, naming both and the ``--data-from`` fix) and honours the
override: what it prices, checks or scores with is the copy that wins, the one a build
with the same settings uses (docs/pipeline.md, "How references attach").

The entry points are derived: every ``stay`` command whose parser takes ``--data-from``,
and the evals suite, whose own option is ``stay.suite.DATA_FROM``."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import stay.suite
from stay.cli import _parser
from stay.errors import EXIT_USAGE
from stay.pipeline import approve, estimate
from stay.pipeline._commands import SHARED
from stay.scoring import OfflineJudge
from stay.settings import Settings
from stay.suite import DATA_FROM, run_build
from stay.validate._data import HOUSE_FILE
from tests.conftest import ROOT, run_stay
from tests.pipeline.conftest import HTTP
from tests.scoring.reports import SUITE_BRIEF, suite_run

SLUG = "how-http-requests-travel"
FLAG = "--data-from"


@pytest.fixture(autouse=True)
def _packaged_prompts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAY_PROMPTS_DIR", raising=False)
    monkeypatch.delenv("STAY_DATA_DIR", raising=False)


def _commands_taking_the_flag() -> list[str]:
    """Every ``stay`` command that takes ``--data-from``: the ones that read the shared data."""
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(name for name, parser in sub.choices.items() if FLAG in parser._option_string_actions)


# How each command is called on the finished course (``courses``); a command that takes
# the flag and is not here fails test_every_command_that_takes_the_flag_is_driven.
ARGS: dict[str, list[str]] = {
    "new": [str(HTTP), "--slug", "another"],  # a fresh course: `new` refuses an existing one first
    "build": [SLUG, "--yes"], "plan": [SLUG], "write": [SLUG], "repair": [SLUG],
    "revise": [SLUG, "audience.yaml", "--note", "shorter"],
    "approve": [SLUG, "design", "--decline", "--note", "later"],
    "status": [SLUG], "adopt": [SLUG], "estimate": [SLUG],
}
# The viewer takes the flag but never refuses: a drift is a note on its status and review
# pages (the rest of the site renders), as test_the_viewer_* below hold.
VIEWERS = {"view"}
# A build's other doors: a replay answers from the request cache, a batch sends the wave
# as one Message Batch (refused offline, but only after the drift).
REPLAY = {"build --replay": ["build", SLUG, "--yes", "--replay"]}
BATCH = {"build --batch": ["build", SLUG, "--yes", "--batch"]}


def _calls() -> dict[str, list[str]]:
    """Every entry point on the command line: each command that takes the flag, and a build's doors."""
    return {command: [command, *ARGS.get(command, [])] for command in _commands_taking_the_flag()
            if command not in VIEWERS} | REPLAY


def _drifted(tmp_path: Path, name: str, text: str = "# edited in the prompts copy only\n") -> Path:
    """A copy of the packaged prompts whose ``reference/<name>`` has ``text`` appended."""
    prompts = tmp_path / "prompts"
    shutil.copytree(ROOT / "prompts", prompts)
    target = prompts / "reference" / name
    target.write_text(target.read_text(encoding="utf-8") + text, encoding="utf-8")
    return prompts


def _refusal(prompts: Path, name: str, flag: str) -> str:
    data = Settings.from_env().resolved_data_dir() / name
    return (f"{prompts}/reference/{name} differs from {data}, which the validator checks against: make them the "
            f"same, or say which wins with {flag} data (send the stage the data's) or {flag} prompts (check "
            "against the prompts')")


def _ledger(courses: Path) -> bytes:
    return (courses / SLUG / ".state" / "hashes.json").read_bytes()


def test_every_command_that_takes_the_flag_is_driven() -> None:
    assert set(ARGS) | VIEWERS == set(_commands_taking_the_flag())


@pytest.mark.parametrize("name", SHARED)
@pytest.mark.parametrize("call", sorted(_calls() | BATCH))
def test_every_command_refuses_a_drift_in_one_line_naming_both_files(
        call: str, name: str, courses: Path, tmp_path: Path) -> None:
    prompts = _drifted(tmp_path, name)
    before = _ledger(courses)
    said = run_stay(*(_calls() | BATCH)[call], "--courses-dir", str(courses), "--prompts-dir", str(prompts))
    assert (said.returncode, said.stderr) == (EXIT_USAGE, f"error: {_refusal(prompts, name, FLAG)}\n")
    assert _ledger(courses) == before and not (courses / "another").exists()  # refused before anything is written


@pytest.mark.parametrize("wins", ["data", "prompts"])
@pytest.mark.parametrize("call", sorted(_calls()))
def test_every_command_goes_on_when_told_which_copy_wins(
        call: str, wins: str, courses: Path, tmp_path: Path) -> None:
    prompts = _drifted(tmp_path, SHARED[0])
    said = run_stay(*_calls()[call], "--courses-dir", str(courses), "--prompts-dir", str(prompts),
                    FLAG, wins)
    assert "differs from" not in said.stderr and said.returncode != EXIT_USAGE, said.stderr


def test_the_evals_suite_refuses_a_drift_in_one_line_before_any_build(tmp_path: Path) -> None:
    """Said at the run's start (collection), naming the suite's own option, for a rescore too."""
    prompts = _drifted(tmp_path, HOUSE_FILE)
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "PYTHONPATH")}
    for rescore in ([], ["--stay-rescore"]):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "evals/", "--collect-only", "-q", "-p", "no:randomly", "-p", "no:xdist",
             "--stay-backend", "offline", "--stay-prompts", str(prompts), "--stay-output", str(tmp_path / "r.json"),
             "--stay-courses", str(tmp_path / "c"), *rescore],
            cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
        assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
        assert f"ERROR: {_refusal(prompts, HOUSE_FILE, DATA_FROM)}\n" in done.stderr
        assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("wins", ["data", "prompts"])
def test_the_evals_suite_scores_against_the_copy_that_wins(
        wins: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The validator scorer is held to the house style the build was checked against."""
    prompts = _drifted(tmp_path, HOUSE_FILE)
    held_to: list[Path | None] = []
    scorers = stay.suite.default_scorers

    def spy(judge: Any, *, data_dir: Path | None = None) -> Any:
        held_to.append(data_dir)
        return scorers(judge, data_dir=data_dir)

    monkeypatch.setattr("stay.suite.default_scorers", spy)
    cfg = suite_run("drift", 0, tmp_path / "courses", tmp_path / "drift.json", prompts_dir=prompts, data_from=wins,
                    epochs=1)
    run_build(cfg, SUITE_BRIEF, 1, OfflineJudge())
    chosen = prompts / "reference" if wins == "prompts" else Settings.from_env().resolved_data_dir()
    assert held_to == [chosen]


def test_estimate_prices_with_the_house_style_that_wins(tmp_path: Path) -> None:
    """A lesson is priced at the words per minute of the copy that wins: with the prompts'
    winning, the estimate is the one of a data directory holding the prompts' copy."""
    prompts = _drifted(tmp_path, HOUSE_FILE)
    house = prompts / "reference" / HOUSE_FILE
    house.write_text(house.read_text(encoding="utf-8").replace("max_words_per_minute: 130",
                                                               "max_words_per_minute: 400"), encoding="utf-8")
    data_dir = tmp_path / "data"  # the prompts' copy of both files, as a data directory: no drift
    data_dir.mkdir()
    for name in SHARED:
        shutil.copy(prompts / "reference" / name, data_dir / name)

    def priced(**given: Any) -> list[str]:
        return estimate(HTTP, courses_dir=tmp_path / "c", settings=Settings.from_env(prompts_dir=prompts,
                                                                                        **given)).lines()

    assert priced(data_from="prompts") == priced(data_dir=data_dir)
    assert priced(data_from="prompts") != priced(data_from="data")


@pytest.mark.parametrize("wins", ["data", "prompts"])
def test_approve_reports_the_fails_of_the_house_style_that_wins(wins: str, courses: Path, tmp_path: Path) -> None:
    """The FAILs approve says a person signs over are the validator's against the copy a
    build would check: here the prompts' allows fewer outcomes a lesson than the course has."""
    prompts = _drifted(tmp_path, HOUSE_FILE)
    house = prompts / "reference" / HOUSE_FILE
    house.write_text(house.read_text(encoding="utf-8").replace("max_outcomes: 4", "max_outcomes: 1"),
                     encoding="utf-8")
    fails = approve(SLUG, "design", courses_dir=courses, decline=True, note="later",
                    settings=Settings.from_env(prompts_dir=prompts, data_from=wins))
    rules = {defect.code for defect in fails}
    assert ("out007" in rules) is (wins == "prompts"), rules


def _viewed(courses: Path, tmp_path: Path, prompts: Path, *flags: str) -> tuple[str, str]:
    """``stay view SLUG`` with ``prompts`` as the prompts directory: its status and review pages."""
    out = tmp_path / "site"
    said = run_stay("view", SLUG, "--courses-dir", str(courses), "--out", str(out), *flags,
                    env={"STAY_PROMPTS_DIR": str(prompts)})
    assert said.returncode == 0, said.stderr  # a read-only view renders whatever the drift
    return ((out / "status.html").read_text(encoding="utf-8"), (out / "review.html").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", SHARED)
def test_the_viewer_says_a_drift_on_its_pages_with_the_fix_it_takes(
        name: str, courses: Path, tmp_path: Path) -> None:
    import html

    prompts = _drifted(tmp_path, name)
    status, review = _viewed(courses, tmp_path, prompts)
    refusal = _refusal(prompts, name, FLAG)
    assert refusal in html.unescape(status) and refusal in html.unescape(review)
    assert _parser().parse_args(["view", SLUG, FLAG, "data"]).data_from == "data"  # the fix it names is taken


@pytest.mark.parametrize("wins", ["data", "prompts"])
def test_the_viewer_derives_statuses_when_told_which_copy_wins(
        wins: str, courses: Path, tmp_path: Path) -> None:
    prompts = _drifted(tmp_path, SHARED[0])
    status, review = _viewed(courses, tmp_path, prompts, FLAG, wins)
    assert "differs from" not in status and "statuses cannot be derived" not in status
    assert "differs from" not in review and "cannot be read" not in review
    assert '<table class="statuses">' in status and "<td><code>audience.yaml</code></td>" in status  # derived


def test_the_evals_session_and_report_hash_the_prompts_as_sent(tmp_path: Path) -> None:
    """With the data's copy winning, the builds send the data's shared file: the session
    (what a cached verdict belongs to) and the report's prompt hashes are those of the
    prompts as sent, so an arm whose copy differs is never taken for the other."""
    from stay.stages import Prompts
    from stay.suite import suite_session, write_run_report

    prompts = _drifted(tmp_path, HOUSE_FILE)
    packaged = suite_run("same", 0, tmp_path / "c", tmp_path / "same.json", epochs=1)
    sends_data = suite_run("same", 0, tmp_path / "c", tmp_path / "same.json", prompts_dir=prompts,
                           data_from="data", epochs=1)
    sends_prompts = suite_run("same", 0, tmp_path / "c", tmp_path / "same.json", prompts_dir=prompts,
                              data_from="prompts", epochs=1)
    # the data wins: what is sent is the packaged prompts' text, so the same session as theirs
    assert suite_session([sends_data]) == suite_session([packaged])
    assert suite_session([sends_prompts]) != suite_session([packaged])
    shared = f"reference/{HOUSE_FILE}"
    sent = write_run_report(sends_data, {})["prompts"]["sha256"]
    assert sent[shared] == Prompts.load(ROOT / "prompts").hashes()[shared]
    assert sent[shared] != Prompts.load(prompts).hashes()[shared]


def _fails_on(status_page: str) -> int:
    found = re.search(r'<tr><th>default</th><td class="num">(\d+)</td>', status_page)
    assert found is not None, "no validation table"
    return int(found.group(1))


def test_the_viewer_told_the_prompts_win_validates_against_the_prompts_copy(courses: Path, tmp_path: Path) -> None:
    """A banned phrase only the prompts' house style has: FAILs on the page exactly when the prompts' copy wins."""
    body = next((courses / SLUG / "modules").glob("*/*.md")).read_text(encoding="utf-8")
    word = next(w for w in re.findall(r"[a-z]{6,}", body) if w not in {"simply", "obviously", "trivially"})
    prompts = _drifted(tmp_path, HOUSE_FILE, "")
    house = prompts / "reference" / HOUSE_FILE
    house.write_text(house.read_text(encoding="utf-8").replace("banned_phrases: [", f"banned_phrases: [{word}, "),
                     encoding="utf-8")
    status, _review = _viewed(courses, tmp_path / "prompts-win", prompts, FLAG, "prompts")
    assert _fails_on(status) > 0 and word in status
    status, _review = _viewed(courses, tmp_path / "data-wins", prompts, FLAG, "data")
    assert _fails_on(status) == 0


def test_the_review_pages_commands_carry_the_data_from_it_was_derived_with(tmp_path: Path) -> None:
    """On a drift, a command copied from a page derived with --data-from runs as it is."""
    import html

    from stay.pipeline import build_course

    courses = tmp_path / "courses"
    build_course(HTTP, courses_dir=courses, progress=lambda _line: None)  # stops at the design gate
    prompts = _drifted(tmp_path, SHARED[0])
    _status, review = _viewed(courses, tmp_path, prompts, FLAG, "data")
    blocks = re.findall(r'<pre class="command"><code>(.*?)</code></pre>', review, re.DOTALL)
    commands = [line for block in blocks for line in html.unescape(block).splitlines() if line.strip()]
    assert commands and all(f"{FLAG} data" in command for command in commands)
    (approve,) = [c for c in commands if c.startswith("stay approve") and "--decline" not in c]
    done = run_stay(*shlex.split(approve)[1:], env={"STAY_PROMPTS_DIR": str(prompts)})
    assert done.returncode == 0, done.stderr
