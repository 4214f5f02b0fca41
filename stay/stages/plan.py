"""Stage 5, lesson planning: every plan of one module in one call, so the module's
term budget is allocated rather than audited after the fact."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stay.artefacts import LessonPlan
from stay.errors import AnswerError
from stay.stages import _offline
from stay.stages._stage import EarlierPlansInput, ExampleInput, FileInput, ModuleIdInput, Stage
from stay.stages.answers import ModulePlans


def _module_plans(answer: ModulePlans, inputs: Mapping[str, Any]) -> list[LessonPlan]:
    """The module's plans, one per curriculum lesson, in curriculum order, each carrying
    the course's running example (example.yaml, its data files by path): the wave's
    writers run side by side and each sees only its lesson's plan, so the plan is where
    they all find the same one."""
    module = inputs["module"]
    lessons = next(len(m.lessons) for m in inputs["curriculum"].modules if m.id == module)
    if len(answer.plans) != lessons:
        raise AnswerError(f"stage plan: module {module} has {lessons} lessons but the answer holds "
                          f"{len(answer.plans)} plans; ask again")
    return [LessonPlan(**dict(plan), running_example=inputs["example"]) for plan in answer.plans]


STAGE = Stage(
    name="plan", role="planning", phase="plan", scope="module", answer=ModulePlans,
    offline=_offline.plan, makes=LessonPlan,
    inputs=(("audience", FileInput("audience.yaml")), ("curriculum", FileInput("curriculum.yaml")),
            ("outcomes", FileInput("outcomes.yaml")), ("assessment", FileInput("assessment.yaml")),
            ("example", ExampleInput()), ("module", ModuleIdInput()), ("earlier_plans", EarlierPlansInput())),
    needs=("cognitive-load.md", "retrieval-and-spacing.md"),
    shared=("audience", "curriculum", "outcomes", "assessment", "example"),
    make=_module_plans,
    node="plan_modules",
)
