"""Test support, kept out of the product: the offline backend rigged for tests and the
fault it raises. ``docs/models.md`` lists the knobs.

``RiggedBackend`` answers as ``stay.models.OfflineBackend`` does (it is a subclass) and
adds what only a test, a benchmark or the evals harness uses: per-stage call counts,
in-flight gauges, latency, injected faults (``InjectedFault``), defects the validator
fires on (``DEFECTS``), a moderation flag, and quality knobs it cannot see
(``QUALITY_KNOBS``); ``ScriptedJudge`` answers judge requests as a test scripts them.
Nothing in stay imports this package except the evals suite
(``stay.suite``), whose offline runs turn the quality knobs.
"""

from __future__ import annotations

from stay.testing._backend import DEFECTS, InjectedFault, RiggedBackend
from stay.testing._judge import ScriptedJudge
from stay.testing._quality import QUALITY_KNOBS

__all__ = ["DEFECTS", "QUALITY_KNOBS", "InjectedFault", "RiggedBackend", "ScriptedJudge"]
