"""`stay evals show` and `stay evals compare` on a damaged report: every kind of damage in
the table ends in exit 2 and one line naming the file and what is wrong with it, never
exit 3, a hang, a MemoryError or a traceback."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from stay._bounds import MAX_STORED_BYTES, MAX_STORED_DEPTH
from tests.conftest import run_stay
from tests.damage import assert_one_line, stay_process
from tests.scoring.reports import make_report, steady, with_

GOOD = make_report(steady(briefs=2, epochs=2, items=4))
TEXT = json.dumps(GOOD)


def _text(text: str | bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(text.encode() if isinstance(text, str) else text)


def _sparse(path: Path) -> None:
    with path.open("wb") as handle:  # larger than the limit without using the disk
        handle.truncate(MAX_STORED_BYTES * 40)


def _fifo(path: Path) -> None:
    os.mkfifo(path)  # nobody writes to it: a read blocks for ever


DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    # kind: (the damage, what the one line says about it)
    "truncated": (_text(TEXT[: len(TEXT) // 2]), "not valid JSON"),
    "not UTF-8": (_text(b"\xff\xfe" + TEXT.encode()), "not UTF-8"),
    "briefs a list": (_text(json.dumps(with_(GOOD, briefs=[1, 2]))), "field 'briefs'"),
    "scorers a list": (_text(json.dumps(with_(GOOD, scorers=["a"], totals=5))), "field 'scorers'"),
    "an item a number": (_text(json.dumps(with_(GOOD, briefs={"b": {"builds": [{"scorers": {"a": {"items": [1]}}}]}}))),
                         "field 'briefs.b.builds.0.scorers.a.items.0'"),
    "label a mapping": (_text(json.dumps(with_(GOOD, label={"x": 1}))), "field 'label'"),
    "nested": (_text("[" * MAX_STORED_DEPTH * 1000 + "]" * MAX_STORED_DEPTH * 1000), "nested deeper"),
    "huge": (_sparse, "larger than"),
    "fifo": (_fifo, "a FIFO"),
}


def _commands(path: Path, good: Path) -> dict[str, list[str]]:
    return {"show": ["evals", "show", str(path)], "compare": ["evals", "compare", str(good), str(path)]}


@pytest.mark.sweep
@pytest.mark.parametrize("command", ["show", "compare"])
@pytest.mark.parametrize("kind", sorted(DAMAGES))
def test_a_damaged_report_is_one_line_and_exit_2(tmp_path: Path, kind: str, command: str) -> None:
    damage, said = DAMAGES[kind]
    good, path = tmp_path / "good.json", tmp_path / "damaged.json"
    good.write_text(TEXT)
    damage(path)
    args = _commands(path, good)[command]
    # A FIFO in a process of its own: at worst its read blocks that process, not the suite.
    done = stay_process(*args, cwd=tmp_path) if kind == "fifo" else run_stay(*args)
    line = assert_one_line(done, (2,))
    assert line.startswith(f"error: {path}: not an eval report") and said in line, line

