"""Answer shapes that are not artefacts themselves."""

from __future__ import annotations

from pydantic import Field

from stay.artefacts import Artefact, PlanCore, RunningExample, Text


class PlannedLesson(PlanCore):
    """One lesson's plan as the planning call writes it: the plan's fields, and the facts
    of its worked example, which the answer must give (on disk they are optional)."""

    example_facts: list[Text] = Field(
        min_length=1, description="The facts this lesson's worked example uses, within the module's running "
                                  "example: who does what, with which exact data. The lesson, its exercises "
                                  "and its quiz are written from them.")


class ModulePlans(Artefact):
    """One planning call's answer: the module's running example, once, and every lesson
    plan of the module, in curriculum order. The stage copies the running example into
    every plan, so each writer of the module's lessons sees the same one."""

    running_example: RunningExample = Field(
        description="The one case every lesson of this module works on, set in the learners' workplace.")
    plans: list[PlannedLesson]


class LessonBody(Artefact):
    """The content stage's answer: the lesson's Markdown after its front matter."""

    body: str = Field(description="Starts with '# <plan title>', then one '## <heading>' per plan "
                                  "section in order, each followed by its prose.")
