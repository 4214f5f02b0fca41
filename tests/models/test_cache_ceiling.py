"""How much of a build's input the prompt cache can read, and whether stay's concurrency
gives any of it away.

The fake (``tests/models/fake_api.py``) keys a cache entry as the API does: model, tools,
thinking, ``output_config.format`` and effort, then the text up to a breakpoint. Under that
rule no stage can read another stage's prefix (each sends its own schema), so the most a
build can read is what a *serial* client reads: one that sends the same requests in the
same order and waits for each answer before the next. That is the ceiling a concurrent
build is held to here: the prefix gate must make the wave's concurrency cost no read at
all. The figures are printed (``pytest -s``) and quoted in docs/models.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anthropic
import pytest
import yaml

from stay.models import AnthropicBackend
from stay.pipeline import build_course
from tests.models.fake_api import CacheAccounting, FakeMessagesAPI, stage_of
from tests.models.helpers import HTTP, SQL


def _four_lessons(tmp_path: Path) -> Path:
    """The HTTP brief at 3 hours 20 minutes: its lessons' share, 120 minutes, the offline
    curriculum fits in 4 lessons (checked below)."""
    brief = yaml.safe_load(HTTP.read_text())
    brief["time_available"] = "3 hours 20 minutes"
    brief["constraints"] = [c for c in brief["constraints"] if "modules" not in c]
    path = tmp_path / "four-lessons.yaml"
    path.write_text(yaml.safe_dump(brief, sort_keys=False))
    return path


def _serial(bodies: list[dict[str, Any]]) -> CacheAccounting:
    """The same requests billed one after another, each answered before the next is sent."""
    accounting = CacheAccounting()
    for body in bodies:
        usage, written = accounting.bill(body, "")
        accounting.answered(written)
        accounting.record(stage_of(body), str(body["model"]), usage)
    return accounting


@pytest.mark.sweep
@pytest.mark.parametrize("brief", ["four-lessons", "sql"])
def test_a_concurrent_build_reads_all_a_serial_client_could(
        brief: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith(("STAY_MODEL", "STAY_WAVE", "STAY_REPAIR"))]:
        monkeypatch.delenv(name)
    source = _four_lessons(tmp_path) if brief == "four-lessons" else SQL
    with FakeMessagesAPI(latency=0.06) as api:
        client = anthropic.Anthropic(api_key="test-key", base_url=api.url)
        result = build_course(source, courses_dir=tmp_path / "courses", yes=True,
                              backend=AnthropicBackend(client), progress=lambda _line: None)
    assert result.complete
    if brief == "four-lessons":
        assert len(list(result.course_dir.glob("modules/*/*.plan.yaml"))) == 4
    built, serial = api.accounting, _serial(api.requests)
    print(f"{brief}: reads {built.read_share:.1%} of input concurrently, {serial.read_share:.1%} serially "
          f"({built.cache_read_input_tokens} and {serial.cache_read_input_tokens} tokens)")
    assert serial.cache_read_input_tokens > 0  # the rule leaves something to read, so the check can fail
    assert built.cache_read_input_tokens == serial.cache_read_input_tokens
    assert built.cache_creation_input_tokens == serial.cache_creation_input_tokens
