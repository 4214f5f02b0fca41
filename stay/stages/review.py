"""After the wave: the judging model reviews each lesson with its plan, its outcomes, the
running example's data, its exercises and its quiz, for what is wrong for a learner (a
wrong answer key, a second right option, a solution that does not follow, a contradiction,
an untaught item). A finding is kept only when its quote stands in the file and item it
names; the rest are dropped and counted. The ``rev`` rules make the kept ones defects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from stay.artefacts import (
    Artefact,
    Audience,
    Exercises,
    LessonContent,
    LessonPlan,
    LessonReview,
    Quiz,
    ReviewFinding,
    to_data,
)
from stay.stages._stage import DataFilesInput, LessonOutcomesInput, Stage
from stay.validate.rules.rev import item_texts, stands

REVIEWED: dict[str, type[Artefact]] = {"content": LessonContent, "exercises": Exercises, "quiz": Quiz}


class ReviewAnswer(BaseModel):
    findings: list[ReviewFinding] = Field(description="Every problem found, each quoted; empty when nothing is "
                                                      "wrong.")


def _kept(answer: ReviewAnswer, inputs: Mapping[str, Any]) -> LessonReview:
    content = inputs["content"]
    texts = {"content": item_texts("content", content.body if isinstance(content, LessonContent) else ""),
             **{name: item_texts(name, to_data(inputs[name])) for name in ("exercises", "quiz")}}
    kept = [found for found in answer.findings if stands(to_data(found), texts)]
    return LessonReview(lesson=inputs["plan"].lesson, findings=kept, dropped=len(answer.findings) - len(kept))


def _offline(_inputs: dict[str, Any]) -> dict[str, Any]:
    """For fakes: the offline backend never runs the review (a template must not report a pass)."""
    return {"findings": []}


STAGE = Stage(
    name="review", role="judging", phase="review", scope="lesson", answer=ReviewAnswer, makes=LessonReview,
    offline=_offline, node="review",
    inputs=(("plan", LessonPlan), ("outcomes", LessonOutcomesInput()), ("audience", Audience),
            ("data_files", DataFilesInput(tuple(REVIEWED.values()))),
            *REVIEWED.items()),
    needs=(),
    shared=("audience",),  # one cached prefix for every lesson's review
    make=_kept,
)
