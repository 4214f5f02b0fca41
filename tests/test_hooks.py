"""Hooks for course repositories (issue 27, item 5): ``.pre-commit-hooks.yaml`` and the
validator's ``--courses-of`` mode it runs.

The pre-commit framework itself runs the hook on a throwaway git repository holding the
sample course: a clean commit passes, a commit that adds a FAIL is refused. Offline that
is the ``language: system`` hook (the stay under test is the one installed); the
``language: python`` hook has pre-commit pip-install stay into a virtualenv, which needs
the package index, so it runs only with STAY_NETWORK_TESTS=1."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stay.validate import HouseData, default_data_dir
from stay.validate._cli import courses_of
from stay.validate._cli import main as validate_main
from tests.conftest import ROOT

HOOKS = ROOT / ".pre-commit-hooks.yaml"
BANNED = HouseData.load(default_data_dir())["prose.banned_phrases"]


def _hook(hook_id: str) -> dict[str, object]:
    hooks = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    return next(hook for hook in hooks if hook["id"] == hook_id)


def test_courses_of_maps_files_to_the_courses_holding_them(tmp_path: Path) -> None:
    one, two = tmp_path / "courses" / "one", tmp_path / "courses" / "two"
    for course in (one, two):
        (course / "modules" / "m01").mkdir(parents=True)
        (course / "course.yaml").write_text("title: x\n", encoding="utf-8")
    nested = one / "modules" / "m01" / "inner"  # a course inside a course is its own
    nested.mkdir()
    (nested / "course.yaml").write_text("title: y\n", encoding="utf-8")
    files = [tmp_path / "README.md", two / "modules" / "m01" / "l.md", one / "course.yaml",
             one / "modules" / "m01" / "gone.md",  # deleted: still its course's
             nested / "l.md", two / "glossary.yaml", one]
    assert courses_of([os.fspath(f) for f in files]) == [os.fspath(two), os.fspath(one), os.fspath(nested)]
    assert courses_of([os.fspath(tmp_path / "README.md")]) == []


def test_courses_of_keeps_the_paths_relative(sample_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(sample_copy.parent)
    lesson = next(sample_copy.glob("modules/*/*.md")).relative_to(sample_copy.parent)
    assert courses_of([os.fspath(lesson), "elsewhere.md"]) == [sample_copy.name]
    monkeypatch.chdir(sample_copy)
    assert courses_of(["course.yaml"]) == ["."]  # the repository is the course


def _add_banned_phrase(course: Path) -> Path:
    lesson = next(course.glob("modules/*/*.md"))
    lesson.write_text(lesson.read_text(encoding="utf-8") + f"\nThis is {BANNED[0]} so.\n", encoding="utf-8")
    return lesson


def test_the_exit_codes_are_the_validators(sample_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """0 for a clean course, 1 for a FAIL in a touched course, 0 when the FAIL is in a course
    the files do not touch, 2 for a usage error: the contract's codes, --courses-of or not."""
    lesson = next(sample_copy.glob("modules/*/*.md"))
    assert validate_main(["--strict", "--courses-of", os.fspath(lesson)]) == 0
    _add_banned_phrase(sample_copy)
    assert validate_main(["--strict", "--courses-of", os.fspath(lesson)]) == 1
    assert "FAIL les009" in capsys.readouterr().out
    assert validate_main(["--strict", "--courses-of", os.fspath(sample_copy.parent / "README.md")]) == 0
    assert validate_main(["--strict", "--courses-of", "--no-such-option"]) == 2


def _git(repo: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=120)


def _environment(tmp_path: Path) -> dict[str, str]:
    """git and pre-commit kept inside tmp_path; this interpreter first on PATH (the system
    hook runs `python`), and stay taken from this checkout."""
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache"),
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("ANTHROPIC_API_KEY", None)
    return env


def _course_repo(tmp_path: Path, sample_copy: Path, env: dict[str, str]) -> Path:
    """A git repository holding the sample course under courses/, as a course repository would."""
    repo = tmp_path / "course-repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main", env=env).check_returncode()
    shutil.copytree(sample_copy, repo / "courses" / sample_copy.name)
    return repo


@pytest.mark.slow
def test_the_pre_commit_hook_fails_a_commit_that_adds_a_fail(tmp_path: Path, sample_copy: Path) -> None:
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    assert _hook("stay-validate-system")["entry"] == _hook("stay-validate")["entry"]  # one check, two installs
    env = _environment(tmp_path)
    # the hooks repository: this checkout's .pre-commit-hooks.yaml as it is now, committed
    hooks_repo = tmp_path / "hooks-repo"
    hooks_repo.mkdir()
    shutil.copy(HOOKS, hooks_repo / HOOKS.name)
    for args in (("init", "-q", "-b", "main"), ("add", HOOKS.name), ("commit", "-q", "-m", "hooks")):
        _git(hooks_repo, *args, env=env).check_returncode()
    rev = _git(hooks_repo, "rev-parse", "HEAD", env=env).stdout.strip()
    repo = _course_repo(tmp_path, sample_copy, env)
    config = {"repos": [{"repo": os.fspath(hooks_repo), "rev": rev, "hooks": [{"id": "stay-validate-system"}]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    installed = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env,
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    _git(repo, "add", "-A", env=env).check_returncode()
    clean = _git(repo, "commit", "-m", "the course", env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "stay validate --strict" in clean.stdout + clean.stderr  # the hook ran, and passed

    lesson = _add_banned_phrase(repo / "courses" / sample_copy.name)
    _git(repo, "add", "-A", env=env).check_returncode()
    refused = _git(repo, "commit", "-m", "a banned phrase", env=env)
    shown = lesson.relative_to(repo / "courses" / sample_copy.name).as_posix()
    assert refused.returncode != 0
    assert f"FAIL les009 {shown}" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert _git(repo, "rev-list", "--count", "HEAD", env=env).stdout.strip() == "1"  # nothing was committed


@pytest.mark.skipif(os.environ.get("STAY_NETWORK_TESTS") != "1",
                    reason="pre-commit pip-installs stay and its dependencies from the package index; "
                           "set STAY_NETWORK_TESTS=1 to run it")
def test_the_python_hook_installs_stay_and_fails_a_fail(tmp_path: Path, sample_copy: Path) -> None:
    pytest.importorskip("pre_commit")
    env = _environment(tmp_path)
    env.pop("PYTHONPATH")  # the stay the hook runs is the one pre-commit installed from this checkout
    repo = _course_repo(tmp_path, sample_copy, env)  # try-repo takes the hook from this checkout as it is now
    _add_banned_phrase(repo / "courses" / sample_copy.name)
    _git(repo, "add", "-A", env=env).check_returncode()
    tried = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", os.fspath(ROOT), "stay-validate"],
                           cwd=repo, env=env, capture_output=True, text=True, timeout=1200)
    assert tried.returncode == 1 and "FAIL les009" in tried.stdout, tried.stdout + tried.stderr


WORKFLOW = ROOT / "examples" / "ci" / "course-repository.yml"


def _stay_commands(script: str) -> list[list[str]]:
    import shlex

    return [shlex.split(line.strip())[1:] for line in script.splitlines() if line.strip().startswith("stay ")]


def test_the_example_workflow_runs_real_stay_commands() -> None:
    """Every stay command the example workflow runs parses with stay's own parsers (a
    renamed option fails here), it builds with --replay, validates strictly and uploads the
    page compare writes."""
    from stay.cli import _parser
    from stay.validate._cli import _parse

    steps = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["course"]["steps"]
    commands = [args for step in steps for args in _stay_commands(step.get("run", ""))]
    for args in commands:
        parsed = _parse(args[1:]) if args[0] == "validate" else _parser().parse_args(args)
        assert parsed is not None
    builds = [_parser().parse_args(args) for args in commands if args[0] == "build"]
    assert builds and all(build.replay for build in builds)
    assert any(_parse(args[1:]).strict for args in commands if args[0] == "validate")
    pages = [args[args.index("--html") + 1] for args in commands if args[:2] == ["evals", "compare"]]
    uploads = [step for step in steps if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
    assert pages and uploads and all(page in uploads[0]["with"]["path"].split() for page in pages)
    assert uploads[0]["if"].startswith("always()")  # the page of a regression is the one worth reading


def test_the_documented_pre_commit_config_names_a_shipped_hook() -> None:
    import re

    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", text, re.S).group(1))  # type: ignore[union-attr]
    named = {hook["id"] for repo in config["repos"] for hook in repo["hooks"]}
    shipped = {hook["id"] for hook in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))}
    assert named and named <= shipped
