"""The review stage over real HTTP, through the fake Messages API with scripted answers: a
planted wrong key is found, routed to the quiz's repair and gone from the repaired file; a
finding the reviewer cannot quote changes nothing but its count; an unchanged course is not
reviewed again, ``--no-review`` reviews nothing, and an offline build says it reviewed none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from stay.artefacts import LessonReview, load
from stay.models import AnthropicBackend
from stay.pipeline import BuildResult, build_course
from stay.settings import Settings
from stay.stages import STAGES
from tests.models.fake_api import FakeMessagesAPI, inputs_of, stage_of
from tests.pipeline.conftest import HTTP

KEY = "sk-ant-test"
LESSON = "m01-l01"
PLANTED = "Planted: the port number alone"
REVIEW = STAGES["review"]


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as fake:
        yield fake


def build(api: FakeMessagesAPI, courses: Path, lines: list[str] | None = None, **options: Any) -> BuildResult:
    backend = AnthropicBackend(api_key=KEY, base_url=api.url, sleep=lambda _s: None)
    return build_course(HTTP, courses_dir=courses, yes=True, backend=backend, settings=Settings(cache=False),
                        progress=(lines if lines is not None else []).append, **options)


def requests(api: FakeMessagesAPI, stage: str) -> list[dict[str, Any]]:
    return [inputs_of(body) for body in api.requests if stage_of(body) == stage]


def review_of(course: Path, lesson: str) -> LessonReview:
    (path,) = course.glob(f"modules/*/{REVIEW.output.format(lesson=lesson)}")
    return load(path, LessonReview)


def plant(inputs: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The quiz writer of LESSON marks a wrong answer as its first mcq item's key (a repair's
    answer, asked with the file as it stands, is the offline one: the fixed item)."""
    if inputs["plan"]["lesson"] == LESSON and "current_version" not in inputs:
        item = next(item for item in answer["items"] if item["type"] == "mcq")
        next(option for option in item["options"] if option["correct"])["text"] = PLANTED
    return answer


def spot(inputs: dict[str, Any], _answer: dict[str, Any]) -> dict[str, Any]:
    """A reviewer that works each item out: it reports a marked option that is the planted one."""
    return {"findings": [
        {"kind": "wrong_key", "file": "quiz", "item": item["id"], "quote": option["text"],
         "why": "the authority is the host and port, not the port alone", "fix": "mark the host and port"}
        for item in inputs["quiz"]["items"] for option in item.get("options") or []
        if option["correct"] and option["text"] == PLANTED]}


def test_a_planted_wrong_key_is_found_routed_to_the_quiz_and_gone_once_repaired(
        api: FakeMessagesAPI, tmp_path: Path) -> None:
    api.scripted.update(quiz=plant, review=spot)
    result = build(api, tmp_path)
    course = result.course_dir
    reviews = [r for r in requests(api, "review") if r["plan"]["lesson"] == LESSON]
    assert len(reviews) == 2  # after the wave, and again once repair rewrote the quiz
    assert any(o["text"] == PLANTED for i in reviews[0]["quiz"]["items"] for o in i.get("options") or [])
    (repair,) = [r for r in requests(api, "quiz") if "defects_to_fix" in r]
    (defect,) = repair["defects_to_fix"]
    assert (defect["code"], defect["path"].rpartition("/")[2], defect["subject"]) == (
        "rev001", f"{LESSON}.quiz.yaml", f"{LESSON}-q1")
    assert PLANTED in defect["message"]
    assert result.repair is not None and result.repair.rounds[0].regenerated == (defect["path"],)
    assert PLANTED not in (course / defect["path"]).read_text(encoding="utf-8")
    assert review_of(course, LESSON).findings == []  # the reviewer confirmed the fix
    assert result.validation is not None and result.validation.defects == ()


def test_a_finding_that_cannot_be_quoted_changes_nothing_and_is_counted(
        api: FakeMessagesAPI, tmp_path: Path) -> None:
    """Compared with a build that reviews nothing (--no-review, which asks no review), every
    course file is the same, and the invented finding is only a count in the review file."""
    api.scripted["review"] = lambda inputs, _answer: {"findings": [
        {"kind": "solution", "file": "exercises", "item": f"{inputs['plan']['lesson']}-e1",
         "quote": "so 11 rows remain", "why": "the data leaves 10", "fix": "say 10"}]}
    lines: list[str] = []
    invented = build(api, tmp_path / "invented", lines)
    lessons = len(requests(api, "review"))
    assert lessons == sum(len(module.lessons) for module in load(invented.course_dir / "curriculum.yaml").modules)
    assert not [r for r in api.requests if "defects_to_fix" in inputs_of(r)]
    assert invented.validation is not None and invented.validation.defects == ()
    assert review_of(invented.course_dir, LESSON).dropped == 1
    assert sum("1 finding dropped, its quote not found in its file" in line for line in lines) == lessons

    before = len(api.requests)
    again = build(api, tmp_path / "invented")
    assert (len(api.requests), again.written) == (before, ())  # nothing changed: no review, no call, no write

    plain = build(api, tmp_path / "plain", review=False)
    assert len(requests(api, "review")) == lessons  # --no-review asks none
    assert "review: not run, so no lesson was reviewed (--no-review was given)" in plain.summary()
    assert files(invented.course_dir) == files(plain.course_dir)
    statuses = [yaml.safe_load((r.course_dir / "course.yaml").read_text(encoding="utf-8")) for r in (invented, plain)]
    reviewed = {path for path in statuses[0]["artefacts"] if "/.review/" in path}
    assert len(reviewed) == lessons
    assert {**statuses[0], "artefacts": {k: v for k, v in statuses[0]["artefacts"].items() if k not in reviewed}} \
        == statuses[1]


def files(course: Path) -> dict[str, bytes]:
    """Every course file outside dot directories but course.yaml (its status map lists the reviews)."""
    return {p.relative_to(course).as_posix(): p.read_bytes() for p in sorted(course.rglob("*"))
            if p.is_file() and p.name != "course.yaml" and not any(part.startswith(".")
                                                                   for part in p.relative_to(course).parts)}


def test_an_offline_build_says_in_one_line_that_it_reviewed_nothing(courses: Path) -> None:
    result = build_course("how-http-requests-travel", courses_dir=courses, yes=True, progress=lambda _line: None)
    assert result.written == () and result.calls == 0  # an up-to-date offline course: a no-op
    said = [line for line in result.summary().splitlines() if line.startswith("review:")]
    assert said == ["review: not run, so no lesson was reviewed (the offline backend cannot read a lesson; build "
                    "with a model backend to review)"]
    assert not list((courses / "how-http-requests-travel").glob("modules/*/.review"))


def test_a_review_file_named_to_revise_is_asked_again_once_with_the_note(api: FakeMessagesAPI, tmp_path: Path) -> None:
    """A lesson's review is a file like any other: revise asks its stage again for that lesson alone,
    with the reviewer's note, and says so (it once said 'nothing to revise' and asked nothing)."""
    from stay.pipeline import revise

    build(api, tmp_path)
    course = tmp_path / HTTP.stem
    (path,) = course.glob(f"modules/*/{REVIEW.output.format(lesson=LESSON)}")
    named = str(path.relative_to(course))
    before, lines = len(api.requests), []
    backend = AnthropicBackend(api_key=KEY, base_url=api.url, sleep=lambda _s: None)
    revise(HTTP.stem, [named], note="Check every key twice.", courses_dir=tmp_path, backend=backend,
           settings=Settings(cache=False), progress=lines.append)
    asked = api.requests[before:]
    assert [stage_of(body) for body in asked] == ["review"]
    assert inputs_of(asked[0])["plan"]["lesson"] == LESSON and "Check every key twice." in str(asked[0])
    assert f"  {named}: revising with the reviewer's note" in lines
