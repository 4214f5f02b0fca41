"""The course reader: a course's files as typed artefacts, and where each one lives.

One of the four collaborators a node handler works through (``stay.pipeline._run``).
It keeps the parse cache (a file is parsed again only when its bytes changed), the
plans as last read, and the layout of the curriculum on disk. It writes nothing: the
run tells it what it wrote (``wrote``), so what it remembers of the plans is dropped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from stay.artefacts import Artefact, Brief, Curriculum, LessonPlan, artefact_type
from stay.artefacts._io import parse_bytes, read_bytes
from stay.pipeline._layout import CourseLayout


@dataclass
class CourseReader:
    root: Path
    brief: Brief | None = None
    """The brief the run was given (a new course's, or course.yaml's)."""
    _loaded: dict[str, tuple[bytes, Artefact]] = field(default_factory=dict, repr=False)
    """course file -> the bytes last parsed and what they parsed to"""
    _plans: dict[str, LessonPlan] | None = field(default=None, repr=False)
    """Every plan, as last read; dropped whenever the run writes a plan or the curriculum."""
    _layout: CourseLayout | None = field(default=None, repr=False)

    def exists(self, path: str) -> bool:
        return (self.root / path).is_file()

    def load(self, path: str) -> Artefact:
        """A course file as its artefact, parsed again only when its bytes changed. The
        bytes are read every time: a cache keyed on a file's time and size would miss a
        rewrite of the same size within one tick of the filesystem's clock."""
        file = self.root / path
        data = read_bytes(file)
        cached = self._loaded.get(path)
        if cached is not None and cached[0] == data:
            return cached[1]
        artefact: Artefact = parse_bytes(artefact_type(path), data, os.fspath(file))
        self._loaded[path] = (data, artefact)
        return artefact

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
