"""Parity on damaged courses: hypothesis-generated mutations and garbage.

In CI these run 300 + 200 = 500 examples (HYPOTHESIS_PROFILE=ci); each compares
both tiers, in a severity mode drawn per example, so both modes are covered.
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


@settings(max_examples=examples(300))
@given(st.lists(structural, min_size=1, max_size=4), st.booleans())
def test_structural_damage_gives_identical_reports(damages: list[Damage], strict: bool) -> None:
    _check(damages, strict)


@settings(max_examples=examples(200))
@given(st.lists(garbage, min_size=1, max_size=2), st.lists(structural, max_size=1),
       st.booleans())
def test_garbage_gives_identical_reports(
    garbage_damage: list[Damage], more: list[Damage], strict: bool
) -> None:
    _check(garbage_damage + more, strict)
