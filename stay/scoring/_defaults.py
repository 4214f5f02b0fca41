"""The comparison's defaults, apart from the comparison itself: the command line's parser
names them in its help, and building the parser must not import the statistics."""

from __future__ import annotations

DEFAULT_EPOCHS = 10
"""Builds per brief and run (``pytest evals --stay-epochs``): here because ``stay evals plan``, beneath
the suite, reports the power at it. docs/evals.md, "Calibration", says why ten."""
ALPHA = 0.05
"""The family-wise error rate the gate holds (Holm over the scorers)."""
MAX_FAILED = 0.10
"""A run with a larger share of failed judge items per scorer is invalid."""
POWER = 0.80
EFFECT = 0.20
"""The smallest drop that matters, as a share of the baseline's mean (the calibration's degradation)."""
ALLOWABLE = ("judge", "judge-model", "backend", "scorers", "briefs", "models", "sessions", "uncalibrated")
"""What ``compare --allow`` can accept ("uncalibrated": a scorer whose judge may not gate gates anyway)."""
KAPPA_TO_GATE = 0.7
"""The kappa on the gold set a model judge needs before its scorer may gate: "substantial" agreement;
below it a drop in its scorer may be the judge's noise."""
FAILURE_GAP = MAX_FAILED / 2
"""Judge-failure shares further apart than this between two runs are warned on: a run just inside
``MAX_FAILED`` against a clean one is named."""
GOLD_DIR = "evals/gold"  # stay evals calibrate's gold set: a <judge>.yaml per judge
CALIBRATION = "evals/out/calibration.json"
