"""Parity on damaged courses: hypothesis-generated mutations and garbage.

In CI these run 3 x 100 + 2 x 100 = 500 examples (HYPOTHESIS_PROFILE=ci), split
into tests of 100 so pytest-xdist can spread them; each compares both tiers, in a
severity mode drawn per example, so both modes are covered. Each test has its own
name, and so its own derandomized seed: the five draw different examples.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLE
from tests.parity.harness import assert_parity, examples
from tests.parity.mutate import Damage, garbage, load_course, structural, write_course

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
garbage_damage = st.tuples(st.lists(garbage, min_size=1, max_size=2), st.lists(structural, max_size=1))


@settings(max_examples=examples(100))
@given(structural_damage, st.booleans())
def test_structural_damage_gives_identical_reports_1(damages: list[Damage], strict: bool) -> None:
    _check(damages, strict)


@settings(max_examples=examples(100))
@given(structural_damage, st.booleans())
def test_structural_damage_gives_identical_reports_2(damages: list[Damage], strict: bool) -> None:
    _check(damages, strict)


@settings(max_examples=examples(100))
@given(structural_damage, st.booleans())
def test_structural_damage_gives_identical_reports_3(damages: list[Damage], strict: bool) -> None:
    _check(damages, strict)


@settings(max_examples=examples(100))
@given(garbage_damage, st.booleans())
def test_garbage_gives_identical_reports_1(damages: tuple[list[Damage], list[Damage]], strict: bool) -> None:
    _check(damages[0] + damages[1], strict)


@settings(max_examples=examples(100))
@given(garbage_damage, st.booleans())
def test_garbage_gives_identical_reports_2(damages: tuple[list[Damage], list[Damage]], strict: bool) -> None:
    _check(damages[0] + damages[1], strict)
