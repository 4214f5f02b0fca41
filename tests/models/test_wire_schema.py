"""The wire schema is the contract: what the Messages API's constrained decoding lets a
model answer (``tests/wire_schema.py``) must still make a course that validates --strict,
for every stage, and the fakes hold their answers to it as the real API does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from pydantic import BaseModel

from stay.errors import UsageError
from stay.models import request_params
from stay.pipeline import build_course
from stay.settings import Settings
from stay.stages import REGISTRY, STAGES, answer_schema, offline_answer
from stay.testing import RiggedBackend
from tests.conftest import ROOT
from tests.models.fake_api import VIOLATIONS, FakeMessagesAPI, answer_for, inputs_of, stage_of
from tests.models.helpers import HTTP, SQL, audience_request, backend, quiet, recording
from tests.parity.harness import reference_report
from tests.wire_schema import check, empty_only, fit, wire


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")


@pytest.mark.sweep
@pytest.mark.parametrize("brief", [HTTP, SQL], ids=lambda p: p.stem)
def test_every_stages_offline_answer_survives_its_wire_schema_and_builds_a_strict_course(
        brief: Path, tmp_path: Path) -> None:
    handle, seen = recording()  # answers fitted to each request's wire schema, as the API would
    result = build_course(brief, courses_dir=tmp_path, yes=True, backend=backend(handle), progress=quiet)
    assert {stage_of(body) for body in seen} == {stage.name for stage in REGISTRY}
    assert result.complete and result.validation is not None
    assert [d.line() for d in result.validation.defects] == []
    report = reference_report(result.course_dir, strict=True)
    assert report["courses"][0]["defects"] == [] and report["summary"]["fail"] == 0
    for body in seen:  # and nothing the offline backend writes is lost on the wire
        schema = body["output_config"]["format"]["schema"]
        offline = offline_answer(stage_of(body), inputs_of(body))
        assert check(fit(offline, schema), schema) == []
        assert fit(offline, schema) == offline, f"{stage_of(body)}: the wire schema drops part of the answer"


@pytest.mark.parametrize("stage", REGISTRY, ids=lambda s: s.name)
def test_no_field_of_any_stages_answer_admits_only_empty_values_on_the_wire(stage: Any) -> None:
    assert empty_only(wire(answer_schema(stage.answer))) == []


def test_the_capstone_answer_requires_exactly_the_house_style_rubric_levels() -> None:
    schema = wire(answer_schema(STAGES["capstone"].answer))
    criterion = schema["$defs"][schema["properties"]["rubric"]["items"]["$ref"].removeprefix("#/$defs/")]
    levels = schema["$defs"][criterion["properties"]["levels"]["$ref"].removeprefix("#/$defs/")]
    named = yaml.safe_load((ROOT / "data" / "house-style.yaml").read_text(encoding="utf-8"))["rubric"]["levels"]
    assert list(levels["properties"]) == levels["required"] == named


def test_a_data_directory_whose_rubric_levels_differ_from_the_schemas_is_refused_before_any_call(
        tmp_path: Path) -> None:
    """The capstone's schema is built from the packaged house style; a run checked against
    other levels would pay for a capstone that fails prj006 on every criterion."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "bloom-verbs.yaml").write_bytes((ROOT / "data" / "bloom-verbs.yaml").read_bytes())
    house = yaml.safe_load((ROOT / "data" / "house-style.yaml").read_text(encoding="utf-8"))
    house["rubric"]["levels"] = list(reversed(house["rubric"]["levels"]))
    (data / "house-style.yaml").write_text(yaml.safe_dump(house), encoding="utf-8")
    counting = RiggedBackend()
    with pytest.raises(UsageError) as refused:
        build_course(HTTP, courses_dir=tmp_path / "courses", yes=True, backend=counting, progress=quiet,
                     settings=Settings(data_dir=data))
    message = str(refused.value)
    assert message.startswith(f"{data / 'house-style.yaml'}: rubric.levels is ") and "\n" not in message
    assert counting.total_calls == 0 and not (tmp_path / "courses").exists()


# -- the helper itself: each check can fail ----------------------------------------------


class _Inner(BaseModel):
    keep: str


class _Outer(BaseModel):
    one: _Inner
    maybe: _Inner | None = None
    many: list[_Inner]
    loose: dict[str, str]


def test_fit_drops_what_the_wire_schema_does_not_declare_through_refs_choices_and_items() -> None:
    schema = wire(_Outer.model_json_schema())
    value = {"one": {"keep": "a", "x": 1}, "maybe": {"keep": "b", "y": 2}, "many": [{"keep": "c", "z": 3}],
             "loose": {"k": "v"}, "extra": True}
    assert fit(value, schema) == {"one": {"keep": "a"}, "maybe": {"keep": "b"}, "many": [{"keep": "c"}],
                                  "loose": {}}
    assert fit({**value, "maybe": None}, schema)["maybe"] is None
    assert check(fit(value, schema), schema) == []
    assert check({"one": {}, "many": [], "loose": {}}, schema) == ["one: 'keep' is a required property"]


def test_empty_only_finds_a_mapping_the_wire_schema_cannot_fill_at_any_depth() -> None:
    class Deep(BaseModel):
        rows: list[dict[str, str]]
        maybe: dict[str, int] | None = None
        fine: _Inner

    assert empty_only(wire(Deep.model_json_schema())) == ["(root).maybe", "(root).rows"]
    assert empty_only(wire(_Inner.model_json_schema())) == []


# -- the fakes enforce it ------------------------------------------------------------------


def _misfit_body() -> dict[str, Any]:
    """A real audience request whose schema requires a field the offline answer lacks."""
    body = request_params(audience_request(), "claude-sonnet-5-5")
    schema = body["output_config"]["format"]["schema"]
    schema["properties"]["cohort"] = {"type": "string"}
    schema["required"] = [*schema["required"], "cohort"]
    return body


def test_the_mock_transport_handler_answers_a_misfit_with_a_recorded_400() -> None:
    handle, _seen = recording()
    body = _misfit_body()
    response = handle(httpx2.Request("POST", "http://testserver/v1/messages", json=body))
    assert response.status_code == 400 and "'cohort' is a required property" in response.text
    assert len(VIOLATIONS) == 1 and "audience" in VIOLATIONS[0]
    VIOLATIONS.clear()  # met on purpose: the conftest fixture would fail this test
    assert answer_for(request_params(audience_request(), "claude-sonnet-5-5"))["goals"]


def test_the_fake_server_answers_a_misfit_with_a_400_and_keeps_it() -> None:
    with FakeMessagesAPI() as api:
        response = httpx2.post(f"{api.url}/v1/messages", content=json.dumps(_misfit_body()), timeout=10,
                               headers={"x-api-key": "test-key-not-real"})  # the fake authenticates as the API
    assert response.status_code == 400 and "cohort" in response.json()["error"]["message"]
    assert len(api.violations) == 1 and api.requests == []
    VIOLATIONS.clear()
