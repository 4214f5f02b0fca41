"""Typed course artefacts: the course format as pydantic models, with their exact
on-disk form. Imports nothing else of stay's, so anything may import it."""

from __future__ import annotations

from stay.artefacts._io import (
    ArtefactLoadError,
    dump,
    dump_yaml,
    load,
    model_for,
    parse,
    to_data,
    validate_as,
    write,
    write_text_atomic,
)
from stay.artefacts._models import (
    Artefact,
    Assessment,
    Audience,
    BloomLevel,
    Brief,
    CourseManifest,
    Curriculum,
    Evidence,
    Exercise,
    Exercises,
    Glossary,
    GlossaryTerm,
    LessonContent,
    LessonEntry,
    LessonPlan,
    Method,
    Milestone,
    Module,
    NewTerm,
    Option,
    Outcome,
    Outcomes,
    Project,
    Quiz,
    QuizItem,
    RubricCriterion,
    Section,
    SectionKind,
    Status,
)

__all__ = [
    "Artefact", "ArtefactLoadError", "Assessment", "Audience", "BloomLevel", "Brief",
    "CourseManifest", "Curriculum", "Evidence", "Exercise", "Exercises", "Glossary",
    "GlossaryTerm", "LessonContent", "LessonEntry", "LessonPlan", "Method", "Milestone",
    "Module", "NewTerm", "Option", "Outcome", "Outcomes", "Project", "Quiz", "QuizItem",
    "RubricCriterion", "Section", "SectionKind", "Status", "dump", "dump_yaml", "load",
    "model_for", "parse", "to_data", "validate_as", "write", "write_text_atomic",
]
