"""Answer shapes that are not artefacts themselves."""

from __future__ import annotations

from pydantic import Field

from stay.artefacts import Artefact, LessonPlan


class ModulePlans(Artefact):
    """One planning call's answer: every lesson plan of one module, in curriculum order."""

    plans: list[LessonPlan]


class LessonBody(Artefact):
    """The content stage's answer: the lesson's Markdown after its front matter."""

    body: str = Field(description="Starts with '# <plan title>', then one '## <heading>' per plan "
                                  "section in order, each followed by its prose.")
