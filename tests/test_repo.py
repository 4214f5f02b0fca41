"""The README's two set-up commands are what CI runs."""

from __future__ import annotations

from tests.conftest import ROOT


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_the_readme_starts_with_exactly_two_set_up_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.index("```bash") < text.index("\n## ")
    commands = _readme_commands()
    assert len(commands) == 2
    assert "stay build" in commands[0] and "--yes" in commands[0] and "--strict" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_both_readme_commands_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for command in _readme_commands():
        assert command in ci


def test_the_readme_python_snippet_builds_outside_the_committed_courses(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import hashlib
    import os
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = next(block.split("```", 1)[0] for block in text.split("```python\n")[1:] if "build_course" in block)
    assert "tempfile.mkdtemp()" in snippet and 'courses_dir="courses"' not in snippet

    def tree() -> dict[str, str]:
        root = ROOT / "courses"
        return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file()}

    before = tree()
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", snippet], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:3] == ["None", "done", "0"]  # complete, no FAIL
    assert tree() == before


def test_the_readme_review_loop_runs_as_written(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every `stay` line of the README's review loop, in order, in a fresh directory: the
    gate stops (exit 4) where the comments say, exactly the lines that allow it (the tour,
    tests/test_tour.py, runs the block itself, where ``|| test $? -eq 4`` lets a 0 by too),
    and the loop ends with a complete course."""
    import shlex

    from tests.conftest import run_stay

    monkeypatch.chdir(ROOT)  # the README's paths are relative to the checkout
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Reviewing", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0] for line in block.splitlines() if line.startswith("stay ")]
    codes, allowed = [], []
    for line in lines:
        command, _, fallback = line.partition(" || ")
        words = shlex.split(command.replace('"$d"', shlex.quote(str(tmp_path))), posix=True)
        assert "--courses-dir" in words, line  # a scratch directory, never the committed courses/
        done = run_stay(*words[1:])
        assert done.returncode in (0, 4), (words, done.stderr)
        codes.append(done.returncode)
        allowed.append(4 if fallback.strip() == "test $? -eq 4" else 0)
    assert codes == [0, 0, 0, 4, 0, 4, 0, 0] == allowed
    assert "validation: 0 FAIL" in done.stdout
    assert (tmp_path / "how-http-requests-travel" / ".state" / "design-gate.md").is_file()
