"""tools/metrics.py: each figure as its docstring defines it, on a toy tree, and the
script on this checkout (whose layer figures tests/test_layers.py holds at 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tools.metrics import largest_class, lines, reach_ins, run_context

RUN = '''
from dataclasses import dataclass, field
from typing import ClassVar
from pydantic import BaseModel

@dataclass(frozen=True)
class RunConfig:
    slug: str
    root: str
    LIMIT: ClassVar[int] = 3

class Tally(BaseModel):
    calls: int = 0

@dataclass
class Run:
    config: RunConfig
    tally: Tally | None = None
    started: float = field(default=0.0)

    def say(self, line: str) -> None:
        print(line)

class NotARecord:
    a: int
    b: int
    c: int
    d: int
'''

NODES = '''
def handler(run):
    run.say(run.config.slug)      # a call is not a reach-in; run.config.slug is one
    run.tally.calls += 1          # one
    return run.hint, other.config  # run.hint is read, not called: one; other is not the run
'''


def _tree(root: Path) -> Path:
    (root / "stay" / "pipeline").mkdir(parents=True)
    (root / "stay" / "pipeline" / "_run.py").write_text(RUN)
    (root / "stay" / "pipeline" / "_runner.py").write_text(NODES)
    return root


def test_fields_count_records_only_and_leave_class_variables_out(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert largest_class(root) == (["_run.Run"], 3)
    assert run_context(root) == {"Run": 3, "RunConfig": 2, "Tally": 1}


def test_a_reach_in_is_a_read_through_the_run_not_a_call_on_it(tmp_path: Path) -> None:
    assert reach_ins(_tree(tmp_path)) == 3


def test_lines_are_the_physical_lines_of_the_python_files(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "stay" / "notes.txt").write_text("not counted\n")
    assert lines(root / "stay") == len(RUN.splitlines()) + len(NODES.splitlines())


def test_the_script_prints_every_figure_for_this_checkout() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "metrics.py")], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    figures = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert list(figures) == ["largest class (stay/pipeline)", "run context", "reach-ins from handlers",
                             "layer breaks", "package cycles", "module cycles", "private reach-ins", "lines", "modules"]
    assert figures["layer breaks"] == "0 (in 0 imports)"
    assert figures["package cycles"] == figures["private reach-ins"] == "0"
