"""stay's layering, declared once, and the import graph it is checked against.

Read with the standard library's ``ast`` alone (nothing of stay's is imported, so a tree
that does not import cleanly is still measured). Every import counts: at the top of a
module, inside a function (a lazy import is still a dependency) and under
``TYPE_CHECKING``. ``tests/test_layers.py`` holds the figures below at 0 and
``tools/metrics.py`` prints them, for this tree or another.

A *unit* is one of stay's packages (``stay.pipeline``) or top-level modules
(``stay.settings``, ``stay._bounds``); ``stay`` itself is its ``__init__``. An import of
``stay.x.y`` is an edge from the importing unit to ``stay.x``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Each unit and the units it stands on: it may import those and, through them, everything
# beneath them, and nothing else. The stated layering, top first: the command line and
# the public names; the evals suite above the scorers and the pipeline; the pipeline over
# the stages, the models, the validator and the artefacts. The stages never reach a
# backend (stay.models), the validator never reaches the pipeline, a model or the
# artefacts, and the artefacts reach nothing of ours but the errors, the leaf
# reader (stay._bounds), the leaf that draws notebook tables
# (stay._display: html and re alone, so a Brief shows itself wherever it is made), and
# the two leaves every write goes through (stay._paths: the walk from the course root
# without following a link; stay._secrets: the redaction of what is written).
LAYERS: Mapping[str, frozenset[str]] = {name: frozenset(under) for name, under in {
    "stay.__main__": {"stay.cli"},  # ``python -m stay``: the program, nothing of its own
    "stay.cli": {"stay", "stay.suite", "stay._watch", "stay._init"},  # the parser, the handlers, the exit codes
    "stay._watch": {"stay.validate", "stay.artefacts", "stay._words"},  # stay watch: validation as you save
    "stay._init": {"stay.artefacts", "stay._words"},  # stay init and the packaged example briefs
    "stay": {"stay.pipeline", "stay.validate", "stay.scoring", "stay._lazy"},  # the public names (scoring:
    # compare_runs and read_run, eval comparison from Python)
    "stay.suite": {"stay.scoring", "stay.testing"},  # builds courses and scores them
    "stay.testing": {"stay.models", "stay.stages", "stay.scoring"},  # test support: a rigged backend, judge doubles
    "stay.scoring": {"stay.view"},  # writes its report pages with the viewer's templates
    "stay.view": {"stay.pipeline", "stay._lazy"},  # shows a course, its validation and its gates
    "stay.pipeline": {"stay.stages", "stay.models", "stay._lock", "stay._display", "stay._version",
                      "stay._words"},
    "stay.stages": {"stay.artefacts", "stay.validate", "stay.requests", "stay._words"},
    "stay.models": {"stay.briefs", "stay.requests", "stay._secrets", "stay._lazy"},
    "stay.briefs": {"stay.artefacts", "stay.validate"},
    "stay.requests": {"stay.settings"},
    "stay.validate": {"stay.settings", "stay._display", "stay._bounds", "stay._paths", "stay._duration", "stay._lazy"},
    "stay.settings": {"stay._secrets", "stay.errors", "stay._version"},  # the only reader of the environment
    "stay._lock": {"stay._paths", "stay.artefacts"},
    # _display: a leaf (html, re), for Brief's tables
    "stay.artefacts": {"stay._bounds", "stay._display", "stay._duration", "stay._paths", "stay._secrets"},
    "stay._duration": {"stay.errors"},  # a brief's minutes and house style's time bounds, without pydantic
    "stay._bounds": {"stay.errors"},  # the bounded readers of course files and stored JSON
    "stay._paths": {"stay.errors"},
    "stay._display": set(),
    "stay._lazy": set(),
    "stay._secrets": set(),
    "stay._version": set(),
    "stay._words": set(),  # "did you mean": the CLI's parser and the pipeline's refusals
    "stay.errors": set(),
}.items()}


APART: Mapping[str, frozenset[str]] = {"stay.scoring": frozenset({"stay.pipeline"})}
"""Units a unit never imports, though the layers put them beneath it. The scorers judge a
course on disk, whoever built it, through the artefacts; they stand on the viewer for its
templates alone, never on the pipeline the viewer derives a course's statuses with."""


@dataclass(frozen=True)
class Import:
    """One imported stay module, where it is imported."""

    importer: str  # the importing module, dotted
    imported: str  # the imported module (or package), dotted
    line: int
    in_function: bool


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def _is_module(root: Path, dotted: str) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _walk(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        yield child, in_function
        yield from _walk(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))


def imports_of(root: Path, path: Path) -> list[Import]:
    """Every stay module ``path`` imports; ``from stay.x import y`` is ``stay.x.y`` when y
    is a module, else ``stay.x``."""
    importer = module_name(root, path)
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    found: list[Import] = []
    for node, in_function in _walk(ast.parse(path.read_text(encoding="utf-8")), False):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                targets.append(whole if _is_module(root, whole) else base)
        found += [Import(importer, target, getattr(node, "lineno", 0), in_function)
                  for target in dict.fromkeys(targets) if target == "stay" or target.startswith("stay.")]
    return found


def import_graph(root: Path) -> list[Import]:
    """Every import of stay's modules under ``root/stay``, in file order."""
    return [found for path in sorted((root / "stay").rglob("*.py")) for found in imports_of(root, path)]


def beneath(layers: Mapping[str, frozenset[str]] = LAYERS) -> dict[str, set[str]]:
    """Each declared unit and every unit it may import: what it stands on, and beneath that."""
    below: dict[str, set[str]] = {}

    def reach(name: str, seen: tuple[str, ...]) -> set[str]:
        if name in seen:
            raise ValueError("the layers go round: " + " -> ".join((*seen, name)))
        if name not in below:
            below[name] = set()
            for under in layers.get(name, frozenset()):
                below[name] |= {under} | reach(under, (*seen, name))
        return below[name]

    for name in layers:
        reach(name, ())
    return below


def undeclared(root: Path, layers: Mapping[str, frozenset[str]] = LAYERS) -> tuple[list[str], list[str]]:
    """The units the tree holds and the layers leave out, and the names in the layers no unit answers to."""
    present = {unit(module_name(root, path)) for path in (root / "stay").rglob("*.py")}
    declared = set(layers) | {under for unders in layers.values() for under in unders}
    return sorted(present - set(layers)), sorted(declared - present)


def edges(graph: Sequence[Import], by: Callable[[str], str] = unit) -> dict[tuple[str, str], list[Import]]:
    """The imports between units (or, ``by=str``, between modules), by (importer, imported);
    an import of itself left out."""
    between: dict[tuple[str, str], list[Import]] = {}
    for found in graph:
        pair = (by(found.importer), by(found.imported))
        if pair[0] != pair[1]:
            between.setdefault(pair, []).append(found)
    return between


def breaking_imports(graph: Sequence[Import], layers: Mapping[str, frozenset[str]] = LAYERS,
                     apart: Mapping[str, frozenset[str]] = APART) -> list[Import]:
    """The imports the layers do not allow (a unit they leave out breaks them with every
    import it makes, so a new package or module must be placed), and those ``apart`` forbids."""
    below = beneath(layers)
    return [found for pair, imports in edges(graph).items()
            if pair[1] not in below.get(pair[0], set()) or pair[1] in apart.get(pair[0], frozenset())
            for found in imports]


def layer_breaks(graph: Sequence[Import], layers: Mapping[str, frozenset[str]] = LAYERS,
                 apart: Mapping[str, frozenset[str]] = APART) -> list[tuple[str, str]]:
    """The edges between units that the layers do not allow."""
    return sorted({(unit(found.importer), unit(found.imported)) for found in breaking_imports(graph, layers, apart)})


def cycles(graph: Sequence[Import], by: Callable[[str], str] = unit) -> list[list[str]]:
    """The strongly connected groups of two or more units (``by=str``: modules), by
    Tarjan's algorithm, each sorted."""
    following: dict[str, set[str]] = {}
    for importer, imported in edges(graph, by):
        following.setdefault(importer, set()).add(imported)
        following.setdefault(imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(following[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(following):
        if node not in index:
            visit(node)
    return sorted(found)


def private_reach_ins(graph: Sequence[Import]) -> list[Import]:
    """Imports of a private module of one of stay's packages (``stay.x._y``) from outside
    that package: what another package needs from it belongs in its ``__init__``."""
    return [found for found in graph
            if unit(found.importer) != unit(found.imported)
            and any(part.startswith("_") for part in found.imported.split(".")[2:])]


def figures(root: Path, layers: Mapping[str, frozenset[str]] = LAYERS) -> Mapping[str, int]:
    graph = import_graph(root)
    return {"layer breaks": len(layer_breaks(graph, layers)), "cycles": len(cycles(graph)),
            "module cycles": len(cycles(graph, by=str)),
            "private reach-ins": len(private_reach_ins(graph))}
