"""What a build is expected to do, derived from the stage registry and the course's
curriculum, never a count written out: the calls each stage makes, the wave's tasks and
the files a fresh build writes. A stage added to the registry changes these figures and
no test that uses them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from stay.artefacts import FILES, Curriculum, load
from stay.pipeline import graph
from stay.stages import REGISTRY, Phase, Stage

OFFLINE: tuple[Stage, ...] = tuple(stage for stage in REGISTRY if stage.phase != "review")
"""The stages an offline build runs: all but the review, which needs a model to read a lesson."""


LESSON_WRITERS = tuple(stage.name for stage in REGISTRY if (stage.phase, stage.scope) == ("wave", "lesson"))
"""The stages that write a lesson's files in the wave: a lesson's calls, side by side."""


def curriculum_of(course: Path) -> Curriculum:
    return load(course / "curriculum.yaml", Curriculum)


def calls(curriculum: Curriculum, stages: Sequence[Stage] = OFFLINE,
          phases: tuple[Phase, ...] = ("design", "plan", "wave", "review")) -> dict[str, int]:
    """stage -> the model calls a fresh build makes for it: one for a course-scope stage,
    one per module or per lesson for the others (``REGISTRY``: a model build's, which reviews)."""
    per_scope = {"course": 1, "module": len(curriculum.modules),
                 "lesson": sum(len(module.lessons) for module in curriculum.modules)}
    return {stage.name: per_scope[stage.scope] for stage in stages if stage.phase in phases}


def total_calls(curriculum: Curriculum, stages: Sequence[Stage] = OFFLINE,
                phases: tuple[Phase, ...] = ("design", "plan", "wave", "review")) -> int:
    return sum(calls(curriculum, stages, phases).values())


def wave_tasks(curriculum: Curriculum, stages: Sequence[Stage] = REGISTRY) -> int:
    """The wave's tasks, as progress counts them: one per lesson, and one per course-scope
    wave stage (the capstone)."""
    lessons = sum(len(module.lessons) for module in curriculum.modules)
    return lessons + sum(stage.phase == "wave" and stage.scope == "course" for stage in stages)


def files_written(course: Path, stages: Sequence[Stage] = OFFLINE) -> int:
    """The files a fresh build of ``course`` with both gates auto-approved writes: each
    stage's (one per lesson for module and lesson scope), each file written from a stage's
    file (``Artefact.derived``: example.yaml's data files, as it stands on disk), every course
    file no stage makes (the manifest, the glossary), and under .state/ a page per gate and
    the gate record."""
    curriculum = curriculum_of(course)
    derived = sum(len(load(course / stage.output).derived()) for stage in stages
                  if stage.scope == "course" and (course / stage.output).is_file())
    lessons = sum(len(module.lessons) for module in curriculum.modules)
    made = sum(1 if stage.scope == "course" else lessons for stage in stages)
    outputs = {stage.output for stage in stages}
    # stay's own kinds only: a test's toy kind declares its FILE into the same table
    mechanical = [path for path, kind in FILES.items()
                  if kind.__module__.startswith("stay.") and "{lesson}" not in path and path not in outputs]
    gates = [node for node, attrs in graph().nodes(data=True) if attrs["kind"] == "gate-summary"]
    return made + derived + len(mechanical) + len(gates) + 1


def artefacts_of(course: Path) -> list[str]:
    """Every artefact a course's status lists: its files but the manifest, which lists them,
    and what lies under a dot directory (.state, .runs)."""
    files = (p.relative_to(course) for p in course.rglob("*") if p.is_file())
    return sorted(path.as_posix() for path in files
                  if path.as_posix() != "course.yaml" and not any(part.startswith(".") for part in path.parts))
