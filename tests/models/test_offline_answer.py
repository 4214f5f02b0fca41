"""``stay.stages.offline_answer``: the offline backend's answer for one stage, public, so
fakes outside stay can answer as it does."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from stay.errors import UsageError
from stay.models import ModelAnswer, ModelRequest, OfflineBackend
from stay.pipeline import build_course
from stay.stages import REGISTRY, offline_answer
from tests.conftest import ROOT

BRIEFS = sorted((ROOT / "examples" / "briefs").glob("*.yaml"))


class Recording(OfflineBackend):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[ModelRequest, ModelAnswer]] = []

    def complete(self, request: ModelRequest, model: str) -> ModelAnswer:
        answer = super().complete(request, model)
        self.seen.append((request, answer))
        return answer


@pytest.mark.sweep
@pytest.mark.parametrize("brief", BRIEFS, ids=[b.stem for b in BRIEFS])
def test_it_answers_every_stage_as_the_offline_backend_does(brief: Path, tmp_path: Path) -> None:
    backend = Recording()
    result = build_course(brief, courses_dir=tmp_path, yes=True, backend=backend, progress=lambda _l: None)
    assert result.complete
    stages = set()
    for request, answer in backend.seen:
        inputs = copy.deepcopy(request.inputs)
        assert offline_answer(request.stage, inputs) == answer.data
        assert inputs == request.inputs  # the caller's inputs are not modified
        stages.add(request.stage)
    assert stages == {stage.name for stage in REGISTRY if stage.phase != "review"}  # offline: no review


def test_it_is_plain_json_and_deterministic() -> None:
    request_inputs = {"brief": {"title": "T", "topic": "Caching: keys, expiry", "audience": "Developers",
                                "time_available": "2 hours"}}
    first = offline_answer("audience", request_inputs)
    assert json.loads(json.dumps(first)) == first == offline_answer("audience", copy.deepcopy(request_inputs))


def test_a_wrong_stage_or_a_missing_input_is_a_clear_error() -> None:
    with pytest.raises(UsageError, match=r"unknown stage 'lesson'; the stages are audience, .*, capstone, review$"):
        offline_answer("lesson", {})
    with pytest.raises(UsageError, match=r"stage 'audience' needs the input 'brief'"):
        offline_answer("audience", {})


def test_a_request_carries_its_stages_offline_answer_outside_its_data() -> None:
    """The offline backend answers from the request (the model layer cannot import the
    stages), and the answer it carries is no part of what is cached, keyed or sent."""
    from stay.models import request_key, request_params
    from tests.models.helpers import audience_request

    request = audience_request()
    bare = request.model_copy(update={"offline": None})
    assert request.offline is not None and "offline" not in request.model_dump(mode="json")
    assert request_key(request, "m") == request_key(bare, "m")
    assert request_params(request, "claude-opus-5-5") == request_params(bare, "claude-opus-5-5")
    assert OfflineBackend().complete(request, "offline").data == offline_answer("audience", request.inputs)
    with pytest.raises(UsageError, match=r"the request for stage 'audience' carries no offline answer"):
        OfflineBackend().complete(bare, "offline")
