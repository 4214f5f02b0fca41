"""The layers hold: every import of stay/ points down the one declaration of the layering
(``tools/layers.py``, which ``tools/metrics.py`` prints the same figures from).

Function-level imports count as much as module-level ones (a lazy import is still a
dependency), and so does an import under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tools.layers import (
    APART,
    LAYERS,
    Import,
    beneath,
    breaking_imports,
    cycles,
    import_graph,
    layer_breaks,
    private_reach_ins,
    undeclared,
)

STAY = ROOT / "stay"


@pytest.fixture(scope="module")
def graph() -> list[Import]:
    """stay's import graph, parsed when a test asks (not while every worker collects)."""
    return import_graph(ROOT)


def _where(found: list[Import]) -> list[str]:
    return [f"{i.importer}:{i.line} imports {i.imported}" for i in found]


def test_every_unit_of_stay_has_its_place_in_the_layers() -> None:
    """A new package or top-level module is placed, and a retired one leaves the table."""
    assert undeclared(ROOT) == ([], [])


def test_no_import_breaks_the_layers(graph: list[Import]) -> None:
    assert _where(breaking_imports(graph)) == []


def test_no_two_units_import_each_other_round_about(graph: list[Import]) -> None:
    assert cycles(graph) == []


def test_no_module_reaches_into_another_packages_private_modules(graph: list[Import]) -> None:
    """What another package needs from one is in that package's ``__init__``."""
    assert _where(private_reach_ins(graph)) == []


@pytest.mark.parametrize("unit, never", [
    ("stay.stages", {"stay.models", "stay.pipeline"}),  # the stages never import a backend
    ("stay.validate", {"stay.pipeline", "stay.models", "stay.artefacts", "stay.stages"}),
    ("stay.models", {"stay.pipeline", "stay.stages"}),
    ("stay.pipeline", {"stay", "stay.cli", "stay.suite", "stay.scoring", "stay.view"}),
    ("stay.view", {"stay.cli", "stay.suite", "stay.scoring"}),
    ("stay.settings", {"stay.validate", "stay.models", "stay.artefacts", "stay.requests"}),
])
def test_the_layers_say_what_the_brief_says(unit: str, never: set[str]) -> None:
    """The stated layering, held against the declaration, so loosening it is a visible change."""
    assert beneath()[unit] & never == set()


def test_the_artefacts_stand_on_the_errors_and_the_leaf_readers_alone() -> None:
    # and the two leaves every write goes through: the walk without links, and redaction
    assert beneath()["stay.artefacts"] == {"stay._bounds", "stay._display", "stay._duration",
                                           "stay._paths", "stay._secrets", "stay.errors"}
    assert beneath()["stay._display"] == set()  # a leaf: what the artefacts may draw with imports nothing of ours


def test_the_suite_stands_on_the_pipeline_and_the_scorers_and_nothing_stands_on_the_command_line() -> None:
    assert {"stay.pipeline", "stay.scoring"} <= beneath()["stay.suite"]
    # but ``python -m stay``, which is the command line by another door
    assert [unit for unit, below in beneath().items() if "stay.cli" in below] == ["stay.__main__"]


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"stay/__init__.py": "", "stay/errors.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


TOY = {"stay": frozenset({"stay.pipeline"}), "stay.pipeline": frozenset({"stay.artefacts"}),
       "stay.artefacts": frozenset({"stay.errors"}), "stay.errors": frozenset()}


def test_an_import_inside_a_function_or_under_type_checking_is_a_dependency(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "stay/pipeline/__init__.py": "from stay.artefacts import x\n",
        "stay/pipeline/_run.py": "def later():\n    import stay\n",
        "stay/artefacts/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from stay.pipeline import _run\n",
    })
    graph = import_graph(root)
    assert layer_breaks(graph, TOY) == [("stay.artefacts", "stay.pipeline"), ("stay.pipeline", "stay")]
    assert cycles(graph) == [["stay.artefacts", "stay.pipeline"]]
    assert _where(private_reach_ins(graph)) == ["stay.artefacts:3 imports stay.pipeline._run"]
    assert [i.in_function for i in graph if i.importer == "stay.pipeline._run"] == [True]


@pytest.mark.parametrize(("importer", "kept"), [(u, k) for u, apart in APART.items() for k in sorted(apart)])
def test_a_unit_kept_apart_is_refused_though_the_layers_put_it_beneath(tmp_path: Path, importer: str,
                                                                        kept: str) -> None:
    """The scorers stand on the viewer, which stands on the pipeline, yet never import it:
    not at the top, not in a function, not under TYPE_CHECKING."""
    assert kept in beneath()[importer]  # allowed by the layers alone: only APART refuses it
    package = importer.replace(".", "/")
    root = _tree(tmp_path, {f"{package}/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                                      f"    import {kept}\n",
                            f"{package}/_late.py": f"def later():\n    from {kept} import x\n"})
    assert _where(breaking_imports(import_graph(root))) == [f"{importer}:3 imports {kept}",
                                                            f"{importer}._late:2 imports {kept}"]


def test_a_unit_the_layers_leave_out_breaks_them_with_every_import(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"stay/extra.py": "from stay import errors\n", "stay/artefacts/__init__.py": ""})
    assert undeclared(root, TOY) == (["stay.extra"], ["stay.pipeline"])
    assert layer_breaks(import_graph(root), TOY) == [("stay.extra", "stay.errors")]


def test_layers_that_go_round_are_refused() -> None:
    with pytest.raises(ValueError, match="go round"):
        beneath({**LAYERS, "stay.errors": frozenset({"stay.cli"})})


def test_only_settings_reads_the_environment() -> None:
    readers = []
    for path in sorted(STAY.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and \
                    isinstance(node.value, ast.Name) and node.value.id == "os":
                readers.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    assert sorted(set(readers)) == ["stay.settings"]
