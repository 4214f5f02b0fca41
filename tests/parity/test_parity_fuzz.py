"""Parity on damaged courses: hypothesis-generated mutations and garbage.

In CI these run 3 x 100 structural + 2 x 100 garbage + 2 x 100 whitespace = 700
examples (HYPOTHESIS_PROFILE=ci), split into tests of 100 so pytest-xdist can spread
them; each compares both tiers, in a
severity mode drawn per example, so both modes are covered. Each test has its own
name, and so its own derandomized seed: the seven draw different examples. The default
tier runs the first shard of each strategy; the other shards run in the slow tier.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLE
from tests.parity.harness import assert_parity, examples
from tests.parity.mutate import Damage, garbage, load_course, structural, whitespace, write_course

BASE = load_course(SAMPLE)


def _check(damages: list[Damage], strict: bool) -> None:
    files = dict(BASE)
    for damage in damages:
        damage.apply(files)
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / SAMPLE.name
        course.mkdir()
        write_course(files, course)
        try:
            assert_parity(course, strict)
        finally:
            shutil.rmtree(course, ignore_errors=True)


structural_damage = st.lists(structural, min_size=1, max_size=4)
whitespace_damage = st.lists(whitespace, min_size=1, max_size=3)
garbage_damage = st.tuples(st.lists(garbage, min_size=1, max_size=2), st.lists(structural, max_size=1))


@settings(max_examples=examples(100))
@given(structural_damage, st.booleans())
def test_structural_damage_gives_identical_reports_1(damages: list[Damage], strict: bool) -> None:
    _check(damages, strict)


@pytest.mark.slow  # a CI shard of the one above: the same strategy, more examples
@settings(max_examples=examples(100))
@given(structural_damage, st.booleans())
def test_structural_damage_gives_identical_reports_2(damages: list[Damage], strict: bool) -> None:
    _check(damages, strict)


@pytest.mark.slow  # a CI shard of the one above: the same strategy, more examples
@settings(max_examples=examples(100))
@given(structural_damage, st.booleans())
def test_structural_damage_gives_identical_reports_3(damages: list[Damage], strict: bool) -> None:
    _check(damages, strict)


@settings(max_examples=examples(100))
@given(garbage_damage, st.booleans())
def test_garbage_gives_identical_reports_1(damages: tuple[list[Damage], list[Damage]], strict: bool) -> None:
    _check(damages[0] + damages[1], strict)


@pytest.mark.slow  # a CI shard of the one above: the same strategy, more examples
@settings(max_examples=examples(100))
@given(garbage_damage, st.booleans())
def test_garbage_gives_identical_reports_2(damages: tuple[list[Damage], list[Damage]], strict: bool) -> None:
    _check(damages[0] + damages[1], strict)


@settings(max_examples=examples(100))
@given(whitespace_damage, st.booleans())
def test_whitespace_damage_gives_identical_reports_1(damages: list[Damage], strict: bool) -> None:
    _check(damages, strict)


@pytest.mark.slow  # a CI shard of the one above: the same strategy, more examples
@settings(max_examples=examples(100))
@given(whitespace_damage, st.booleans())
def test_whitespace_damage_gives_identical_reports_2(damages: list[Damage], strict: bool) -> None:
    _check(damages, strict)


def test_a_tab_after_a_colon_is_not_yaml_to_either_validator() -> None:
    """The case the issue reported: libyaml read it, the reference did not."""
    files = dict(BASE)
    files["audience.yaml"] = files["audience.yaml"].replace(b"time_budget_minutes: ", b"time_budget_minutes:\t")
    assert files["audience.yaml"] != BASE["audience.yaml"]
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / SAMPLE.name
        course.mkdir()
        write_course(files, course)
        report = assert_parity(course, strict=False)
    fired = {(d["code"], d["path"]) for d in report["courses"][0]["defects"]}
    assert ("sch001", "audience.yaml") in fired and ("man004", "course.yaml") in fired
