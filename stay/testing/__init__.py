"""Test support, kept out of the product: the offline backend rigged for tests (faults, defects,
quality knobs; ``docs/models.md`` lists them) and judges that are test doubles. Nothing in stay
imports it but the evals suite (``stay.suite``), whose offline runs turn the quality knobs."""

from __future__ import annotations

from stay.testing._backend import DEFECTS, QUALITY_KNOBS, InjectedFault, RiggedBackend
from stay.testing._heuristic_judge import ScriptedJudge, heuristic_judge

__all__ = ["DEFECTS", "QUALITY_KNOBS", "InjectedFault", "RiggedBackend", "ScriptedJudge", "heuristic_judge"]
