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
