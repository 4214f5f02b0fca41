"""The two data files a stage is told and the validator checks against, kept one.

bloom-verbs.yaml and house-style.yaml are reference documents (a stage reads them from
the prompts directory) and the validator's data (read from the data directory). A
prompts directory copied and edited apart from the data would have a stage told one
verb table and checked against another, unseen; so a run whose two copies differ says
so and refuses, unless told which wins (``Settings.data_from``, ``--data-from``):

- ``data``: the stage is sent the data directory's file, the one it is checked against;
- ``prompts``: the run is checked against the prompts directory's (its reference/ is
  the run's data directory).

Every command that sends a stage the prompts or checks against the data starts from
``reconciled_settings``: build, revise, replay, batch, estimate, approve, status, adopt,
and the evals suite (``stay.suite``), so none prices, checks or scores with one copy
while a build uses the other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from stay._bounds import TooLarge, read_bounded
from stay.errors import UsageError
from stay.settings import Settings
from stay.stages import REGISTRY, Prompts, Stage

SHARED = ("bloom-verbs.yaml", "house-style.yaml")
"""The validator's data files (``stay.validate``'s BLOOM_FILE and HOUSE_FILE, held equal in
tests/pipeline/test_shared_data.py), which the prompts' reference/ holds copies of."""


def _text(path: Path) -> str | None:
    try:
        return read_bounded(path).decode("utf-8")
    except (OSError, UnicodeDecodeError, TooLarge):
        return None  # unreadable data is the validator's to report (DataError), not a drift


def reconciled(prompts: Prompts, settings: Settings, flag: str = "--data-from") -> tuple[Prompts, Settings]:
    """``prompts`` and ``settings`` as the run uses them: unchanged when both copies of
    each shared file are the same; else as ``settings.data_from`` says, or a UsageError
    with a line per differing file naming both files and ``flag`` (the option that sets
    ``data_from`` where the caller is driven from: the evals suite's is its own)."""
    data_dir = settings.resolved_data_dir()
    theirs = {name: _text(data_dir / name) for name in SHARED if name in prompts.references}
    differ = {name: text for name, text in theirs.items() if text is not None and text != prompts.references[name]}
    if not differ:
        return prompts, settings
    if settings.data_from is None:
        raise UsageError("\n".join(
            f"{prompts.directory}/reference/{name} differs from {data_dir / name}, which the validator checks "
            f"against: make them the same, or say which wins with {flag} data (send the stage the data's) "
            f"or {flag} prompts (check against the prompts')" for name in differ))
    if settings.data_from == "prompts":
        return prompts, dataclasses.replace(settings, data_dir=Path(prompts.directory) / "reference")
    for name, text in differ.items():
        prompts = prompts.with_reference(name, text)
    return prompts, settings


def reconciled_prompts(settings: Settings, stages: Sequence[Stage] | None = None,
                       flag: str = "--data-from") -> Prompts:
    """The prompts a run with ``settings`` sends (``reconciled``): when the data's copy of a
    shared file wins, it is the one in them, so their hashes are those of what was sent."""
    chosen = REGISTRY if stages is None else tuple(stages)
    return reconciled(Prompts.load(settings.prompts_dir, chosen), settings, flag)[0]


def reconciled_settings(settings: Settings, stages: Sequence[Stage] | None = None,
                        flag: str = "--data-from") -> Settings:
    """``settings`` as a run with them uses them (``reconciled``; ``stages``: None for
    ``stay.stages.REGISTRY``): for a command that reads the data directory outside the
    pipeline's walk, so it reads the copy a build would."""
    chosen = REGISTRY if stages is None else tuple(stages)
    return reconciled(Prompts.load(settings.prompts_dir, chosen), settings, flag)[1]
