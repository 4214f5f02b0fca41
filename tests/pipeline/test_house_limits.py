"""A curriculum past the house limits is asked for again, and refused, before any call
past it is paid for: every later call scales with it (issue 20, item 5)."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import httpx2
import pytest

from stay.artefacts import DEFAULT_LIMITS, Audience, Curriculum
from stay.errors import AnswerError, exit_code
from stay.pipeline import build_course
from stay.stages import REGISTRY
from stay.stages.design import within_house_limits
from tests.models.fake_api import answer_for, is_stage, message, reply, stage_of
from tests.models.helpers import HTTP, backend, quiet

SIDE = 30
"""The hostile answer is SIDE modules of SIDE lessons: the measured case, 15 times the
shipped house maximum of modules x lessons."""


def bloated(good: dict[str, Any], modules: int, lessons: int) -> dict[str, Any]:
    """``good``'s first module and lesson, repeated into ``modules`` x ``lessons``, ids renumbered."""
    lesson, module = good["modules"][0]["lessons"][0], good["modules"][0]
    made = []
    for i in range(1, modules + 1):
        entries = [{**copy.deepcopy(lesson), "id": f"m{i:02d}-l{j:02d}"} for j in range(1, lessons + 1)]
        made.append({**copy.deepcopy(module), "id": f"m{i:02d}", "slug": f"part-{i}", "lessons": entries})
    return {**good, "modules": made}


def _handler(bad_answers: int) -> tuple[Any, list[str]]:
    """A fake API whose first ``bad_answers`` curriculum answers are SIDE x SIDE; the stages it was asked for."""
    asked: list[str] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        import json

        body = json.loads(request.content)
        if not is_stage(body):  # the input screen
            return reply(body, message({"flagged": False, "reason": "fine"}, model=body["model"]))
        stage = stage_of(body)
        asked.append(stage)
        data = answer_for(body)
        if stage == "curriculum" and asked.count("curriculum") <= bad_answers:
            data = bloated(data, SIDE, SIDE)
        return reply(body, message(data, model=body["model"]))

    return handle, asked


def test_a_curriculum_past_the_house_limits_is_refused_after_one_more_ask(tmp_path: Path) -> None:
    handle, asked = _handler(bad_answers=2)
    with pytest.raises(AnswerError) as raised:
        build_course(HTTP, courses_dir=tmp_path, yes=True, backend=backend(handle), progress=quiet)
    # the stages before the curriculum once each, the curriculum asked and asked once more; nothing after
    before = [stage.name for stage in REGISTRY[:[s.name for s in REGISTRY].index("curriculum")]]
    assert asked == [*before, "curriculum", "curriculum"]
    line = str(raised.value)
    assert "\n" not in line and "house limits" in line and f"{SIDE} modules" in line
    assert exit_code(raised.value) not in (0, 3)
    assert not list(tmp_path.rglob("curriculum.yaml"))


def test_with_a_good_second_answer_the_build_goes_on(tmp_path: Path) -> None:
    handle, asked = _handler(bad_answers=1)
    result = build_course(HTTP, courses_dir=tmp_path, backend=backend(handle), progress=quiet)
    assert result.stopped_at is not None  # the design gate: everything before it was made
    assert asked.count("curriculum") == 2
    assert {stage.name for stage in REGISTRY if stage.phase == "design"} <= set(asked)
    written = Curriculum.model_validate(_yaml(next(tmp_path.rglob("curriculum.yaml"))))
    within_house_limits([written], {"audience": Audience.model_validate(
        _yaml(next(tmp_path.rglob("audience.yaml"))))}, DEFAULT_LIMITS)


def _yaml(path: Path) -> Any:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _shape(modules: int, lessons: int, minutes: int) -> Curriculum:
    return Curriculum.model_validate({"modules": [
        {"id": f"m{i:02d}", "slug": f"part-{i}", "title": "T", "summary": "S.", "lessons": [
            {"id": f"m{i:02d}-l{j:02d}", "title": "T", "minutes": minutes, "summary": "S."}
            for j in range(1, lessons + 1)]} for i in range(1, modules + 1)]})


def _audience(budget: int) -> Audience:
    return Audience(learners="L", prior_knowledge=[], goals=["G"], time_budget_minutes=budget)


LIM = DEFAULT_LIMITS
WIDEST = (LIM.max_modules, LIM.max_lessons, LIM.max_minutes)
"""The largest course house style allows: within every limit."""
PAST = {"min_modules": (LIM.min_modules - 1, LIM.max_lessons, LIM.max_minutes),
        "max_modules": (LIM.max_modules + 1, LIM.max_lessons, LIM.max_minutes),
        "min_lessons": (LIM.max_modules, LIM.min_lessons - 1, LIM.max_minutes),
        "max_lessons": (LIM.max_modules, LIM.max_lessons + 1, LIM.max_minutes),
        "min_minutes": (LIM.max_modules, LIM.max_lessons, LIM.min_minutes - 1),
        "max_minutes": (LIM.max_modules, LIM.max_lessons, LIM.max_minutes + 1)}
"""For each house limit, a shape past it by one and within every other."""


def test_the_largest_course_house_style_allows_passes() -> None:
    within_house_limits([_shape(*WIDEST)], {"audience": _audience(LIM.longest)}, LIM)


PRACTICE = ("practice_percent", "exercise_min", "exercise_max", "capstone_min", "capstone_max")
"""The limits on practice time, which the audience stage's check and the prc rules hold, not the curriculum's."""


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(LIM) if f.name not in PRACTICE])
def test_each_house_limit_is_checked(field: str) -> None:
    shape = PAST[field]
    with pytest.raises(AnswerError, match="past the house limits"):
        within_house_limits([_shape(*shape)], {"audience": _audience(10 * LIM.longest)}, LIM)


def test_a_curriculum_over_the_audience_budget_is_checked() -> None:
    curriculum = _shape(*WIDEST)
    with pytest.raises(AnswerError, match=f"over the audience's budget of {LIM.longest - 1}"):
        within_house_limits([curriculum], {"audience": _audience(LIM.longest - 1)}, LIM)


@pytest.mark.parametrize("off", [-1, 0, 1])
def test_the_audience_budget_must_be_the_lessons_share_of_the_brief(off: int) -> None:
    """audience.yaml's budget is the brief's time less house style's practice share: a model
    that writes the whole time (or any other figure) is asked again."""
    from stay.artefacts import Brief, parse_duration
    from stay.stages.design import lessons_share

    brief = Brief(title="T", topic="t", audience="a", time_available="5 hours")
    share = LIM.lessons_share(parse_duration(brief.time_available))
    assert share < parse_duration(brief.time_available)
    if off:
        with pytest.raises(AnswerError, match=f"the lessons' share of .* is {share}"):
            lessons_share([_audience(share + off)], {"brief": brief}, LIM)
    else:
        lessons_share([_audience(share)], {"brief": brief}, LIM)
