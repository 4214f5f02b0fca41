"""The prj rules (`stay/validate/rules/prj.py`) on their fixtures (`tests/fixtures/rules/prj.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.fixtures.rules import codes_of
from tests.validate.rules._fires import assert_fires_on_its_fixture


@pytest.mark.parametrize("code", codes_of("prj"))
def test_rule_fires_on_its_fixture(code: str, tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    assert_fires_on_its_fixture(code, tmp_path, snapshot)
