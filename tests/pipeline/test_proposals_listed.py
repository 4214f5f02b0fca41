"""``stay status`` lists each proposal ``stay revise --show`` left waiting: the file, the
first line of its note and the command that keeps it, in the caller's form (the command
line's ``stay revise ... --keep``, a Python caller's ``stay.revise(..., keep=True)``), and a
stale proposal (the file changed since) as stale, with the command that shows a new one.
The commands are taken from what status says and run. ``.state/proposals/`` is untrusted:
a file there not named for a file of the course is never read, a damaged one or a link is
one line, never a traceback."""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path
from urllib.parse import quote

import pytest

import stay
from stay.cli import main
from stay.pipeline import revise, status
from stay.pipeline._state import PROPOSALS, proposal_file
from stay.testing import RiggedBackend
from tests.conftest import run_stay
from tests.pipeline.test_build import quiet

SLUG = "how-http-requests-travel"
NOTE = "Ask about TTLs.\nAnd a second line the listing leaves out."


def _quiz(courses: Path) -> str:
    root = courses / SLUG
    return next(root.glob("modules/*/m01-l02.quiz.yaml")).relative_to(root).as_posix()


def _shown(courses: Path) -> tuple[str, str]:
    """A proposal shown for the quiz: (the quiz's path, the proposal's text)."""
    quiz = _quiz(courses)
    revise(SLUG, [quiz], note=NOTE, show=True, courses_dir=courses, backend=RiggedBackend(), progress=quiet)
    text = json.loads(proposal_file(courses / SLUG, quiz).read_text())["text"]
    assert text != (courses / SLUG / quiz).read_text()
    return quiz, str(text)


def _listed(stdout: str) -> list[str]:
    return [line.removeprefix("proposal ") for line in stdout.splitlines() if line.startswith("proposal ")]


def _command(line: str) -> str:
    (command,) = re.findall(r"`([^`]+)`", line)
    return command


def test_status_lists_a_waiting_proposal_and_the_command_it_names_keeps_it(courses: Path) -> None:
    quiz, text = _shown(courses)
    first = NOTE.splitlines()[0]
    done = run_stay("status", SLUG, "--courses-dir", str(courses))
    assert done.returncode == 0, done.stderr
    (line,) = _listed(done.stdout)
    assert line.startswith(f"{quiz}: ") and repr(first) in line and NOTE.splitlines()[1] not in line
    words = shlex.split(_command(line))
    assert words == ["stay", "revise", SLUG, quiz, "--keep", "--courses-dir", str(courses)]
    kept = run_stay(*words[1:])
    assert kept.returncode == 0, kept.stderr
    assert (courses / SLUG / quiz).read_text() == text
    assert _listed(run_stay("status", SLUG, "--courses-dir", str(courses)).stdout) == []


def test_a_python_caller_is_given_the_python_call_and_it_keeps_the_proposal(courses: Path) -> None:
    quiz, text = _shown(courses)
    found = status(SLUG, courses_dir=courses)
    (line,) = found.proposals
    assert html.escape(line) in found._repr_html_()  # a notebook shows it too
    call = _command(line)
    assert call.startswith("stay.revise(") and "keep=True" in call
    eval(call, {"stay": stay})  # the call as it is given, with nothing but the package in scope
    assert (courses / SLUG / quiz).read_text() == text
    assert status(SLUG, courses_dir=courses).proposals == ()


def test_a_proposal_for_a_file_changed_since_is_marked_stale_with_the_command_to_show_anew(courses: Path) -> None:
    quiz, _text = _shown(courses)
    file = courses / SLUG / quiz
    file.write_text(file.read_text() + "\n")
    (line,) = _listed(run_stay("status", SLUG, "--courses-dir", str(courses)).stdout)
    assert line.startswith(f"{quiz}: ") and "stale" in line
    words = shlex.split(_command(line))
    assert words[:4] == ["stay", "revise", SLUG, quiz] and "--show" in words and "--keep" not in words
    refused = run_stay("revise", SLUG, quiz, "--keep", "--courses-dir", str(courses))
    assert refused.returncode != 0 and "stale" in refused.stderr  # what the stale mark warns of


def test_a_file_not_named_for_a_course_file_is_never_read_and_a_damaged_one_is_one_line(courses: Path) -> None:
    quiz, _text = _shown(courses)
    root = courses / SLUG
    planted = root / PROPOSALS / f"{quote('../elsewhere.yaml', safe='')}.json"
    planted.write_text(json.dumps({"path": "../elsewhere.yaml", "base": None, "note": "PLANTED", "text": ""}))
    assert _listed(run_stay("status", SLUG, "--courses-dir", str(courses)).stdout)[0].startswith(f"{quiz}: ")
    assert "PLANTED" not in run_stay("status", SLUG, "--courses-dir", str(courses)).stdout
    proposal_file(root, quiz).write_text("{ not json")
    done = run_stay("status", SLUG, "--courses-dir", str(courses))
    assert done.returncode == 0 and "Traceback" not in done.stderr
    (line,) = _listed(done.stdout)
    assert line.startswith(f"{quiz}: ") and "damaged" in line


def test_a_proposals_folder_that_is_a_link_is_not_read_through(courses: Path, tmp_path: Path) -> None:
    _shown(courses)
    root = courses / SLUG
    moved = root / "elsewhere"
    (root / PROPOSALS).rename(moved)
    (root / PROPOSALS).symlink_to(moved, target_is_directory=True)
    done = run_stay("status", SLUG, "--courses-dir", str(courses))
    assert done.returncode == 0, done.stderr
    (line,) = _listed(done.stdout)
    assert "symbolic link" in line and NOTE.splitlines()[0] not in line


@pytest.mark.parametrize("command", ["status", "adopt"])
def test_no_proposal_no_line(courses: Path, command: str) -> None:
    done = run_stay(command, SLUG, "--courses-dir", str(courses))
    assert done.returncode == 0, done.stderr
    assert _listed(done.stdout) == [] and done.stdout.strip()


def test_a_damaged_proposal_names_the_call_that_shows_a_new_one_whole_in_the_callers_words(
        courses: Path, tmp_path: Path) -> None:
    """The status line of a damaged proposal ends in the whole command that shows a new one
    (never cut), with the courses directory the caller gave: it runs as printed."""
    import ast

    elsewhere = tmp_path / "a-courses-directory-with-a-long-name-so-that-a-cut-line-would-show"
    courses.rename(elsewhere)
    quiz, _text = _shown(elsewhere)
    proposal_file(elsewhere / SLUG, quiz).write_text("{ not json")
    (line,) = stay.status(SLUG, courses_dir=elsewhere).proposals
    assert line.startswith(f"{quiz}: ") and "damaged" in line and "…" not in line
    (hint,) = re.findall(r"`([^`]+)`", line)
    call = ast.parse(hint).body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    assert ast.unparse(call.value.func) == "stay.revise"
    given = {kw.arg: ast.literal_eval(kw.value) for kw in call.value.keywords}
    assert [ast.literal_eval(arg) for arg in call.value.args] == [SLUG, [quiz]]
    assert given == {"note": "...", "show": True, "courses_dir": str(elsewhere)}
    said = run_stay("status", SLUG, "--courses-dir", str(elsewhere))
    assert said.returncode == 0, said.stderr
    (shell,) = _listed(said.stdout)
    words = shlex.split(re.findall(r"`([^`]+)`", shell)[0])
    assert words[:4] == ["stay", "revise", SLUG, quiz] and "--show" in words
    assert words[words.index("--courses-dir") + 1] == str(elsewhere)
    proposal_file(elsewhere / SLUG, quiz).unlink()  # as the line says: delete it, then show anew
    note_at = words.index("--note") + 1
    assert main([*words[1:note_at], NOTE, *words[note_at + 1:]]) == 0
    (again,) = stay.status(SLUG, courses_dir=elsewhere).proposals
    assert "keep it with" in again
