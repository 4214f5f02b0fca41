"""Running the frozen reference and the library on the same course, and comparing them.

The tiers of the seeds: tier 1 compares defect multisets (code, severity, owner,
path, subject, message); tier 2 compares evaluated and passed counts per code,
because a rule that never runs also never fails and tier 1 cannot see that.

Known divergences are listed one by one, by exact message, with the reason each is
accepted; nothing is ever filtered by code. There are none: the library agrees
with the reference on every input the suite has produced. One kind of input is outside
parity by design and never generated: a course file past the library's read limit
(``stay._bounds.MAX_FILE_BYTES``, 16 MB), which the library reports as sch002 without
reading it while the reference reads it whole (``mutate.MAP_DEPTH``; tests/test_bounds.py
holds the library's side).
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from stay.validate import HouseData, check_course
from tests.remembered_yaml import load_yaml

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
FROZEN = Path(__file__).resolve().parent / "validate.py"


@dataclass(frozen=True)
class Divergence:
    message: str
    reason: str


KNOWN_DIVERGENCES: tuple[Divergence, ...] = ()


class RememberedYaml:
    """PyYAML for the reference, with ``safe_load`` remembered by the exact text it is
    given (``tests.remembered_yaml``, the tests' one memo): the same text, the same
    document (a fresh copy each time, so nothing the reference does to one can reach
    another), and a text that raises is parsed again so it raises as it always does.
    The reference parses every course file with the
    pure-Python parser, and the per-rule fixtures share all but one file of the
    sample, so this spares reparsing them 200 times. It changes no answer; a test
    holds the reference's reports equal with and without it (and without the
    remembered text functions below)."""

    def __init__(self) -> None:
        import yaml

        self._yaml = yaml

    def __getattr__(self, name: str) -> Any:
        return getattr(self._yaml, name)

    def safe_load(self, text: Any) -> Any:
        return load_yaml(text)  # the tests' one memo of parsed YAML


def _load_reference(remember: bool) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"stay_frozen_reference_{remember}", FROZEN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if remember:
        module.yaml = RememberedYaml()  # the module's own global, replaced after loading: no line is edited
        for name in _PURE_TEXT_FUNCTIONS:
            setattr(module, name, _remembered(getattr(module, name)))
    return module


_PURE_TEXT_FUNCTIONS = ("norm", "mentions")
"""The reference's functions of strings alone (casefold, whitespace, a regex built from
the term): a lesson's mentions of its terms are the same in every per-rule fixture that
shares it, and worked out afresh they are most of the reference's time."""


def _remembered(function: Any) -> Any:
    """``function`` remembered by its arguments when they are all strings; called as it
    is for anything else, so it fails on a bad argument exactly as it always does."""
    seen: dict[tuple[str, ...], Any] = {}

    def remembered(*args: Any) -> Any:
        if not all(type(arg) is str for arg in args):
            return function(*args)
        if args not in seen:
            seen[args] = function(*args)
        return seen[args]

    return remembered


@cache
def reference() -> ModuleType:
    """The frozen reference validator, imported from its vendored file."""
    return _load_reference(remember=True)


@cache
def plain_reference() -> ModuleType:
    """The frozen reference exactly as it ships, PyYAML called directly."""
    return _load_reference(remember=False)


@cache
def _reference_data() -> Any:
    return reference().Data(str(DATA))


@cache
def _library_data() -> HouseData:
    return HouseData.load(DATA)


def reference_report(course_dir: Path, strict: bool, *, remembered: bool = True) -> dict[str, Any]:
    ref = reference() if remembered else plain_reference()
    check = ref.CourseCheck(str(course_dir), ref.Data(str(DATA)) if not remembered else _reference_data(),
                            strict).run()
    document: dict[str, Any] = json.loads(ref.render_json([check], strict))
    return document


def library_report(course_dir: Path, strict: bool) -> dict[str, Any]:
    """The library's report on the contract group: the only rules the reference has, so a
    ``stay`` rule never enters a comparison."""
    from stay.validate import Group, ValidationReport

    report = check_course(course_dir, _library_data(), strict=strict, select=Group.CONTRACT)
    document: dict[str, Any] = json.loads(ValidationReport((report,), strict).to_json())
    return document


def _defects(document: dict[str, Any]) -> Counter[tuple[str, ...]]:
    known = {divergence.message for divergence in KNOWN_DIVERGENCES}
    return Counter(
        (d["code"], d["severity"], d["owner"], d["path"], d["subject"], d["message"])
        for course in document["courses"] for d in course["defects"]
        if d["message"] not in known
    )


def assert_parity(course_dir: Path, strict: bool) -> dict[str, Any]:
    """Both tiers; returns the library's report. Fails with the difference spelled out."""
    expected = reference_report(course_dir, strict)
    actual = library_report(course_dir, strict)
    missing = _defects(expected) - _defects(actual)
    extra = _defects(actual) - _defects(expected)
    assert not missing and not extra, (
        f"tier 1 (defects, strict={strict}): the library misses {sorted(missing)} "
        f"and adds {sorted(extra)}")
    for key in ("evaluated", "passed"):
        want = expected["courses"][0][key]
        got = actual["courses"][0][key]
        differs = {code: (want.get(code), got.get(code))
                   for code in set(want) | set(got) if want.get(code) != got.get(code)}
        assert not differs, f"tier 2 ({key}, strict={strict}): reference vs library {differs}"
    if not KNOWN_DIVERGENCES:
        assert actual == expected  # the whole JSON interface, summary included
    return actual


def examples(contract: int, dev: int | None = None) -> int:
    """``contract`` examples in CI (HYPOTHESIS_PROFILE=ci); otherwise ``dev``, or a quick
    handful (each runs the pure-Python reference validator twice; CI runs them all)."""
    import os

    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
    if profile == "ci":
        return contract
    return dev if dev is not None else max(4, contract // 25)
