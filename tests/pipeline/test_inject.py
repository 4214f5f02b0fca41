"""Handlers receive their collaborators by naming them (``stay.pipeline._runner``): the
names are read once, when the table is built, and a name nothing provides is refused
there, every such problem at once."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from stay.artefacts import DEFAULT_LIMITS
from stay.errors import GraphError
from stay.models import OfflineBackend
from stay.pipeline._graph import assemble
from stay.pipeline._run import Run, RunConfig
from stay.pipeline._runner import FROM_NODE, FROM_RUN, HANDLERS, bind
from stay.pipeline._state import Sources
from stay.settings import Settings
from stay.stages import REGISTRY, Prompts

PIPELINE = assemble()
STAGE_NODE = next(name for name, attrs in PIPELINE.nodes(data=True) if attrs["kind"] == "stage")
GATE_NODE = next(name for name, attrs in PIPELINE.nodes(data=True) if attrs["gate"])


def _run(root: Path) -> Run:
    config = RunConfig(command="build", slug=root.name, root=root, courses_arg=str(root.parent), authors=(),
                       settings=Settings(), prompts=Prompts.load(), stages=REGISTRY, limits=DEFAULT_LIMITS,
                       sources=Sources(Prompts.load(), Settings().models))
    return Run.start(config, OfflineBackend(), lambda _line: None, None)


def test_a_name_nothing_provides_is_refused_when_the_table_is_built_every_one_at_once() -> None:
    def wants_the_run(run: Run) -> None: ...

    def misspelt(config: object, reporter: object) -> None: ...

    def no_stage_here(report: object, stage: object) -> None: ...

    with pytest.raises(GraphError) as caught:
        bind(PIPELINE, {"entry": wants_the_run, "intake": misspelt, GATE_NODE: no_stage_here})
    message = str(caught.value)
    assert "node entry: wants_the_run asks for 'run'" in message  # the whole context is not on offer
    assert "node intake: misspelt asks for 'reporter'" in message
    assert f"node {GATE_NODE}: no_stage_here asks for 'stage', but the node makes no stage's requests" in message


def test_each_handler_is_given_what_its_parameters_name_read_once(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    given: dict[str, Any] = {}

    def handler(config: object, report: object, walk: object, stage: object, node: object, name: str) -> str:
        given.update(config=config, report=report, walk=walk, stage=stage, node=node, name=name)
        return name

    table = bind(PIPELINE, {STAGE_NODE: handler})
    run = _run(tmp_path / "c")

    def no_more(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a handler's parameters are read when the table is built, not per call")

    monkeypatch.setattr(inspect, "signature", no_more)
    assert table[STAGE_NODE](run) == STAGE_NODE
    assert given["config"] is run.config and given["report"] is run.report and given["walk"] is run.walk
    assert given["node"] is PIPELINE.nodes[STAGE_NODE]
    assert given["stage"] is PIPELINE.graph["stages"][PIPELINE.nodes[STAGE_NODE]["stages"][0]]


def test_every_node_handler_names_only_collaborators_and_each_collaborator_is_used() -> None:
    """The shipped table: each handler asks for what it works through by name (none for
    the run as a whole), and nothing is offered that no handler asks for."""
    asked = {name: set(inspect.signature(HANDLERS[name].__wrapped__).parameters)  # type: ignore[attr-defined]
             for name in PIPELINE}
    offered = set(FROM_RUN) | set(FROM_NODE)
    assert all(names <= offered for names in asked.values()), asked
    assert set(FROM_RUN) <= set().union(*asked.values())
