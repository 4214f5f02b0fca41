"""Wave: the capstone project, beside the lessons: it needs only the plans."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import create_model

from stay.artefacts import (
    DEFAULT_LIMITS,
    Artefact,
    Assessment,
    Audience,
    Brief,
    Curriculum,
    Outcomes,
    Project,
    RubricCriterion,
    parse_duration,
)
from stay.stages._offline import APPLIED, capstone_outcome
from stay.stages._stage import AllPlansInput, Stage
from stay.validate import HouseData, packaged_data_dir

RUBRIC_LEVELS: tuple[str, ...] = tuple(HouseData.load(packaged_data_dir())["rubric.levels"])  # as prj006 reads


def _like(model: type[Artefact], name: str, doc: str, **replaced: Any) -> type[Artefact]:
    """``model``'s fields under ``name``, some annotations replaced: a derived shape, not a second one."""
    fields: dict[str, Any] = {key: (replaced.get(key, info.annotation), info)
                              for key, info in model.model_fields.items()}
    derived: type[Artefact] = create_model(name, __base__=Artefact, __doc__=doc, **fields)
    return derived


_LEVEL_TEXT: Any = get_args(RubricCriterion.model_fields["levels"].annotation)[1]  # the file's level text type

_REQUIRED_LEVELS: dict[str, Any] = {level: (_LEVEL_TEXT, ...) for level in RUBRIC_LEVELS}
RubricLevels: type[Artefact] = create_model(
    "RubricLevels", __base__=Artefact,
    __doc__="One description per house-style rubric level, every level required.", **_REQUIRED_LEVELS)
"""Under structured output a ``dict[str, str]`` allows only ``{}``, so each level is a field of its own."""

# Named as the artefacts they stand for: the prompt asks for a `Project`, and the schema's
# titles are what the model reads.
CriterionAnswer = _like(RubricCriterion, "RubricCriterion", "A rubric criterion, its levels named.",
                        levels=RubricLevels)
CapstoneAnswer = _like(Project, "Project", "The capstone stage's answer: project.yaml, its rubric "
                       "levels named one by one.", rubric=list[CriterionAnswer])  # type: ignore[valid-type]


def project(answer: Any, _inputs: Any) -> Project:
    return Project.model_validate(answer.model_dump(mode="python", by_alias=True, exclude_none=True))


def _data_files(plans: list[dict[str, Any]]) -> str:
    running = next((plan["running_example"] for plan in plans if plan.get("running_example")), None)
    paths = [file["path"] for file in (running or {}).get("files") or []]
    return f" Start from the course's data: {', '.join(f'`{path}`' for path in paths)}." if paths else ""


def _capstone_minutes(inputs: dict[str, Any]) -> int:
    """The time the lessons and their exercises leave of the brief's, within house style."""
    lessons = sum(lesson["minutes"] for module in inputs["curriculum"]["modules"] for lesson in module["lessons"])
    practice = DEFAULT_LIMITS.exercise_min * sum(outcome["bloom"] in APPLIED
                                                 for outcome in inputs["outcomes"]["outcomes"])
    left: int = parse_duration(inputs["brief"]["time_available"]) - lessons - practice
    return max(DEFAULT_LIMITS.capstone_min, min(DEFAULT_LIMITS.capstone_max, left))


def offline(inputs: dict[str, Any]) -> dict[str, Any]:
    modules = inputs["curriculum"]["modules"]
    rubric = [{
        "id": f"r{index}",
        "criterion": f"The submission uses {module['title']} on the chosen task and names each step.",
        "outcomes": [capstone_outcome(module)],
        "levels": {
            "exemplary": "Every step is named, correct, and justified with evidence from the task.",
            "proficient": "Every step is named and correct; one justification is missing.",
            "developing": "Most steps are named; one step is wrong or missing.",
            "beginning": "Steps are missing or wrong in more than one place.",
        },
    } for index, module in enumerate(modules, 1)]
    return {
        "title": "Capstone: apply the course to one task",
        "brief": "Choose one realistic task from your own work and carry it through with the skills "
                 "of every module. Offline template brief: a model would write a specific scenario."
                 + _data_files(inputs["plans"]),
        "deliverable": "A short written report of the task, with each step and its evidence.",
        "minutes": _capstone_minutes(inputs),
        "milestones": [{"id": f"p{index}", "title": f"Apply {module['title']}",
                        "modules": [module["id"]],
                        "description": f"Carry out the part of the task that uses {module['title']}."}
                       for index, module in enumerate(modules, 1)],
        "rubric": rubric,
    }


STAGE = Stage(
    name="capstone", role="planning", phase="wave", scope="course",
    answer=CapstoneAnswer,
    offline=offline, makes=Project, make=project,
    inputs=(("brief", Brief), ("audience", Audience),
            ("curriculum", Curriculum), ("outcomes", Outcomes),
            ("assessment", Assessment), ("plans", AllPlansInput())),
    needs=("capstone-design.md",),
)
