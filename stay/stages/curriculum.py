"""Stage 2, curriculum: modules and lessons, sized to the audience's time budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stay.artefacts import Artefact, Curriculum, DurationLimits
from stay.errors import AnswerError
from stay.stages import _offline
from stay.stages._stage import BriefInput, FileInput, Stage


def within_house_limits(made: Sequence[Artefact], inputs: Mapping[str, Any], limits: DurationLimits) -> None:
    """A curriculum past the house limits is asked for again before anything is paid for
    on it: every later call scales with it (a plan call per module, a wave call per
    lesson and artefact), so a 30 x 30 answer would buy thousands of calls for a course
    the validator then fails (cur001 to cur004, whose bounds these are)."""
    curriculum = made[0]
    assert isinstance(curriculum, Curriculum)
    problems = []
    modules = len(curriculum.modules)
    if not limits.min_modules <= modules <= limits.max_modules:
        problems.append(f"{modules} modules (house style allows {limits.min_modules} to {limits.max_modules})")
    for module in curriculum.modules:
        lessons = len(module.lessons)
        if not limits.min_lessons <= lessons <= limits.max_lessons:
            problems.append(f"module {module.id} has {lessons} lessons (house style allows {limits.min_lessons} "
                            f"to {limits.max_lessons})")
    odd = [lesson for module in curriculum.modules for lesson in module.lessons
           if not limits.min_minutes <= lesson.minutes <= limits.max_minutes]
    if odd:
        problems.append(f"{len(odd)} lessons outside {limits.min_minutes} to {limits.max_minutes} minutes "
                        f"(first: {odd[0].id}, {odd[0].minutes})")
    total = sum(lesson.minutes for module in curriculum.modules for lesson in module.lessons)
    budget = inputs["audience"].time_budget_minutes
    if total > budget:
        problems.append(f"{total} minutes in all, over the audience's budget of {budget}")
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise AnswerError(f"stage curriculum (curriculum.yaml): the curriculum is past the house limits: {shown}; "
                          "ask again")


STAGE = Stage(
    name="curriculum", role="planning", phase="design", scope="course",
    answer=Curriculum,
    offline=_offline.curriculum,
    inputs=(("brief", BriefInput()), ("audience", FileInput("audience.yaml"))),
    needs=("backward-design.md", "cognitive-load.md"),
    check=within_house_limits,
)
