"""The comparison's defaults, apart from the comparison itself: the command line's parser
names them in its help, and building the parser must not import the statistics."""

from __future__ import annotations

DEFAULT_EPOCHS = 10
"""Builds per brief and run (``pytest evals --stay-epochs``; ``stay.suite`` re-exports it).
Here, not in the suite, because ``stay evals plan`` (a layer beneath the suite) reports the
power at it. At ten the calibration benchmark (``benchmarks/evals_calibration.py``) puts
the one-sided gate's power at a 20% degradation at or above 0.8 for every scorer of 36 or
more items a run at build ICC up to 0.15 but consistency (0.79 at 0.15: about 12 epochs),
with a false-positive rate at most 0.05 (docs/evals.md, "Calibration", quotes the table
and the epochs the small scorers need). CI runs the offline suite with
``--stay-epochs 2``: it proves the plumbing, not the power."""
ALPHA = 0.05
"""The family-wise error rate the gate holds (Holm over the scorers)."""
MAX_FAILED = 0.10
"""A run with a larger share of failed judge items per scorer is invalid."""
POWER = 0.80
EFFECT = 0.20
"""The smallest drop that matters, as a share of the baseline's mean: a fifth of the items
that passed now fail (the degradation the calibration benchmark is run at)."""
ALLOWABLE = ("judge", "judge-model", "backend", "scorers", "briefs", "models", "sessions", "uncalibrated")
"""The differences between two runs ``compare --allow`` can accept ("uncalibrated": a scorer whose
judge is not calibrated, or is below ``KAPPA_TO_GATE``, gates anyway)."""
KAPPA_TO_GATE = 0.7
"""The Cohen's kappa a model-judged scorer's judge needs on the gold set (``stay evals
calibrate``) before the scorer may gate: below it, or uncalibrated, its row keeps its verdict
but leaves the Holm family. 0.7 is "substantial" agreement on the usual scale; a judge below it
disagrees with the labels on enough items that a drop in its scorer may be the judge's noise."""
FAILURE_GAP = MAX_FAILED / 2
"""Judge-failure shares (per scorer) further apart than this between two runs are warned
on: half ``MAX_FAILED``, so a run just inside the limit against a clean one is named."""
GOLD_DIR = "evals/gold"
"""Where ``stay evals calibrate`` reads the gold set (``--gold``): a ``<judge>.yaml`` per judge."""
CALIBRATION = "evals/out/calibration.json"
"""Where it writes its report (``--output``); ``compare`` reads ``calibration.json`` beside the
candidate's report when not given ``--calibration``."""
