from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "courses" / "how-http-requests-travel"

# CI runs the parity fuzzing at its contract size (at least 500 examples in all);
# a developer's default run is lighter. HYPOTHESIS_PROFILE=ci selects it explicitly.
settings.register_profile(
    "ci", deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev", deadline=None, max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A private copy of the sample course, named like the original."""
    target = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, target)
    return target
