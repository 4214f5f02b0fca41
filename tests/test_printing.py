"""What stay prints reaches a terminal escaped and encodable: a file name or a report
field cannot drive the terminal, a file name that is not UTF-8 is shown as its bytes, an
ASCII-only stdout with a Unicode path is not a crash, and a damaged course file is one
line with exit 2 or 5."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from stay._display import terminal_text
from tests.conftest import run_stay
from tests.damage import assert_one_line, stay_process
from tests.models.helpers import HTTP
from tests.scoring.reports import make_report, steady, with_

ESC = "\x1b]0;owned\x07\x1b[31m"
"""An escape sequence that retitles the terminal window, then turns the text red."""
SLUG = "how-http-requests-travel"


@pytest.mark.parametrize("char", ["\x1b", "\x9b", "\r", "\x08", "\x7f", "\u202e", "\udcff"])
def test_terminal_text_writes_every_control_out_and_keeps_tab_and_newline(char: str) -> None:
    shown = terminal_text(f"a{char}b\tc\nd")
    assert shown.startswith("a\\") and shown.endswith("b\tc\nd") and char not in shown


def test_a_byte_that_is_not_utf8_is_shown_as_that_byte() -> None:
    assert terminal_text(b"m\xff.md".decode("utf-8", "surrogateescape")) == "m\\xff.md"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course built offline, both gates answered: every command may run on it."""
    where = tmp_path_factory.mktemp("built")
    done = run_stay("build", str(HTTP), "--courses-dir", str(where), "--yes", "--backend", "offline")
    assert done.returncode == 0, done.stderr
    return where


def _course(built: Path, tmp_path: Path) -> Path:
    courses = tmp_path / "courses"
    shutil.copytree(built, courses)
    return courses


def test_a_file_name_with_an_escape_or_not_utf8_is_escaped_in_every_command(built: Path, tmp_path: Path) -> None:
    """The stray file is retired by build (as any file the curriculum lacks), listed by
    validate and view: each command exits as it would without it, and none prints it raw."""
    courses = _course(built, tmp_path)
    module = next((courses / SLUG / "modules").iterdir())
    stray = Path(os.fsdecode(os.fsencode(module) + b"/\xff" + ESC.encode() + b".md"))
    runs = {"build": ("build", SLUG, "--courses-dir", str(courses), "--yes", "--backend", "offline"),
            "status": ("status", SLUG, "--courses-dir", str(courses)),
            "view": ("view", SLUG, "--courses-dir", str(courses), "--out", str(tmp_path / "site"))}
    for name, args in runs.items():
        stray.write_text("stray\n")
        done = stay_process(*args, cwd=tmp_path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (name, done.stderr[-1500:])
        assert "\x1b" not in done.stdout + done.stderr, name
    assert "\\xff\\x1b]0;owned\\x07" in (courses / SLUG / ".state" / "run-log.md").read_text()
    stray.write_text("stray\n")
    checked = stay_process("validate", str(courses / SLUG), cwd=tmp_path)  # its pipe text: the next test
    assert checked.returncode == 0 and "Traceback" not in checked.stderr and "lay001" in checked.stdout


def test_validate_on_a_terminal_escapes_and_into_a_pipe_keeps_the_contracts_text(built: Path, tmp_path: Path) -> None:
    import pty
    import subprocess
    import sys

    courses = _course(built, tmp_path)
    module = next((courses / SLUG / "modules").iterdir())
    (module / f"x{ESC}.md").write_text("stray\n")
    piped = stay_process("validate", str(courses / SLUG), cwd=tmp_path)
    assert piped.returncode == 0 and ESC in piped.stdout  # R6/R7: the reference's bytes
    parent, child = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    process = subprocess.run([sys.executable, "-m", "stay.cli", "validate", str(courses / SLUG)], stdout=child,
                             stderr=subprocess.DEVNULL, env=env, timeout=60, check=False)
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(parent, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(parent)
    assert process.returncode == 0 and b"x\\x1b]0;owned" in shown and b"\x1b" not in shown


def test_an_eval_report_field_cannot_drive_the_terminal(tmp_path: Path) -> None:
    report = with_(make_report(steady(briefs=1, epochs=1, items=2)), label=f"run{ESC}", backend=f"b{ESC}")
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    done = run_stay("evals", "show", str(path))
    assert done.returncode == 0 and "\x1b" not in done.stdout and "run\\x1b]0;owned" in done.stdout


@pytest.mark.sweep
@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LANG": "C", "LC_ALL": "C"}])
def test_an_ascii_stdout_with_a_unicode_path_is_no_crash(tmp_path: Path, env: dict[str, str]) -> None:
    courses = tmp_path / "cours-é"
    made = stay_process("new", str(HTTP), "--courses-dir", str(courses), "--backend", "offline", cwd=tmp_path, env=env)
    assert made.returncode == 0 and "Traceback" not in made.stderr, made.stderr[-1500:]
    assert "cours-" in made.stdout
    viewed = stay_process("view", SLUG, "--courses-dir", str(courses), "--out", str(tmp_path / "sité"), cwd=tmp_path,
                          env=env)
    assert viewed.returncode == 0 and "pages in" in viewed.stdout, viewed.stderr[-1500:]
    missing = stay_process("build", SLUG, "--courses-dir", str(courses / "ñ"), cwd=tmp_path, env=env)
    assert "ñ" in assert_one_line(missing, (2,)) or "\\xf1" in missing.stderr


@pytest.mark.parametrize("name", ["m01-l01.md", "m01-l01.quiz.yaml", "m01-l01.exercises.yaml"])
def test_revise_force_on_a_file_that_is_not_utf8_is_one_line(built: Path, tmp_path: Path, name: str) -> None:
    courses = _course(built, tmp_path)
    target = next((courses / SLUG / "modules").glob(f"*/{name}"))
    target.write_bytes(target.read_bytes() + b"\n\xff\xfe\n")
    relative = target.relative_to(courses / SLUG).as_posix()
    done = run_stay("revise", SLUG, relative, "--note", "tighten", "--force", "--courses-dir", str(courses),
                    "--backend", "offline")
    line = assert_one_line(done)
    assert "not UTF-8" in line and name in line
