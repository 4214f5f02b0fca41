"""The run's artefact cache (``Run.load``) against the slow path (``stay.artefacts.load``):
whatever sequence of rewrites a course file goes through, the same size and the same
clock tick included, the run sees what a fresh read sees, errors and all."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stay.artefacts import ArtefactLoadError, load
from stay.briefs import DEFAULT_LIMITS
from stay.models import OfflineBackend
from stay.pipeline._ledger import Sources
from stay.pipeline._run import Run, RunConfig
from stay.settings import Settings
from stay.stages import REGISTRY, Prompts
from tests.conftest import SAMPLE

GLOSSARY = (SAMPLE / "glossary.yaml").read_text(encoding="utf-8")
LETTERS = st.sampled_from("abcdefghij")


def _run(root: Path) -> Run:
    config = RunConfig(command="build", slug=root.name, root=root, courses_arg=str(root.parent), authors=(),
                       settings=Settings(), prompts=Prompts.load(), stages=REGISTRY, limits=DEFAULT_LIMITS,
                       sources=Sources(Prompts.load(), Settings().models))
    return Run(config, backend=OfflineBackend(), progress=lambda _line: None, brief=None)


def _variant(letter: str) -> str:
    """The sample's glossary with one letter of its first definition changed: another
    artefact of exactly the same size."""
    head, rest = GLOSSARY.split("definition: ", 1)
    return f"{head}definition: {letter}{rest[1:]}"


_outcomes = st.one_of(LETTERS.map(_variant), st.just("terms: [unclosed\n"), st.just("\ufeff\x00"),
                      st.just(None))


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(_outcomes, min_size=1, max_size=6))
def test_the_cache_sees_every_rewrite_as_a_fresh_read_does(tmp_path_factory: pytest.TempPathFactory,
                                                          steps: list[str | None]) -> None:
    root = tmp_path_factory.mktemp("course") / "c"
    root.mkdir()
    run = _run(root)
    target = root / "glossary.yaml"
    tick = 1_700_000_000_000_000_000
    for text in steps:
        if text is None:
            target.unlink(missing_ok=True)
        else:
            target.write_bytes(text.encode("utf-8"))
            os.utime(target, ns=(tick, tick))  # every version in the same clock tick
        try:
            expected: object = load(target)
        except ArtefactLoadError as exc:
            expected = ("error", str(exc))
        try:
            seen: object = run.load("glossary.yaml")
        except ArtefactLoadError as exc:
            seen = ("error", str(exc))
        assert seen == expected


def test_an_unchanged_file_is_parsed_once(tmp_path: Path) -> None:
    root = tmp_path / "c"
    shutil.copytree(SAMPLE, root)
    run = _run(root)
    assert run.load("glossary.yaml") is run.load("glossary.yaml")
