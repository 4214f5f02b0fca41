"""Stage 5, lesson planning: every plan of one module in one call, so the module's
term budget is allocated rather than audited after the fact."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from stay.artefacts import (
    Artefact,
    Assessment,
    Audience,
    Curriculum,
    LessonPlan,
    Outcomes,
    PlanCore,
    RunningExample,
    Text,
)
from stay.errors import AnswerError
from stay.stages._offline import PEOPLE, lessons_of
from stay.stages._stage import EarlierPlansInput, ModuleIdInput, Stage


class PlannedLesson(PlanCore):
    """One lesson's plan as the planning call writes it: the plan's fields, and the facts
    of its worked example, which the answer must give (on disk they are optional)."""

    example_facts: list[Text] = Field(
        min_length=1, description="The facts this lesson's worked example uses, within the course's running "
                                  "example (`example`): who does what, with which exact data, and which data "
                                  "file it opens. The lesson, its exercises and its quiz are written from them.")


class ModulePlans(Artefact):
    """One planning call's answer: every lesson plan of the module, in curriculum order.
    The course's running example is written once, before any module is planned
    (example.yaml); the stage copies it into every plan, so each writer sees the same one."""

    plans: list[PlannedLesson]


def _module_plans(answer: ModulePlans, inputs: Mapping[str, Any]) -> list[LessonPlan]:
    """Each plan carries the running example: each writer sees only its lesson's plan."""
    module = inputs["module"]
    lessons = next(len(m.lessons) for m in inputs["curriculum"].modules if m.id == module)
    if len(answer.plans) != lessons:
        raise AnswerError(f"stage plan: module {module} has {lessons} lessons but the answer holds "
                          f"{len(answer.plans)} plans; ask again")
    return [LessonPlan(**dict(plan), running_example=inputs["example"]) for plan in answer.plans]


def _sections(minutes: int, title: str, ids: list[str]) -> list[dict[str, Any]]:
    hook = recap = max(1, minutes // 10)
    example = practice = max(1, minutes // 4)
    explain = minutes - hook - recap - example - practice
    return [
        {"heading": f"Why {title} matters", "kind": "hook", "minutes": hook, "covers": []},
        {"heading": f"How {title} works", "kind": "explain", "minutes": explain, "covers": [ids[0]]},
        {"heading": "A worked example", "kind": "example", "minutes": example, "covers": [ids[0]]},
        {"heading": "Your turn", "kind": "practice", "minutes": practice, "covers": ids[1:]},
        {"heading": "Recap", "kind": "recap", "minutes": recap, "covers": []},
    ]


def _example_facts(module: dict[str, Any], lesson: dict[str, Any], example: dict[str, Any]) -> list[str]:
    ana, ben = (person.split(",")[0] for person in PEOPLE)
    files = " and ".join(f"`{file['path']}`" for file in example.get("files") or [])
    logged = f"The row for lesson {lesson['id']} in {files} records the step and its result." if files else \
        f"The log for lesson {lesson['id']} records each step and its result."
    return [f"{ben} uses {lesson['title']} on task {module['id']}, and {ana} reviews each step.", logged]


def offline(inputs: dict[str, Any]) -> dict[str, Any]:
    lessons = lessons_of(inputs["curriculum"])
    plans = []
    for position, (module, lesson) in enumerate(lessons):  # lesson ids are unique (Curriculum)
        if module["id"] != inputs["module"]:
            continue
        ids = [o["id"] for o in inputs["outcomes"]["outcomes"] if o["lesson"] == lesson["id"]]
        previous = lessons[position - 1][1]["title"] if position else None
        plans.append({
            "lesson": lesson["id"], "title": lesson["title"], "minutes": lesson["minutes"],
            "outcomes": ids, "sections": _sections(lesson["minutes"], lesson["title"], ids),
            "new_terms": [{"term": lesson["title"],
                           "definition": f"The subject of lesson {lesson['id']}: {lesson['title']}."}],
            "prerequisites": [], "revisits": [previous] if previous else [],
            "example_facts": _example_facts(module, lesson, inputs["example"]),
        })
    return {"plans": plans}


STAGE = Stage(
    name="plan", role="planning", phase="plan", scope="module", answer=ModulePlans,
    offline=offline, makes=LessonPlan,
    inputs=(("audience", Audience), ("curriculum", Curriculum),
            ("outcomes", Outcomes), ("assessment", Assessment),
            ("example", RunningExample), ("module", ModuleIdInput()), ("earlier_plans", EarlierPlansInput())),
    needs=("cognitive-load.md", "retrieval-and-spacing.md"),
    shared=("audience", "curriculum", "outcomes", "assessment", "example"),
    make=_module_plans,
    node="plan_modules",
)
