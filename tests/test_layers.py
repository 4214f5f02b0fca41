"""The layers hold: imports point one way, enforced by reading every import of stay/.

Function-level imports count as much as module-level ones (a lazy import is still a
dependency), and so does an import under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

STAY = ROOT / "stay"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every stay module ``path`` imports (``from stay import x`` counts as stay.x)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("stay")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("stay"):
            found.add(node.module)
            if node.module == "stay":
                found |= {f"stay.{alias.name}" for alias in node.names}
    return found


GRAPH = {_module(path): _imports(path) for path in sorted(STAY.rglob("*.py"))}


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _from(package: str) -> dict[str, set[str]]:
    return {module: imports for module, imports in GRAPH.items() if _package(module) == package}


@pytest.mark.parametrize("package, forbidden", [
    ("stay.validate", {"stay.pipeline", "stay.models", "stay.stages", "stay.scoring", "stay.suite", "stay.view",
                       "stay.cli", "stay.artefacts", "stay.requests", "stay.briefs"}),
    ("stay.stages", {"stay.models", "stay.pipeline", "stay.scoring", "stay.suite", "stay.view", "stay.cli"}),
    ("stay.models", {"stay.pipeline", "stay.stages", "stay.scoring", "stay.suite", "stay.view", "stay.cli"}),
    ("stay.pipeline", {"stay.cli", "stay.scoring", "stay.suite", "stay.view"}),
    ("stay.scoring", {"stay.pipeline", "stay.suite", "stay.cli"}),
    ("stay.view", {"stay.cli", "stay.suite"}),
    ("stay.requests", {"stay.models", "stay.stages", "stay.pipeline", "stay.artefacts", "stay.validate"}),
    ("stay.settings", {"stay.models", "stay.stages", "stay.pipeline", "stay.artefacts", "stay.requests",
                       "stay.scoring"}),
])
def test_a_package_never_imports_what_sits_above_it(package: str, forbidden: set[str]) -> None:
    modules = _from(package)
    assert modules, package
    crossing = sorted((module, imported) for module, imports in modules.items() for imported in imports
                      if _package(imported) in forbidden)
    assert crossing == []


def test_the_artefact_models_import_nothing_of_stays_but_errors() -> None:
    """And the bounds on reading, which import nothing of stay's but errors (the next test)."""
    crossing = sorted((module, imported) for module, imports in _from("stay.artefacts").items()
                      for imported in imports
                      if _package(imported) not in ("stay.artefacts", "stay.errors", "stay._bounds"))
    assert crossing == []


def test_the_bounds_on_reading_import_nothing_of_stays_but_errors() -> None:
    """The artefacts and the validator (which may not import each other) share them; the
    size limit is the stored files' (stay._stored, stdlib only), declared once."""
    assert GRAPH["stay._bounds"] == {"stay.errors", "stay._stored"}
    assert GRAPH["stay._stored"] == {"stay.errors"}


def test_the_errors_import_nothing_of_stays() -> None:
    assert GRAPH["stay.errors"] == set()


def test_the_command_line_uses_other_packages_public_names_only() -> None:
    private = sorted(imported for imported in GRAPH["stay.cli"]
                     if any(part.startswith("_") for part in imported.split(".")[2:]))
    assert private == []


def test_only_settings_reads_the_environment() -> None:
    readers = []
    for path in sorted(STAY.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and \
                    isinstance(node.value, ast.Name) and node.value.id == "os":
                readers.append(_module(path))
    assert sorted(set(readers)) == ["stay.settings"]
