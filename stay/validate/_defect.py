"""Defects and the vocabulary they are written in: severities and owners."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from stay.validate._text import quote


class Severity(StrEnum):
    """FAIL blocks; WARN marks what is valid mid-run, or advisory house style."""

    FAIL = "FAIL"
    WARN = "WARN"


Owner = Literal[
    "manifest", "audience", "curriculum", "outcomes", "assessment", "plan",
    "content", "exercises", "quiz", "capstone", "glossary",
]
"""The stage that must fix a defect. Repair routes on this, never on the path."""

OWNERS: tuple[Owner, ...] = (
    "manifest", "audience", "curriculum", "outcomes", "assessment", "plan",
    "content", "exercises", "quiz", "capstone", "glossary",
)


@dataclass(frozen=True, order=True, slots=True)
class Defect:
    """One rule firing on one subject. Ordered as reports list them: by path, code,
    subject, then message; every field, the message included, is part of equality."""

    path: str
    """Relative to the course directory, '/'-separated; for a missing file, where it belongs."""
    code: str
    subject: str
    """What inside the file; '-' for the whole file."""
    message: str
    severity: Severity
    owner: Owner

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "severity": str(self.severity), "owner": self.owner,
                "path": self.path, "subject": self.subject, "message": self.message}

    def line(self) -> str:
        """The defect as the text report prints it."""
        return f"{self.severity} {self.code} {self.path} {self.subject}: {self.message}"

    def quote(self, current: object) -> str:
        """What this defect names in ``current`` (its file as it stands: a lesson's body, or
        the file's data) as written there; '' when it names no place in it."""
        return quote(current, self.subject, self.message)
