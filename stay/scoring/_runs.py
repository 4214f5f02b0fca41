"""Eval comparison from Python: ``stay.read_run`` and ``stay.compare_runs``, the two steps
``stay evals compare`` takes before it prints, writes pages and sets its exit code."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

from stay.errors import UsageError
from stay.scoring._compare import Comparison, compare
from stay.scoring._defaults import ALPHA, EFFECT, MAX_FAILED
from stay.scoring._report import read_report

Run = str | os.PathLike[str] | Mapping[str, Any]
"""A run to compare: the path of its report (what ``pytest evals/`` writes), or the report
``read_run`` returned."""


def read_run(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The eval report at ``path`` (``pytest evals/`` writes one, ``--stay-output PATH``), read
    bounded and checked against the report's shape; a file that is not one (missing,
    truncated, not UTF-8, another version) raises ``stay.UsageError`` in one line."""
    return read_report(path)


def _loaded(run: Run, name: str) -> tuple[dict[str, Any], str]:
    if isinstance(run, Mapping):
        return dict(run), name
    return read_run(run), os.fspath(run)


def compare_runs(baseline: Run, candidate: Run, *, alpha: float = ALPHA, allow: Collection[str] = (),
                 max_failed: float = MAX_FAILED, effect: float = EFFECT, permutations: int | None = None,
                 seed: int = 0, calibration: Run | None = None) -> Comparison:
    """Compare a candidate eval run with a baseline, per scorer, as ``stay evals compare``
    does: the difference with its 95% interval, Holm-adjusted one-sided p-values, the
    minimum detectable drop and a verdict; ``comparison.gate`` says whether a regression
    fires the gate (``comparison.regressions`` names the scorers). A notebook shows it as a
    table.

    ``baseline`` and ``candidate`` are report paths (messages then name the files) or
    reports ``read_run`` returned. ``allow`` names differences to accept (as ``--allow``:
    e.g. ``"judge_model"``); ``alpha``, ``max_failed`` and ``effect`` are fractions, as
    the command's options. Raises ``stay.UsageError`` (a ``RunsNotComparable`` for two
    runs that differ in what a comparison holds fixed) or ``InvalidRun`` (too many failed
    judge items to trust) rather than answer what the runs cannot. ``calibration`` is the judges'
    calibration (a path, or the report ``stay evals calibrate`` wrote; default: ``calibration.json``
    beside a candidate given by path): a model-judged scorer gates only on a kappa of at least 0.7."""
    from stay.scoring._calibrate import find_calibration, standings

    if not 0 < alpha < 1 or not 0 <= max_failed < 1 or not 0 < effect <= 1:
        raise UsageError(f"compare_runs(alpha={alpha!r}, max_failed={max_failed!r}, effect={effect!r}): alpha "
                         "must be between 0 and 1, max_failed at least 0 and below 1, and effect above 0 and "
                         "at most 1")
    (base, base_name), (cand, cand_name) = _loaded(baseline, "baseline"), _loaded(candidate, "candidate")
    if isinstance(calibration, Mapping):
        calibrated: dict[str, Any] | None = dict(calibration)
    else:
        _path, calibrated = find_calibration(None if calibration is None else os.fspath(calibration),
                                             None if isinstance(candidate, Mapping) else candidate)
    return compare(base, cand, alpha=alpha, allow=allow, max_failed=max_failed, effect=effect,
                   permutations=permutations, seed=seed, names=(base_name, cand_name),
                   standing=standings(base, cand, calibrated))


__all__ = ["Comparison", "Run", "compare_runs", "read_run"]
