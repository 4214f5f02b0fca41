"""Every test here fails if a fake Messages API met an answer its request's wire schema
does not admit (``fake_api.VIOLATIONS``), even when stay handled the error it was sent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.models.fake_api import VIOLATIONS


@pytest.fixture(autouse=True)
def _answers_fit_the_wire_schema() -> Iterator[None]:
    VIOLATIONS.clear()
    yield
    met, VIOLATIONS[:] = list(VIOLATIONS), []
    assert not met, "a fake answered outside the request's wire schema:\n" + "\n".join(met)


@pytest.fixture
def batch_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch build's environment: a fixed clock for the files, no wait between polls, and
    every role at its default model (the fakes know those)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkeypatch.setenv("STAY_BATCH_POLL_SECONDS", "0")
    for name in ("STAY_MODEL", "STAY_MODEL_WRITING", "STAY_MODEL_PLANNING"):
        monkeypatch.delenv(name, raising=False)
