"""The validator's command line: the contract's options, output and exit codes."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.validate import _cli
from tests.conftest import ROOT, SAMPLE, run_stay
from tests.parity.harness import FROZEN, examples


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, check=False)


def _main(argv: list[str], main: Callable[[list[str]], int] = _cli.main) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A directory of three courses: the sample, a broken copy, and an empty one."""
    shutil.copytree(SAMPLE, tmp_path / "b-sample")
    broken = tmp_path / "a-broken"
    shutil.copytree(SAMPLE, broken)
    (broken / "outcomes.yaml").write_text("outcomes: [unclosed\n")
    (broken / "glossary.yaml").unlink()
    (tmp_path / "c-empty").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "_ignored").mkdir()
    return tmp_path


def with_verdicts(text: str) -> str:
    """The reference's text report with each course's count line led by its verdict: FAIL
    under a course with a FAIL line, where the reference writes PASS whatever it found."""
    lines, failed = [], False
    for line in text.split("\n"):
        failed = (failed and not line.startswith("== ")) or line.startswith("FAIL ")
        lines.append("FAIL " + line.removeprefix("PASS ") if failed and line.startswith("PASS ") else line)
    return "\n".join(lines)


@pytest.mark.sweep
@pytest.mark.parametrize("options", [[], ["--strict"], ["--format", "json"],
                                     ["--format", "json", "--strict"]])
def test_the_contract_selection_is_byte_identical_to_the_reference_but_for_the_verdict(
    corpus: Path, options: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # both read --data-dir data from the checkout
    reference = _run(str(FROZEN), *options, "--data-dir", "data", str(corpus))
    code, out, err = _main([*options, "--select", "contract", "--data-dir", "data", str(corpus)])
    assert code == reference.returncode == 1
    assert out == with_verdicts(reference.stdout.decode())  # the json has no verdict line: the same
    assert err == "" and reference.stderr == b""


@pytest.mark.parametrize("strict", [[], ["--strict"]])
def test_a_course_with_a_fail_is_never_summed_up_as_pass(corpus: Path, strict: list[str],
                                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each course's count line leads with its verdict, the validator's own: FAIL when the
    course has a FAIL (with --strict, any defect), PASS when it has none (a WARN alone
    passes unless --strict)."""
    from stay.validate import RULES, Severity, validate_course, validate_courses
    from tests.fixtures.rules import MUTATIONS, make_fixture

    clean = tmp_path_factory.mktemp("clean") / SAMPLE.name  # its directory is its slug
    shutil.copytree(SAMPLE, clean)
    warned = next(course for code in MUTATIONS if RULES[code].severity is Severity.WARN
                  if validate_course(course := make_fixture(code, tmp_path_factory.mktemp(code))).fails == 0)
    paths = [str(corpus), str(clean), str(warned)]
    done = run_stay("validate", *strict, *paths)
    report = validate_courses(paths, strict=bool(strict))
    assert done.returncode == report.exit_code == 1, done.stderr
    summaries = [line for line in done.stdout.splitlines() if " rules evaluated, " in line]
    assert [line.split()[0] for line in summaries] == ["PASS" if c.ok else "FAIL" for c in report.courses]
    assert {c.ok for c in report.courses} == {True, False}  # the corpus holds both kinds
    assert any(c.warns and not c.fails for c in report.courses) != bool(strict)  # and one with WARNs only


def test_sample_course_passes_strict_with_default_paths() -> None:
    library = _run("-m", "stay.validate", "--strict")
    assert library.returncode == 0, library.stdout.decode()
    assert library.stdout.decode().endswith("1 courses: 0 FAIL, 0 WARN\n")


def test_stay_validate_is_the_same_command(corpus: Path) -> None:
    module = _run("-m", "stay.validate", "--format", "json", str(corpus))
    script = _run("-m", "stay.cli", "validate", "--format", "json", str(corpus))
    assert (script.returncode, script.stdout) == (module.returncode, module.stdout)


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["--strict", "--help", "no/such/dir"]])
def test_help_prints_the_options_and_exits_0(argv: list[str]) -> None:
    """Issue 9: `stay validate --help` works. The frozen reference calls -h a bad
    option (exit 2); the issue outranks the spec, so this departure is deliberate."""
    from stay.cli import main

    results = [_main(argv), _main(["validate", *argv], main)]
    if argv == ["--help"]:  # and each program as a person runs it, in its own process (once: one fact)
        results += [(done.returncode, done.stdout.decode(), done.stderr.decode()) for done in
                    (_run("-m", "stay.validate", *argv), _run("-m", "stay.cli", "validate", *argv))]
    for code, out, err in results:
        assert code == 0, err
        assert err == ""
        assert out.startswith("usage: ")
        for option in ("--strict", "--format", "--data-dir", "--jobs", "exit codes"):
            assert option in out


def test_help_as_an_options_value_is_still_a_usage_error() -> None:
    code, out, err = _main(["--data-dir", "--help"])
    assert code == 2 and out == ""
    assert err.startswith("usage error: ")


@pytest.mark.sweep
@pytest.mark.parametrize("argv, fragment", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--he"], "unrecognized arguments: --he"),
    (["--format", "xml"], "invalid choice: 'xml'"),
    (["--stri"], "unrecognized arguments: --stri"),
    (["no/such/dir"], "PATH 'no/such/dir' does not exist"),
    (["pyproject.toml"], "PATH 'pyproject.toml' is not a directory"),
    (["--data-dir", "nowhere", "courses"], "data file 'nowhere/bloom-verbs.yaml' is missing"),
    (["--jobs", "0"], "argument --jobs: must be a whole number of processes, at least 1; got '0'"),
    (["--jobs", "two", "courses"], "argument --jobs: must be a whole number of processes, at least 1; got 'two'"),
    (["--jobs", "-1"], "argument --jobs: must be a whole number of processes, at least 1; got '-1'"),
    (["--jobs"], "argument --jobs: expected one argument"),
])
def test_usage_errors_exit_2_with_one_line(argv: list[str], fragment: str) -> None:
    result = _run("-m", "stay.validate", *argv)
    stderr = result.stderr.decode()
    assert result.returncode == 2
    assert result.stdout == b""
    assert stderr.count("\n") == 1 and stderr.startswith("usage error: ")
    assert fragment in stderr
    assert "Traceback" not in stderr


def test_malformed_data_file_is_a_usage_error(tmp_path: Path) -> None:
    shutil.copy(ROOT / "data" / "bloom-verbs.yaml", tmp_path)
    (tmp_path / "house-style.yaml").write_text("course: {min_modules: 1}\n")
    code, out, err = _main(["--data-dir", str(tmp_path), str(SAMPLE)])
    assert (code, out) == (2, "")
    assert "house-style.yaml' is unreadable: course.max_modules is missing" in err


def test_a_crash_is_exit_3_with_one_line_and_no_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_args: object, **_kwargs: object) -> None:
        raise KeyError("boom\nsecond line")

    monkeypatch.setattr("stay.validate._check.Course.load", explode)
    code, out, err = _main([str(SAMPLE)])
    assert code == 3
    assert out == ""
    assert err == ("internal error: KeyError: 'boom\\nsecond line' "
                   "(a bug in the validator, not a defect in the course)\n")


ARTEFACTS = sorted(p.relative_to(SAMPLE).as_posix() for p in SAMPLE.rglob("*") if p.is_file())


@settings(max_examples=examples(200))
@given(st.sampled_from(ARTEFACTS), st.binary(max_size=2_000) | st.text(max_size=400).map(str.encode),
       st.booleans())
def test_fuzzing_any_artefact_never_crashes(path: str, content: bytes, strict: bool) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / SAMPLE.name
        shutil.copytree(SAMPLE, course)
        (course / path).write_bytes(content)
        code, out, err = _main([*(["--strict"] if strict else []), "--format", "json", str(course)])
    assert code in (0, 1), err
    assert err == ""
    assert '"version": 1' in out


@pytest.fixture
def many(corpus: Path) -> Path:
    """The three-course corpus and five more damaged copies, so each process gets several."""
    for index, (name, text) in enumerate([("outcomes.yaml", "outcomes: []\n"), ("audience.yaml", "x: [\n"),
                                          ("glossary.yaml", "terms: 3\n"), ("project.yaml", ""),
                                          ("course.yaml", "slug: other\n")]):
        target = corpus / f"d-{index}"
        shutil.copytree(SAMPLE, target)
        (target / name).write_text(text)
    return corpus


@pytest.mark.sweep
@pytest.mark.parametrize("options", [[], ["--strict"], ["--format", "json"], ["--format", "json", "--strict"]])
def test_jobs_gives_byte_identical_output(many: Path, options: list[str]) -> None:
    code, one, err = _main([*options, "--jobs", "1", str(many)])
    assert code == 1 and err == ""
    assert one.count("== ") == 8 or '"courses": 8' in one
    assert _main([*options, "--jobs", "3", str(many)]) == (code, one, "")
    # and the program as a person runs it, in its own process, writes the same bytes
    program = _run("-m", "stay.validate", *options, "--jobs", "2", str(many))
    assert (program.returncode, program.stdout.decode(), program.stderr) == (code, one, b"")


def test_more_processes_than_courses_and_the_default_give_the_same_output(many: Path) -> None:
    code, one, _err = _main(["--jobs", "1", str(many)])
    assert _main(["--jobs", "16", str(many)]) == (code, one, "")  # 8 courses: at most 8 processes
    assert _main([str(many)]) == (code, one, "")  # the default: every available core


def test_the_library_takes_jobs_too(many: Path) -> None:
    from stay.errors import UsageError
    from stay.validate import validate_courses

    one = validate_courses(many, jobs=1)
    parallel = validate_courses(many, jobs=None)  # every available core
    assert parallel == one and parallel.to_json() == one.to_json()
    for bad in (0, -2, True, 1.5):
        with pytest.raises(UsageError, match="jobs must be a whole number of processes, at least 1"):
            validate_courses(many, jobs=bad)  # type: ignore[arg-type]


@pytest.mark.skipif(__import__("multiprocessing").get_start_method() != "fork",
                    reason="a patch reaches worker processes only when they are forked")
def test_a_crash_in_a_worker_is_exit_3_with_one_line(many: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_args: object, **_kwargs: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr("stay.validate._check.Course.load", explode)
    code, out, err = _main(["--jobs", "2", str(many)])
    assert (code, out) == (3, "")
    assert err == "internal error: KeyError: 'boom' (a bug in the validator, not a defect in the course)\n"


def test_start_up_imports_no_pipeline_model_client_or_process_pool() -> None:
    """``python -m stay.validate`` reads course files and two data files; it must not pay
    for the pipeline's dependencies, nor for a process pool it does not use."""
    result = _run("-X", "importtime", "-m", "stay.validate", "--jobs", "4", str(SAMPLE))
    assert result.returncode == 0, result.stderr.decode()
    imported = {line.split("|")[-1].strip() for line in result.stderr.decode().splitlines() if "|" in line}
    assert "stay.validate._check" in imported
    for heavy in ("networkx", "anthropic", "pydantic", "httpx", "httpx2", "stay.pipeline", "stay.models",
                  "stay.scoring", "stay.stages", "concurrent.futures.process"):
        assert heavy not in imported, heavy
