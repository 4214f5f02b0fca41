"""Message Batches for generation and judging: create, poll, collect, against canned responses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from stay.models import AnthropicBackend, RequestCache, prefetch
from stay.pipeline import build_course, run_command
from stay.scoring._suite import batch_score
from tests.conftest import ROOT
from tests.models.fake_api import answer_for, message

BRIEF = ROOT / "examples" / "briefs" / "incident-postmortems.yaml"


def _batch(batch_id: str, status: str, counts: dict[str, int]) -> dict[str, Any]:
    return {"id": batch_id, "type": "message_batch", "processing_status": status,
            "request_counts": {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0,
                               **counts},
            "created_at": "2026-11-30T00:00:00Z", "expires_at": "2026-12-01T00:00:00Z", "ended_at": None,
            "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"http://testserver/v1/messages/batches/{batch_id}/results" if status == "ended" else None}


class FakeBatches:
    """Canned Messages and Message Batches endpoints; batch answers come from the fixtures."""

    def __init__(self, judge: Any = None, fail: set[int] | None = None) -> None:
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self.polls = 0
        self.live: list[dict[str, Any]] = []
        self.judge = judge
        self.fail = fail or set()

    def answer(self, params: dict[str, Any]) -> dict[str, Any]:
        if "Stage:" in json.dumps(params["system"]):
            return answer_for(params)
        return self.judge(params)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/messages/batches":
            body = json.loads(request.content)
            batch_id = f"msgbatch_{len(self.batches) + 1}"
            self.batches[batch_id] = body["requests"]
            return httpx2.Response(200, json=_batch(batch_id, "in_progress", {"processing": len(body["requests"])}))
        if request.method == "GET" and path.endswith("/results"):
            batch_id = path.split("/")[-2]
            lines = []
            for index, entry in enumerate(self.batches[batch_id]):
                if index in self.fail:
                    result = {"type": "errored", "error": {"type": "error", "error": {"type": "api_error",
                                                                                       "message": "boom"}}}
                else:
                    result = {"type": "succeeded", "message": message(self.answer(entry["params"]),
                                                                      model=entry["params"]["model"])}
                lines.append(json.dumps({"custom_id": entry["custom_id"], "result": result}))
            return httpx2.Response(200, content="\n".join(lines).encode(),
                                   headers={"content-type": "application/binary"})
        if request.method == "GET" and path.startswith("/v1/messages/batches/"):
            self.polls += 1
            batch_id = path.split("/")[-1]
            done = self.polls >= 2
            count = len(self.batches[batch_id])
            return httpx2.Response(200, json=_batch(batch_id, "ended" if done else "in_progress",
                                                    {"succeeded": count} if done else {"processing": count}))
        if request.method == "POST" and path == "/v1/messages":
            body = json.loads(request.content)
            if "Stage:" not in json.dumps(body["system"]) and self.judge is None:
                return httpx2.Response(200, json=message({"flagged": False, "reason": "fine"}))
            self.live.append(body)
            return httpx2.Response(200, json=message(self.answer(body), model=body["model"]))
        return httpx2.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": path}})


def _client(api: FakeBatches) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url="http://testserver", max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(api)))


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkeypatch.setenv("STAY_BATCH_POLL_SECONDS", "0")


def test_the_wave_goes_through_one_batch_and_makes_no_live_call(tmp_path: Path) -> None:
    api = FakeBatches()
    backend = AnthropicBackend(_client(api))
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=backend, batch=True,
                          progress=lambda _l: None)
    assert result.complete and result.validation is not None and not result.validation.defects
    (requests,) = api.batches.values()
    assert len(requests) == 2 * 3 + 1  # two lessons' three files, and the capstone
    assert all(entry["params"]["output_config"]["format"]["type"] == "json_schema" for entry in requests)
    live_stages = {json.loads(json.dumps(b))["system"][0]["text"].split("# Stage: ")[1].split("\n")[0]
                   for b in api.live}
    assert "lesson content" not in live_stages and "quiz" not in live_stages  # all from the batch
    assert api.polls >= 2


def test_a_failed_batch_entry_is_asked_again_live(tmp_path: Path) -> None:
    api = FakeBatches(fail={0})
    result = build_course(BRIEF, courses_dir=tmp_path, yes=True, backend=AnthropicBackend(_client(api)),
                          batch=True, progress=lambda _l: None)
    assert result.complete
    assert sum("# Stage: capstone" in b["system"][0]["text"] or "# Stage: lesson content" in b["system"][0]["text"]
               or "# Stage: exercises" in b["system"][0]["text"] or "# Stage: quiz" in b["system"][0]["text"]
               for b in api.live) == 1


def test_prefetch_skips_what_the_cache_holds(tmp_path: Path) -> None:
    from stay.artefacts import Brief
    from stay.stages import STAGES, Prompts

    api = FakeBatches()
    cache = RequestCache(tmp_path)
    request = STAGES["audience"].request(Brief.from_yaml(BRIEF), Prompts.load())
    outcome = prefetch(_client(api), [(request, "claude-sonnet-5-5")], cache, poll_seconds=0, sleep=lambda _s: None)
    assert outcome is not None and outcome.succeeded == 1 and outcome.failed == {}
    assert cache.get(request, "claude-sonnet-5-5") is not None
    assert prefetch(_client(api), [(request, "claude-sonnet-5-5")], cache, sleep=lambda _s: None) is None
    assert len(api.batches) == 1


def test_judging_at_scale_goes_through_one_batch(tmp_path: Path) -> None:
    built = run_command("build", str(BRIEF), courses_dir=tmp_path, yes=True, progress=lambda _l: None,
                        backend="offline")

    def judge(params: dict[str, Any]) -> dict[str, Any]:
        system = json.dumps(params["messages"])  # a judge's instructions follow the (cached) lesson
        if "teaches a learning outcome" in system:
            return {"quote": "", "teaches": False, "reason": "canned"}
        if "wrong option" in system:
            return {"embodies": True, "reason": "canned"}
        if "exercise against" in system:
            return {"aligned": True, "reason": "canned"}
        return {"distinguishable": True, "reason": "canned"}

    api = FakeBatches(judge=judge)
    results = batch_score(built.course_dir, _client(api), RequestCache(tmp_path / "judge-cache"),
                          poll_seconds=0, sleep=lambda _s: None)
    assert len(api.batches) == 1 and api.live == []
    assert results["distractor_quality"].score == 1.0 and results["outcome_coverage"].score == 0.0
    assert results["exercise_alignment"].judge.startswith("model:")
