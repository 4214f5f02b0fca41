"""Input moderation through the Claude backend: counted, with room to answer, and read
strictly (a verdict that cannot be read is reported, never taken as "not flagged")."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from stay.errors import AnswerError, BriefRejected, TruncationError
from stay.models import SCREENING, OfflineBackend, screen_request, screening_of
from stay.pipeline import build_course
from stay.testing import RiggedBackend
from tests.models.fake_api import answer_for, is_stage, message, reply
from tests.models.helpers import HTTP, backend, quiet


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STAY_MODEL", "STAY_MODEL_ANALYSIS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")


def screened_by(verdict: httpx2.Response | dict[str, object]) -> tuple[object, list[dict[str, object]]]:
    screens: list[dict[str, object]] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if is_stage(body):
            return reply(body, message(answer_for(body), model=body["model"]))
        screens.append(body)
        return verdict if isinstance(verdict, httpx2.Response) else reply(body, verdict)

    return handle, screens


def test_the_screen_has_room_to_think_and_to_answer(tmp_path: Path) -> None:
    handle, screens = screened_by(message({"flagged": False, "reason": "a course on HTTP"}))
    build_course(HTTP, courses_dir=tmp_path, backend=backend(handle), progress=quiet)
    (body,) = screens
    assert body["max_tokens"] == 1_000 + SCREENING.room  # thinking cannot crowd the verdict out
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"]["effort"] == "low"
    assert body["output_config"]["format"]["schema"]["required"] == ["flagged", "reason"]


def test_a_flag_rejects_the_brief_before_anything_is_written(tmp_path: Path) -> None:
    handle, _screens = screened_by(message({"flagged": True, "reason": "Teaches  harm."}))
    with pytest.raises(BriefRejected, match=r"^Course brief rejected by input moderation: Teaches harm\.$"):
        build_course(HTTP, courses_dir=tmp_path / "c", backend=backend(handle), progress=quiet)
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("reply_body, error", [
    (message('{"flagged": true, "reason": "Teaches wea', stop_reason="max_tokens"), TruncationError),
    (message("I would rather not say."), AnswerError),
    (message({"flagged": "maybe", "reason": 3}), AnswerError),
])
def test_a_truncated_or_unreadable_verdict_is_reported_not_failed_open(
        tmp_path: Path, reply_body: dict[str, object], error: type[Exception]) -> None:
    handle, _screens = screened_by(reply_body)
    with pytest.raises(error) as caught:
        build_course(HTTP, courses_dir=tmp_path / "c", backend=backend(handle), progress=quiet)
    assert "stage moderation (the brief)" in str(caught.value)
    assert not (tmp_path / "c").exists()


def test_a_refusal_to_read_the_brief_rejects_it_with_the_reason(tmp_path: Path) -> None:
    handle, _screens = screened_by(message("", stop_reason="refusal", stop_details={
        "type": "refusal", "category": "cyber", "explanation": "exploit development"}))
    with pytest.raises(BriefRejected, match=r"refused to read the brief \(cyber: exploit development\)"):
        build_course(HTTP, courses_dir=tmp_path, backend=backend(handle), progress=quiet)


def test_the_service_being_down_for_the_screen_warns_and_continues(tmp_path: Path) -> None:
    handle, _screens = screened_by(httpx2.Response(529, json={"type": "error", "error": {
        "type": "overloaded_error", "message": "Overloaded"}}))
    lines: list[str] = []
    result = build_course(HTTP, courses_dir=tmp_path, backend=backend(handle, max_retries=1),
                          progress=lines.append)
    assert result.stopped_at == "design gate"
    assert any(line.startswith("warning: input moderation failed (ModelUnavailable") for line in lines)


def test_the_offline_screen_is_deterministic_and_free() -> None:
    flagged = RiggedBackend(flag="no")
    assert screening_of(flagged, "a brief").reason == "no" and screening_of(flagged, "a brief").answer is None
    assert screening_of(OfflineBackend(), "a brief").reason is None
    assert flagged.complete(screen_request("x"), "offline").data == {"flagged": True, "reason": "no"}
    assert OfflineBackend().complete(screen_request("x"), "offline").data["flagged"] is False
