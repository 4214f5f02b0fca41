"""The request cache: replay with no call and no key, and a miss that names what changed
since the nearest cached request."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import httpx2
import pytest

import stay
from stay.artefacts import Brief
from stay.models import CachedBackend, ModelAnswer, Rejecting, RequestCache, Usage
from stay.models._cache import REJECTIONS_KEPT
from stay.pipeline import build_course
from stay.stages import REGISTRY, STAGES, Prompts
from tests.conftest import run_stay
from tests.expected import curriculum_of, total_calls
from tests.models.fake_api import FakeMessagesAPI, answer_for, is_stage, message, reply, stage_of
from tests.models.helpers import HTTP, audience_request, backend, quiet, recording
from tests.parity.harness import reference_report


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STAY_MODEL", "STAY_MODEL_PLANNING", "STAY_MODEL_WRITING", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")


def no_network(request: httpx2.Request) -> httpx2.Response:
    raise AssertionError("a replayed run made an HTTP call")


def test_replay_makes_no_http_call_and_a_miss_says_what_changed(tmp_path: Path) -> None:
    handle, seen = recording()
    first = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend(handle), progress=quiet)
    stage_calls = total_calls(curriculum_of(first.course_dir), REGISTRY)  # a model build: a review per lesson
    assert len(seen) == stage_calls  # one cache entry each, and the input screen's
    assert len(list((first.course_dir / ".runs" / "cache").glob("*.json"))) == stage_calls + 1
    for path in first.course_dir.rglob("*"):
        if path.is_file() and ".runs" not in path.parts and ".state" not in path.parts:
            path.unlink()
    replayed = build_course(HTTP, courses_dir=tmp_path, yes=True, replay=True, backend=backend(no_network),
                            progress=quiet)
    assert replayed.complete and replayed.cost == 0 and replayed.calls == stage_calls  # the screen's was free

    changed = tmp_path / "prompts"
    shutil.copytree(Prompts.load().directory, changed)
    (changed / "content.md").write_text((changed / "content.md").read_text() + "\nMore.")
    for path in first.course_dir.glob("modules/*/*.md"):
        path.unlink()
    with pytest.raises(stay.errors.ReplayMiss, match=r"stage content .*: the stage instructions \(prompt template\)"
                                                     r" since the nearest cached request"):
        build_course(HTTP, courses_dir=tmp_path, yes=True, replay=True, prompts_dir=changed,
                     backend=backend(no_network), progress=quiet)


def test_a_rerun_does_not_pay_for_the_screen_again(tmp_path: Path) -> None:
    handle, _seen = recording()
    screens: list[int] = []

    def counting(request: httpx2.Request) -> httpx2.Response:
        if b"# Stage:" not in request.content:
            screens.append(1)
        return handle(request)

    build_course(HTTP, courses_dir=tmp_path, backend=backend(counting), progress=quiet)
    build_course(HTTP, courses_dir=tmp_path, backend=backend(counting), progress=quiet)
    assert screens == [1]


def test_the_nearest_cached_request_is_the_one_with_the_fewest_changes(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path)
    brief = Brief.from_yaml(HTTP)
    request = STAGES["audience"].request({"brief": brief}, Prompts.load(), "audience.yaml")
    answer = ModelAnswer(data={}, model="m", usage=Usage())
    # two changes (model and brief), stored under a key that sorts first ...
    far = STAGES["audience"].request({"brief": brief.model_copy(update={"title": "Far"})}, Prompts.load(), "audience.yaml")
    # ... and one change (the brief) under another
    near = STAGES["audience"].request({"brief": brief.model_copy(update={"title": "Near"})}, Prompts.load(), "audience.yaml")
    cache.put(far, "claude-opus-5-5", answer)
    cache.put(near, "claude-sonnet-5-5", answer)
    # the farther one first in sort order, as the first-found rule would have picked it
    for path in tmp_path.glob("*.json"):
        entry = path.read_text()
        path.rename(tmp_path / ("0-far.json" if '"Far"' in entry else "1-near.json"))
    why = cache.explain_miss(request, "claude-sonnet-5-5")
    assert why == "stage audience (audience.yaml): inputs: brief since the nearest cached request", why


def test_a_miss_names_the_model_when_only_the_model_changed(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path)
    handle, _seen = recording()
    CachedBackend(backend(handle), cache).complete(audience_request(), "claude-sonnet-5-5")
    assert cache.explain_miss(audience_request(), "claude-opus-5-5") == (
        "stage audience (audience.yaml): model (claude-sonnet-5-5 -> claude-opus-5-5) since the nearest cached "
        "request")


def test_replay_needs_no_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith(("STAY_MODEL", "ANTHROPIC_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    with FakeMessagesAPI() as api:
        built = run_stay("new", str(HTTP), "--backend", "anthropic", "--courses-dir", str(tmp_path),
                         env={"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "test-key"})
    assert built.returncode == 0, built.stderr
    audience = tmp_path / "how-http-requests-travel" / "audience.yaml"
    written = audience.read_text()
    audience.unlink()
    replayed = run_stay("build", "how-http-requests-travel", "--backend", "anthropic", "--replay",
                        "--courses-dir", str(tmp_path))  # no key, no base URL
    assert replayed.returncode == 4, replayed.stderr  # back at the design gate, having replayed the audience
    assert "ANTHROPIC_API_KEY" not in replayed.stderr and audience.read_text() == written


def test_a_rejected_answer_leaves_the_cache_for_good_and_a_replay_miss_says_so(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / ".runs" / "cache")
    handle, seen = recording()
    live = CachedBackend(backend(handle), cache)
    request, model = audience_request(), "claude-sonnet-5-5"
    answer = live.complete(request, model)
    assert isinstance(live, Rejecting) and cache.get(request, model) == answer
    live.reject(request, model, "stage audience: not what was asked")
    assert cache.get(request, model) is None and not list(cache.directory.glob("*.json"))
    (record,) = cache.rejected_dir.glob("*.json")
    assert record.parent == tmp_path / ".runs" / "rejected"
    (kept,) = json.loads(record.read_text())["rejections"]
    assert kept == {"why": "stage audience: not what was asked", "answer": answer.model_dump(mode="json"),
                    "raw": None}
    with pytest.raises(stay.errors.ReplayMiss, match=r"its answer was rejected \(stage audience: not what was "
                                                     r"asked\); it is kept for diagnosis only, in .*rejected"):
        CachedBackend(backend(no_network), cache, replay=True).complete(request, model)
    calls = len(seen)
    assert live.complete(request, model).data == answer.data and len(seen) == calls + 1  # asked again


def test_rejections_kept_per_request_are_bounded_the_latest_last(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "cache")
    request, model = audience_request(), "claude-sonnet-5-5"
    whys = [f"rejection {n}" for n in range(REJECTIONS_KEPT + 2)]
    for why in whys:
        cache.put(request, model, ModelAnswer(data={"why": why}, model=model, usage=Usage()))
        cache.reject(request, model, why)
    (record,) = cache.rejected_dir.glob("*.json")
    kept = json.loads(record.read_text())["rejections"]
    assert [item["why"] for item in kept] == whys[-REJECTIONS_KEPT:]
    assert [item["answer"]["data"] for item in kept] == [{"why": why} for why in whys[-REJECTIONS_KEPT:]]
    assert cache.rejection(request, model) == whys[-1]


def test_an_answer_that_is_not_json_is_kept_as_text_beside_the_rejected_ones(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "cache")
    handle, _seen = recording([message("not json at all")])
    with pytest.raises(stay.errors.AnswerError, match="not JSON"):
        CachedBackend(backend(handle), cache).complete(audience_request(), "claude-sonnet-5-5")
    (record,) = cache.rejected_dir.glob("*.json")
    (kept,) = json.loads(record.read_text())["rejections"]
    assert kept["answer"] is None and kept["raw"] == "not json at all" and "not JSON" in kept["why"]


def test_over_the_real_sdk_a_plan_rejected_twice_is_asked_again_by_the_rerun(tmp_path: Path) -> None:
    handle, seen = recording()
    spoiled: list[dict[str, object]] = []

    def no_plans(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if is_stage(body) and stage_of(body) == "plan" and len(spoiled) < 2:
            spoiled.append(body)  # fits the schema; fails the plan stage's one-plan-per-lesson check
            return reply(body, message({**answer_for(body), "plans": []}, model=body["model"]))
        return handle(request)

    with pytest.raises(stay.errors.AnswerError, match="answer holds 0 plans; ask again"):
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend(no_plans), progress=quiet)
    asked = len(seen)
    again = build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend(no_plans), progress=quiet)
    assert again.complete and len(seen) > asked and any(stage_of(body) == "plan" for body in seen[asked:])
    summary = reference_report(again.course_dir, strict=True)["summary"]
    assert (summary["fail"], summary["warn"]) == (0, 0), summary
