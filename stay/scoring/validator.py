"""validator: defect counts per owner and checks run, from the validator; free and reproducible.
Every owner gets an item, clean ones included, and so do the checks run: a rule that stops running
stops failing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from stay.scoring._core import CourseOnDisk, ItemResult, ScoreResult, content_hash, scorer
from stay.validate import OWNERS, validate_course

JUDGE = "validator (no model)"


@scorer("validator", judged="course")
@dataclass(frozen=True)
class Validator:
    strict: bool = True
    data_dir: Path | None = None
    """The house style the course is held to (None: the validator's default)."""
    name: ClassVar[str]
    version: ClassVar[int] = 1

    def score(self, course: CourseOnDisk) -> ScoreResult:
        report = validate_course(course.root, strict=self.strict, data_dir=self.data_dir)
        counts = {owner: 0 for owner in OWNERS}
        for defect in report.defects:
            counts[defect.owner] += 1

        def item(name: str, score: float, reason: str) -> ItemResult:
            # what was "judged" is the whole course: its content is the course's hash
            return ItemResult(item=name, content=content_hash({"course": course.sha256, "item": name}),
                              score=score, reason=reason)

        items = [item(f"owner {owner}", 1.0 if n == 0 else 0.0, f"{n} defects") for owner, n in counts.items()]
        passed = sum(report.passed.values())
        items.append(item("checks run", passed / report.checks if report.checks else 0.0,
                          f"{report.checks} checks, {passed} passed"))
        return ScoreResult.of(self.name, JUDGE, items, version=self.version)
