"""Test support lives in stay.testing, out of the product: the offline backend a user gets
keeps no knob and no gauge, and the rigged one tests use answers exactly as it does."""

from __future__ import annotations

import ast
import dataclasses
import hashlib
from pathlib import Path

import pytest

import stay.errors
import stay.models
from stay.cli import _report
from stay.errors import EXIT_REFUSED, StayError, exit_code
from stay.models import OfflineBackend
from stay.pipeline import build_course
from stay.testing import InjectedFault, RiggedBackend
from tests.conftest import ROOT

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".runs" not in p.relative_to(root).parts}


def test_the_offline_backend_a_user_gets_holds_no_test_knob_or_gauge() -> None:
    product = {f.name for f in dataclasses.fields(OfflineBackend)}
    rigged = {f.name for f in dataclasses.fields(RiggedBackend)}
    assert product == {"name"}  # stateless: a run's calls are counted in its BuildResult
    added = rigged - product
    assert {"latency", "errors", "defects", "flag", "quality", "seed", "calls", "most_in_flight"} <= added
    assert issubclass(RiggedBackend, OfflineBackend)  # so the pipeline treats a rigged run as offline


def test_a_rigged_backend_without_knobs_writes_the_offline_backends_course_byte_for_byte(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    rigged = RiggedBackend()
    plain = build_course(HTTP, courses_dir=tmp_path / "plain", yes=True, backend=OfflineBackend(),
                         progress=lambda _line: None)
    counted = build_course(HTTP, courses_dir=tmp_path / "rigged", yes=True, backend=rigged,
                           progress=lambda _line: None)
    assert plain.complete and counted.complete
    assert _tree(plain.course_dir) == _tree(counted.course_dir)
    # what the rigged backend counts is what the run counted (the screen is no call offline)
    assert rigged.total_calls == counted.calls == plain.calls > 0


def test_an_injected_fault_is_test_support_and_still_refused_with_exit_5(tmp_path: Path) -> None:
    assert "InjectedFault" not in stay.errors.__all__ and not hasattr(stay.errors, "InjectedFault")
    assert "InjectedFault" not in stay.models.__all__ and "DEFECTS" not in stay.models.__all__
    assert issubclass(InjectedFault, StayError) and exit_code(InjectedFault("x")) == EXIT_REFUSED
    with pytest.raises(InjectedFault) as raised:
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=RiggedBackend(errors={"audience": 1}),
                     progress=lambda _line: None)
    assert _report(raised.value) == EXIT_REFUSED  # the command line's one line, "refused: ..."


def test_nothing_in_the_product_imports_its_test_support_but_the_evals_suite() -> None:
    importers = set()
    for path in sorted((ROOT / "stay").rglob("*.py")):
        if "testing" in path.relative_to(ROOT / "stay").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom)
                     else [])
            if any(name == "stay.testing" or name.startswith("stay.testing.") for name in names):
                importers.add(path.relative_to(ROOT).as_posix())
    assert importers == {"stay/suite.py"}  # its offline runs turn the quality knobs (--stay-quality)
