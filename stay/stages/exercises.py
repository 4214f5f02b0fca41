"""Wave: practice for each of a lesson's outcomes at apply or above."""

from __future__ import annotations

from typing import Any

from stay.artefacts import DEFAULT_LIMITS, Audience, Exercises, LessonPlan
from stay.stages._offline import APPLIED
from stay.stages._stage import DefinitionsInput, LessonOutcomesInput, Stage


def _setting(lesson_plan: dict[str, Any]) -> str:
    running = lesson_plan.get("running_example")
    if not running:
        return ""
    files = " and ".join(f"`{file['path']}`" for file in running.get("files") or [])
    return f" Work in the course's running example. {running['setting']}" + (f" Open {files}." if files else "")


def offline(inputs: dict[str, Any]) -> dict[str, Any]:
    lesson_plan = inputs["plan"]
    found: list[dict[str, Any]] = []
    for outcome in inputs["outcomes"]:
        if outcome["bloom"] in APPLIED:
            number = len(found) + 1
            found.append({
                "id": f"{lesson_plan['lesson']}-e{number}", "outcome": outcome["id"],
                "bloom": outcome["bloom"],
                "task": f"Pick a small task from your own work where {lesson_plan['title']} plays a "
                        f"part. {outcome['text']} Write down each step you take.{_setting(lesson_plan)}",
                "hints": ["Start from the worked example in the lesson.",
                          "Name the step where the lesson's idea does the work."],
                "solution": "Offline template solution: a model-written solution would work the task "
                            "step by step and explain the reasoning at each step.",
                "minutes": DEFAULT_LIMITS.exercise_min,  # a short task: the capstone takes the rest
            })
    return {"lesson": lesson_plan["lesson"], "exercises": found}


STAGE = Stage(
    name="exercises", role="writing", phase="wave", scope="lesson",
    answer=Exercises,
    offline=offline,
    inputs=(("plan", LessonPlan), ("outcomes", LessonOutcomesInput()),
            ("audience", Audience), ("definitions", DefinitionsInput())),
    needs=("assessment-design.md",),
    shared=("audience",),
)
