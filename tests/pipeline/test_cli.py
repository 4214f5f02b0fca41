"""The ``stay`` command line: every command, its exit code, and one-line refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_stay

BRIEF = str(ROOT / "examples" / "briefs" / "incident-postmortems.yaml")
SLUG = "incident-postmortems"


def refusal(stderr: str) -> str:
    """The one line that says why: the last line of stderr, after any progress."""
    lines = stderr.splitlines()
    assert lines and lines[-1].startswith(("error: ", "refused: ")), stderr
    assert sum(line.startswith(("error: ", "refused: ")) for line in lines) == 1
    return lines[-1]


def stay(*args: str) -> subprocess.CompletedProcess[str]:
    """``stay`` in this process (``tests.conftest.run_stay``); one case below starts a real
    process, so the command as installed is exercised too."""
    return run_stay(*args)


def process(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.run([sys.executable, "-m", "stay.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)


def test_the_whole_flow_from_the_command_line(tmp_path: Path) -> None:
    courses = str(tmp_path)
    new = stay("new", BRIEF, "--courses-dir", courses)
    assert new.returncode == 0, new.stderr
    assert "stopped at the design gate" in new.stdout
    assert "[audience]" in new.stderr and "backend: offline" in new.stderr

    again = stay("new", BRIEF, "--courses-dir", courses)
    assert again.returncode == 2 and again.stderr.count("\n") == 1
    assert "already exists" in refusal(again.stderr)

    build = stay("build", SLUG, "--courses-dir", courses)
    assert build.returncode == 4 and "design gate" in build.stdout

    assert stay("approve", SLUG, "design", "--courses-dir", courses).returncode == 0
    build = stay("build", SLUG, "--courses-dir", courses)
    assert build.returncode == 4 and "plan gate" in build.stdout

    curriculum = tmp_path / SLUG / "curriculum.yaml"
    curriculum.write_text(curriculum.read_text().replace("summary: Lessons on", "summary: Lessons about", 1))
    plan = stay("plan", SLUG, "--courses-dir", courses)
    assert plan.returncode == 5
    assert "curriculum.yaml changed since the design gate was approved" in refusal(plan.stderr)

    status = stay("status", SLUG, "--courses-dir", courses)
    assert status.returncode == 0
    assert "edited   curriculum.yaml" in status.stdout
    assert "stale    outcomes.yaml  <- curriculum.yaml" in status.stdout
    assert "gate     design: curriculum.yaml changed" in status.stdout

    done = stay("build", SLUG, "--yes", "--courses-dir", courses)
    assert done.returncode == 0, done.stderr
    assert "validation: 0 FAIL, 0 WARN" in done.stdout
    assert "[1/" in done.stderr  # progress per lesson

    strict = stay("validate", "--strict", courses)
    assert strict.returncode == 0 and strict.stdout.endswith("1 courses: 0 FAIL, 0 WARN\n")


def test_a_build_and_stay_validate_count_the_same_checks_and_defects(courses: Path) -> None:
    """One selection, every rule (the contract's and stay's), for a build's validate step and
    for `stay validate`: the same checks, FAILs and WARNs, a stay rule's defect among them."""
    import re

    from stay.validate import RULES, Group
    from tests.fixtures.rules.pos import pos002

    (root,) = courses.iterdir()
    pos002(root)  # m01's quizzes edited by hand, so repair leaves them: a stay rule fires
    built = stay("build", root.name, "--yes", "--courses-dir", str(courses))
    checked = stay("validate", str(root))
    assert (built.returncode, checked.returncode) == (0, 0), built.stderr + checked.stderr
    (fails, warns, checks) = re.findall(r"^validation: (\d+) FAIL, (\d+) WARN \((\d+) checks\)$", built.stdout,
                                        re.MULTILINE)[0]
    assert f" {checks} checks, " in checked.stdout and f": {fails} FAIL, {warns} WARN" in checked.stdout
    stays = [words for words in map(str.split, checked.stdout.splitlines())
             if words[0] in ("FAIL", "WARN") and words[1] in RULES and RULES[words[1]].group is Group.STAY]
    assert stays and int(fails) + int(warns) == len(stays)


def test_a_command_stopping_at_the_gate_it_ends_at_exits_0_and_one_stopped_short_of_its_end_exits_4(
        tmp_path: Path) -> None:
    """`new` ends at the design gate and `plan` at the plan gate, as declared: that stop is
    the command done (EXIT_OK); `build` stopped at either gate waits for an answer
    (EXIT_GATE). docs/commands.md's exit-code table names each command that ends at a gate."""
    from stay.errors import EXIT_GATE, EXIT_OK
    from stay.pipeline import DECLARATION

    ends_at = {command: gate.name for command, declared in DECLARATION.commands.items()
               for gate in DECLARATION.gates if declared.last in gate.nodes}
    courses = str(tmp_path)
    for command, target, gate in (("new", BRIEF, "design"), ("build", SLUG, "design"),
                                  ("plan", SLUG, "plan"), ("build", SLUG, "plan")):
        if command == "plan":
            assert stay("approve", SLUG, "design", "--courses-dir", courses).returncode == 0
        done = stay(command, target, "--courses-dir", courses)
        assert f"stopped at the {gate} gate" in done.stdout, done.stdout + done.stderr
        assert done.returncode == (EXIT_OK if ends_at.get(command) == gate else EXIT_GATE), command
    (done_row,) = [line for line in (ROOT / "docs" / "commands.md").read_text(encoding="utf-8").splitlines()
                   if line.startswith(f"| {EXIT_OK} |")]
    assert ends_at and all(f"`{command}` stops at the {gate} gate" in done_row for command, gate in ends_at.items())


def test_adopt_and_status_report_every_artefact(tmp_path: Path) -> None:
    import shutil

    from tests.conftest import SAMPLE
    from tests.expected import artefacts_of

    shutil.copytree(SAMPLE, tmp_path / SAMPLE.name)
    adopted = stay("adopt", SAMPLE.name, "--courses-dir", str(tmp_path))
    assert adopted.returncode == 0
    lines = [line for line in adopted.stdout.splitlines() if not line.startswith("gate")]
    assert sorted(line.split()[1] for line in lines) == artefacts_of(SAMPLE)
    assert all(line.startswith("current ") for line in lines)


@pytest.mark.parametrize("args, code, fragment", [
    (["status", "../etc"], 2, "is not a course slug"),
    (["status", "no-such-course"], 2, "there is no course 'no-such-course'"),
    (["build", "missing.yaml"], 2, "brief not found"),
    (["approve", "x", "final"], 2, "unknown gate 'final'"),
    (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
])
def test_refusals_are_one_line(tmp_path: Path, args: list[str], code: int, fragment: str) -> None:
    result = stay(*args, "--courses-dir", str(tmp_path)) if args[0] != "frobnicate" else stay(*args)
    assert result.returncode == code
    assert result.stderr.count("\n") == 1 and fragment in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("fmt", ["mermaid", "dot", "json"])
def test_graph_prints_the_pipeline(fmt: str) -> None:
    result = (process if fmt == "mermaid" else stay)("graph", "--format", fmt)  # one real process is enough
    assert result.returncode == 0
    if fmt == "json":
        from stay.pipeline import graph

        data = json.loads(result.stdout)
        assert [n["id"] for n in data["nodes"]] == list(graph()) and {"source": "design_ask", "target": "design_record"} in [
            {"source": e["source"], "target": e["target"]} for e in data["edges"]]
    elif fmt == "mermaid":
        assert result.stdout.startswith("flowchart TD\n") and "design_ask --> design_record" in result.stdout
    else:
        assert result.stdout.startswith("digraph stay {") and "design_ask -> design_record;" in result.stdout


def test_approve_refuses_an_undeclared_gate_naming_the_declared_ones() -> None:
    """cli.py does not list the gates (a second list beside stay.pipeline._graph.GATES):
    the pipeline checks the name, and says which gates there are, in one line."""
    from stay.pipeline import GATE_NAMES

    result = stay("approve", "some-course", "no-such-gate")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"unknown gate 'no-such-gate'; the gates are {' and '.join(GATE_NAMES)}" in result.stderr


def test_every_command_that_opens_a_course_with_its_prompts_takes_backend() -> None:
    """Issue 34: a command that reads a course with its prompts (``--courses-dir`` and
    ``--prompts-dir``, or stay view) judges or makes its files by each role's model, so each
    takes ``--backend`` (status had none)."""
    import argparse

    from stay.cli import _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    opening = {name for name, parser in sub.choices.items() if name == "view" or
               {"--courses-dir", "--prompts-dir"} <= set(parser._option_string_actions)}
    lacking = {name for name in opening if "--backend" not in sub.choices[name]._option_string_actions}
    assert {"status", "view", "estimate"} <= opening and lacking == set()
