"""The shape of an eval report, checked once when it is read, so a damaged or hand-edited report
is one line naming the field, never an AttributeError deep inside a comparison. Unnamed fields
are allowed: a newer stay may add what an older reader ignores."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError, model_validator

from stay.scoring._core import ItemResult

Count = Annotated[int, Field(ge=0, strict=True)]
Dollars = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ScorerResult(_Open):
    items: list[ItemResult]
    judge: str = ""
    unparseable: Count = 0
    errors: Count = 0
    cost: Dollars | None = None
    judged: bool = True
    not_judged: str | None = None


FAILURE_CHARS = 300
"""The longest failure message a report keeps: one line that names the error, never a log."""


class BuildFailure(BaseModel):
    """Why a build has no scores: the error's class name and its message, on one line."""

    model_config = ConfigDict(extra="forbid")

    error: Annotated[str, Field(min_length=1, max_length=100)]
    message: Annotated[str, Field(max_length=FAILURE_CHARS, pattern=r"^[^\n]*$")]


class BuildShape(_Open):
    epoch: StrictInt = 0
    # what the run checks key builds by: a list here would be an unhashable key there
    seed: StrictStr | StrictInt | None = None
    course_sha256: StrictStr | None = None
    scorers: dict[str, ScorerResult]
    built_with: dict[str, dict[str, str]] | None = None
    quality: dict[str, float] | None = None
    failed: BuildFailure | None = None
    judged_in: str | None = None
    built_in: str | None = None
    built_by: list[StrictStr] | None = None
    course: str | None = None

    @model_validator(mode="after")
    def _failed_has_no_scores(self) -> BuildShape:
        # a failed build's scores would be counted by every reader that ignores ``failed``
        if self.failed is not None and self.scorers:
            raise ValueError("a failed build has no scorers (its scores cannot be trusted)")
        return self


class BriefShape(_Open):
    builds: list[BuildShape]


class FailureCounts(_Open):
    items: Count | None = None
    unparseable: Count | None = None
    errors: Count | None = None


class PromptsShape(_Open):
    dir: str | None = None
    sha256: dict[str, str] | None = None
    mixed: dict[str, list[str]] | None = None
    source: str | None = None


class ReportShape(_Open):
    label: str
    backend: str
    judge: str
    judge_model: str | None = None
    scorers: dict[str, StrictInt]
    epochs: Count | None = None
    seed: int | str | None = None
    briefs: dict[str, BriefShape]
    quality: dict[str, float] | None = None
    models: dict[str, str] | None = None
    prompts: PromptsShape | None = None
    means: dict[str, float | None] | None = None
    failures: dict[str, FailureCounts] | None = None
    totals: dict[str, Dollars | Count | None] | None = None


def shape_problem(document: object) -> str | None:
    """The first field of ``document`` that breaks a report's shape, in words, or None."""
    try:
        ReportShape.model_validate(document)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the report"
        return f"field '{where}': {error['msg'].lower()}"
    return None


__all__ = ["FAILURE_CHARS", "BriefShape", "BuildFailure", "BuildShape", "PromptsShape", "ReportShape", "ScorerResult",
           "shape_problem"]
