"""validator: defect counts per owner and checks run, from the validator; free.

A count, not an opinion: it costs nothing and is reproducible to the defect. Every
owner gets an item, clean ones included (a zero reads "measured, and clean"), and
so does the number of checks run, because a rule that stops running stops failing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from stay.scoring._core import CourseOnDisk, ItemResult, ScoreResult
from stay.validate import OWNERS, validate_course


@dataclass(frozen=True)
class Validator:
    strict: bool = True
    name: ClassVar[str] = "validator"

    def score(self, course: CourseOnDisk) -> ScoreResult:
        report = validate_course(course.root, strict=self.strict)
        counts = {owner: 0 for owner in OWNERS}
        for defect in report.defects:
            counts[defect.owner] += 1
        items = [ItemResult(item=f"owner {owner}", score=1.0 if n == 0 else 0.0,
                            reason=f"{n} defects") for owner, n in counts.items()]
        passed = sum(report.passed.values())
        items.append(ItemResult(item="checks run", score=passed / report.checks if report.checks else 0.0,
                                reason=f"{report.checks} checks, {passed} passed"))
        return ScoreResult.of(self.name, "validator (no model)", items)
