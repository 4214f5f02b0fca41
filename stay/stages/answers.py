"""Answer shapes that are not artefacts themselves."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import Field, create_model

from stay.artefacts import Artefact, PlanCore, Project, RubricCriterion, Text
from stay.validate import HouseData, packaged_data_dir


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


class LessonBody(Artefact):
    """The content stage's answer: the lesson's Markdown after its front matter."""

    body: str = Field(description="Starts with '# <plan title>', then one '## <heading>' per plan "
                                  "section in order, each followed by its prose.")


RUBRIC_LEVELS: tuple[str, ...] = tuple(HouseData.load(packaged_data_dir())["rubric.levels"])
"""House style's rubric levels, in order: read from the data the validator reads (prj006
checks every criterion against the same list), so the answer schema cannot drift from it."""


def _like(model: type[Artefact], name: str, doc: str, **replaced: Any) -> type[Artefact]:
    """``model``'s fields (types, descriptions, validators) under ``name``, with the
    annotations ``replaced`` gives: a derived answer shape, not a second declaration."""
    fields: dict[str, Any] = {key: (replaced.get(key, info.annotation), info)
                              for key, info in model.model_fields.items()}
    derived: type[Artefact] = create_model(name, __base__=Artefact, __doc__=doc, **fields)
    return derived


_LEVEL_TEXT: Any = get_args(RubricCriterion.model_fields["levels"].annotation)[1]  # the file's level text type

_REQUIRED_LEVELS: dict[str, Any] = {level: (_LEVEL_TEXT, ...) for level in RUBRIC_LEVELS}
RubricLevels: type[Artefact] = create_model(
    "RubricLevels", __base__=Artefact,
    __doc__="One description per house-style rubric level, every level required.", **_REQUIRED_LEVELS)
"""The rubric levels as the wire sees them: a ``dict[str, str]`` reaches the API as an
object with no properties and ``additionalProperties: false`` (only ``{}`` is legal under
structured output), so each house-style level is a required field of its own."""

# Named as the artefacts they stand for: the prompt asks for a `Project`, and the schema's
# titles are what the model reads.
CriterionAnswer = _like(RubricCriterion, "RubricCriterion", "A rubric criterion, its levels named.",
                        levels=RubricLevels)
CapstoneAnswer = _like(Project, "Project", "The capstone stage's answer: project.yaml, its rubric "
                       "levels named one by one.", rubric=list[CriterionAnswer])  # type: ignore[valid-type]


def project(answer: Any, _inputs: Any) -> Project:
    """The capstone's answer as project.yaml: each criterion's levels a mapping again, in
    house-style order (the file format keeps the level names as keys)."""
    made: Project = Project.model_validate(answer.model_dump(mode="python", by_alias=True, exclude_none=True))
    return made
