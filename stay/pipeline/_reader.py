"""The run's course reader: a course's files as typed artefacts, and where each one lives.

One of the four collaborators a node handler works through (``stay.pipeline._run``).
Files are read and parsed by the one course reader the scorers and the viewer use too
(``stay.artefacts.CourseReader``: bounded reads, a file parsed again only when its
bytes changed); this adds what a run needs on top: its brief, the plans as last read,
and the layout of the curriculum on disk. It writes nothing: the
run tells it what it wrote (``wrote``), so what it remembers of the plans is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from stay.artefacts import Artefact, Brief, CourseReader, Curriculum, LessonPlan, artefact_type
from stay.pipeline._layout import CourseLayout


@dataclass
class RunReader:
    root: Path
    brief: Brief | None = None
    """The brief the run was given (a new course's, or course.yaml's)."""
    _files: CourseReader | None = field(default=None, repr=False)
    """The shared course reader (its parse cache), made on first read."""
    _plans: dict[str, LessonPlan] | None = field(default=None, repr=False)
    """Every plan, as last read; dropped whenever the run writes a plan or the curriculum."""
    _layout: CourseLayout | None = field(default=None, repr=False)

    def exists(self, path: str) -> bool:
        return (self.root / path).is_file()

    def load(self, path: str) -> Artefact:
        """A course file as its artefact, through the one course reader: parsed again
        only when its bytes changed."""
        if self._files is None:
            self._files = CourseReader(self.root)
        loaded: Artefact = self._files.load(path, artefact_type(path))
        return loaded

    def curriculum(self) -> Curriculum | None:
        if not self.exists("curriculum.yaml"):
            return None
        loaded = self.load("curriculum.yaml")
        assert isinstance(loaded, Curriculum)
        return loaded

    @property
    def layout(self) -> CourseLayout:
        curriculum = self.curriculum()
        if curriculum is None:
            return CourseLayout.empty()
        if self._layout is None or self._layout.curriculum is not curriculum:
            self._layout = CourseLayout(curriculum)
        return self._layout

    def plans(self) -> dict[str, LessonPlan]:
        """Every plan on disk, by lesson id (read again only after the run wrote one)."""
        if self._plans is not None:
            return self._plans
        found: dict[str, LessonPlan] = {}
        for place in self.layout.lessons():
            path = place.path("{lesson}.plan.yaml")
            if self.exists(path):
                plan = self.load(path)
                assert isinstance(plan, LessonPlan)
                found[place.id] = plan
        self._plans = found
        return found

    def wrote(self, paths: Iterable[str]) -> None:
        """The run wrote ``paths``: the plans are read again if one of them is a plan or
        the curriculum (the parse cache checks bytes itself)."""
        if any(path.endswith(".plan.yaml") or path == "curriculum.yaml" for path in paths):
            self._plans = None
