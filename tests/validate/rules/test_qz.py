"""The qz rules (`stay/validate/rules/qz.py`) on their fixtures (`tests/fixtures/rules/qz.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.fixtures.rules import codes_of
from tests.validate.rules._fires import assert_fires_on_its_fixture


@pytest.mark.parametrize("code", codes_of("qz"))
def test_rule_fires_on_its_fixture(code: str, tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    assert_fires_on_its_fixture(code, tmp_path, snapshot)
