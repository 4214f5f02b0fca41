"""The exceptions stay raises on purpose. Each message says what went wrong, where,
and how to fix it, in one line, so the command line can print it as it is.

    StayError
    ├── UsageError          a command or call was given something it cannot use
    │   ├── CoursePathError a course path that does not exist or is not a directory
    │   └── DataFileError   bloom-verbs.yaml or house-style.yaml missing or malformed
    ├── ArtefactError       a course file that cannot be read as its artefact
    ├── AnswerError         a model's answer that does not fit the stage's schema
    ├── ModelError          the model API failed: overloaded, rate limited, unreachable, refused
    │   ├── TruncationError the answer was cut off at max_tokens
    │   ├── RefusalError    the model refused to answer
    │   └── ReplayMiss      a replayed run met a request it has no recorded answer for
    └── PipelineError       the pipeline refused to go on (a gate, a guard, a missing file)
"""

from __future__ import annotations

__all__ = [
    "AnswerError", "ArtefactError", "CoursePathError", "DataFileError", "ModelError", "PipelineError",
    "RefusalError", "ReplayMiss", "StayError", "TruncationError", "UsageError",
]


class StayError(Exception):
    """Base class of every error stay raises on purpose."""


class UsageError(StayError):
    """A command or call was given something it cannot use (exit code 2)."""


class CoursePathError(UsageError):
    """A path given to the validator does not exist, is not a directory, or cannot be read."""


class DataFileError(UsageError):
    """A validator data file is missing, unreadable, or lacks a key the rules read."""


class ArtefactError(StayError):
    """A course file cannot be loaded as its artefact: the message names file and field."""


class AnswerError(StayError):
    """A model's answer does not fit the stage's schema: names the stage, file and field.
    ``raw`` keeps the answer's text, when there was one, for whoever has to read it."""

    def __init__(self, message: str, *, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


class PipelineError(StayError):
    """The pipeline refused to go on: names what blocked it and the command that unblocks it."""


class ModelError(StayError):
    """The model API failed after its retries: the message names the stage and what to do."""


class TruncationError(ModelError):
    """An answer was cut off at max_tokens: incomplete, not malformed."""


class RefusalError(ModelError):
    """The model refused; the message carries the refusal's category and explanation."""


class ReplayMiss(ModelError):
    """A replayed run needed an answer the request cache does not hold."""
