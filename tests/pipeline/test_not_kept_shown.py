"""An answer that could not keep a covered file's bytes (so the review page can show no diff
of it later) says so to the one who answered: ``approve``'s result names each file with
why, and ``stay approve`` prints one line per file. Every expected line is derived from the
answer ``.state/gates.json`` records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stay.pipeline import _state, approve
from tests.conftest import run_stay

SLUG = "how-http-requests-travel"
GATE = "design"


def _recorded(courses: Path) -> dict[str, str]:
    gates = json.loads((courses / SLUG / ".state" / "gates.json").read_text())["gates"]
    return dict(gates[GATE].get("not_kept", {}))


def _too_small(courses: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The answered store's limit just under the curriculum's size: at least that file is not kept."""
    monkeypatch.setattr(_state, "MAX_FILE_BYTES", (courses / SLUG / "curriculum.yaml").stat().st_size - 1)


def test_the_python_call_returns_each_file_not_kept_with_why(courses: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _too_small(courses, monkeypatch)
    answered = approve(SLUG, GATE, courses_dir=courses, decline=True, note="again")
    recorded = _recorded(courses)
    assert "curriculum.yaml" in recorded
    assert dict(answered.not_kept) == recorded
    lines = answered.lines()
    assert len(lines) == len(recorded)
    assert all(path in line and why in line for line, (path, why) in zip(lines, sorted(recorded.items()),
                                                                           strict=True))


def test_stay_approve_prints_one_line_per_file_not_kept(courses: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _too_small(courses, monkeypatch)
    done = run_stay("approve", SLUG, GATE, "--decline", "--note", "again", "--courses-dir", str(courses))
    assert done.returncode == 0, done.stderr
    recorded = _recorded(courses)
    said, *rest = done.stdout.splitlines()
    assert said == f"{SLUG}: the {GATE} gate is declined"
    assert recorded and len(rest) == len(recorded)
    for line, (path, why) in zip(rest, sorted(recorded.items()), strict=True):
        assert line.startswith(f"{SLUG}: {path}: ") and line.endswith(why) and "diff" in line


def test_an_answer_that_kept_every_file_prints_nothing_more(courses: Path) -> None:
    done = run_stay("approve", SLUG, GATE, "--courses-dir", str(courses))
    assert done.returncode == 0, done.stderr
    assert _recorded(courses) == {}
    assert done.stdout.splitlines() == [f"{SLUG}: the {GATE} gate is approved"]
    assert approve(SLUG, GATE, courses_dir=courses).not_kept == ()
