"""Rule groups and selection: ``contract`` (the reference's rules) and ``stay`` (ours),
chosen with ``--select``/``--ignore``; a ``stay`` rule runs in a build and in plain
``stay validate`` alike, ``--select contract`` leaves it out, and parity is left alone."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from stay.errors import GraphError, UsageError
from stay.validate import (
    DEFAULT_SELECT,
    RULES,
    Group,
    Rule,
    Severity,
    register,
    selected,
    unregister,
    validate_course,
)
from stay.validate._cli import main
from stay.validate._course import Course, Finding, finding, rule
from tests.conftest import ROOT, SAMPLE
from tests.parity.harness import FROZEN, assert_parity

TOY = "toy001"


@rule(TOY, Severity.WARN, "audience", "a toy rule beyond the contract fired on {name}", group=Group.STAY)
def toy001(course: Course) -> Iterator[Finding]:
    """A toy stay rule: it fires once on every course, so wherever it runs shows."""
    yield finding("audience.yaml", "-", True, name=course.name)


@pytest.fixture
def toy() -> Iterator[Rule]:
    """toy001 registered through the registry API for one test, and removed after it."""
    register(toy001)
    try:
        yield toy001
    finally:
        unregister(TOY)


def _main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _of(group: Group) -> list[str]:
    return [code for code, r in RULES.items() if r.group is group]


def test_no_selection_is_every_rule_of_every_group() -> None:
    assert list(selected()) == list(selected(DEFAULT_SELECT)) == list(RULES)
    assert list(selected(Group.CONTRACT)) == _of(Group.CONTRACT)


@pytest.mark.parametrize(("select", "ignore"), [
    ("aud", None), ("aud001,les", None), (["aud", "les011"], "aud002"), ("contract", "sch,man"), ("les001", "les"),
])
def test_a_selection_is_what_its_selectors_name_less_what_is_ignored(select: str | list[str],
                                                                    ignore: str | None) -> None:
    def named(selectors: str | list[str] | None) -> set[str]:
        names = [n for item in ([selectors] if isinstance(selectors, str) else selectors or [])
                 for n in item.split(",")]
        return {code for code, r in RULES.items() for n in names if n in (code, code[:-3], r.group)}

    expected = [code for code in RULES if code in named(select) - named(ignore)]
    assert list(selected(select, ignore)) == expected
    report = validate_course(SAMPLE, select=select, ignore=ignore)
    assert sorted(report.evaluated) == sorted(expected)  # each selected rule runs on the complete sample


@pytest.mark.parametrize("bad", ["xyz", "aud999", "", "Contract"])
def test_a_selector_that_names_no_rule_is_one_line_naming_it_and_the_forms(bad: str) -> None:
    for option in ("--select", "--ignore"):
        code, out, err = _main([option, bad, "--jobs", "1", str(SAMPLE)])
        assert (code, out) == (2, "")
        assert err.count("\n") == 1 and f"{option} '{bad}' names no rule" in err
        assert "rule code (aud001), a family prefix (aud) or a group (contract, stay)" in err
    with pytest.raises(UsageError, match=f"--select '{bad}' names no rule"):
        validate_course(SAMPLE, select=bad)


def test_a_toy_stay_rule_runs_with_no_selection_and_by_select(toy: Rule) -> None:
    assert TOY in selected() and TOY not in selected(Group.CONTRACT)
    assert TOY in [d.code for d in validate_course(SAMPLE).defects]
    assert validate_course(SAMPLE, select=Group.CONTRACT).evaluated.keys() == set(_of(Group.CONTRACT))
    for selection in ([], *(["--select", selector] for selector in (TOY, "toy", "stay"))):
        code, out, err = _main([*selection, "--jobs", "1", str(SAMPLE)])
        assert (code, err) == (0, "") and f"WARN {TOY} audience.yaml -: a toy rule beyond" in out
    code, out, _ = _main(["--select", "stay", "--ignore", TOY, "--strict", "--jobs", "1", str(SAMPLE)])
    assert code == 0 and TOY not in out


def test_a_toy_stay_rule_leaves_the_contract_selection_byte_identical_to_the_reference(toy: Rule) -> None:
    reference = subprocess.run([sys.executable, str(FROZEN), "--data-dir", "data", "--strict", str(SAMPLE)],
                               cwd=ROOT, capture_output=True, check=False)
    code, out, err = _main(["--data-dir", str(ROOT / "data"), "--strict", "--jobs", "1", "--select", "contract",
                            str(SAMPLE)])
    assert (code, out.encode(), err) == (reference.returncode, reference.stdout, "")
    assert TOY not in out


def test_a_toy_stay_rule_breaks_no_parity_function(toy: Rule, tmp_path: Path) -> None:
    from tests.fixtures.rules import make_fixture

    for strict in (False, True):
        assert_parity(SAMPLE, strict)
        assert_parity(make_fixture("aud002", tmp_path / str(strict)), strict)


def test_a_build_validates_with_stay_rules_and_repair_reports_them(toy: Rule, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline's validate step (here through ``stay repair``, which re-validates a
    finished course) sees the toy rule; audience is gated, so it is reported, never repaired."""
    from stay.pipeline import build_course, run_command

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    unregister(TOY)  # built without it: the toy's WARN would otherwise stand at the design gate
    built = build_course(ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml", courses_dir=tmp_path,
                         yes=True, progress=lambda _line: None)
    assert built.validation is not None and TOY not in [d.code for d in built.validation.defects]
    register(toy001)
    again = run_command("repair", built.slug, courses_dir=tmp_path, progress=lambda _line: None)
    assert again.validation is not None
    assert [d.code for d in again.validation.defects] == [TOY]


def test_the_contract_group_is_closed_and_a_rule_is_named_by_its_code() -> None:
    @rule("aud901", Severity.WARN, "audience", "never registered")
    def aud901(course: Course) -> Iterator[Finding]:
        """A contract rule declared outside the contract: the registry must refuse it."""
        yield from ()

    with pytest.raises(GraphError, match="cannot join the contract group"):
        register(aud901)

    @rule("toy002", Severity.WARN, "audience", "misnamed", group=Group.STAY)
    def misnamed(course: Course) -> Iterator[Finding]:
        """A stay rule whose function is not named by its code."""
        yield from ()

    with pytest.raises(GraphError, match="name its function toy002"):
        register(misnamed)
    with pytest.raises(GraphError, match="not added by register"):
        unregister("aud001")
    assert "aud901" not in RULES and "toy002" not in RULES


SPAWNED = """
import multiprocessing, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.validate.test_groups import toy001
from stay.validate import register, validate_courses

if __name__ == "__main__":
    multiprocessing.set_start_method("spawn")  # a worker imports stay afresh, as forkserver does
    register(toy001)
    report = validate_courses(sys.argv[2:], jobs=2, select="stay")
    print(sorted(code for course in report.courses for code in course.evaluated))
"""


def test_a_rule_registered_at_run_time_runs_with_jobs_under_spawn(tmp_path: Path) -> None:
    """``--jobs`` workers started fresh do not know a rule this process registered: the
    courses are checked here instead, so the report is the one ``jobs=1`` gives. Each course
    is the sample with data files and a review (which it has none of), so every stay rule has a subject."""
    import shutil

    from tests.fixtures.rules.ast import with_data_files
    from tests.fixtures.rules.rev import FIXTURES as rev_fixtures

    courses = [tmp_path / name for name in ("one", "two")]
    for course in courses:
        shutil.copytree(SAMPLE, course)
        with_data_files(course)
        for fixture in rev_fixtures:  # a review file with a finding of every kind
            fixture(course)
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED)
    done = subprocess.run([sys.executable, str(script), str(ROOT), *map(str, courses)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == repr(sorted(2 * [*_of(Group.STAY), TOY]))  # the declared stay rules, and the toy
