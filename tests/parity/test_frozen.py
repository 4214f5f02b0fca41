"""The frozen reference and the data it reads are pinned: parity is only worth
something against a copy nobody tuned."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.parity.harness import DATA, FROZEN, ROOT

PINNED = {
    FROZEN: "6eedb661cb8ca07f5fb38166a6f49f031217867713272302fe38fc74fb78a0de",
}
SHARED = ROOT.parent / "shared" / "reference"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_frozen_reference_is_byte_identical_to_its_pinned_hash() -> None:
    assert _sha256(FROZEN) == PINNED[FROZEN]


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/reference is not beside this checkout")
@pytest.mark.parametrize("name", ["validate.py", "data/bloom-verbs.yaml", "data/house-style.yaml"])
def test_vendored_copies_match_shared_reference(name: str) -> None:
    vendored = FROZEN if name == "validate.py" else DATA / Path(name).name
    assert vendored.read_bytes() == (SHARED / name).read_bytes()


def test_packaged_data_is_the_data_directory() -> None:
    from stay.validate import packaged_data_dir

    for name in ("bloom-verbs.yaml", "house-style.yaml"):
        assert (packaged_data_dir() / name).read_bytes() == (DATA / name).read_bytes()
