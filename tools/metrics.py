"""The figures a change to stay's structure is judged by, for this tree or another:

    python tools/metrics.py [--root CHECKOUT]

Read with the standard library's ``ast`` alone (nothing is imported from the tree
measured, so an old checkout measures as well as this one). Each figure, as defined here:

- fields: annotated class-body names (``ClassVar`` left out) of a dataclass, a pydantic
  model, a NamedTuple or a TypedDict. The largest such class of ``stay/pipeline``, and
  the run context: ``Run`` (in ``stay/pipeline/_run.py``) with the classes of that
  module its fields are annotated with.
- reach-ins: attribute reads through the run context in the handler modules
  (``HANDLER_MODULES``): every ``run.<name>`` that is not itself called. Asking the run
  to do something (``run.say(...)``) is not a reach-in; reading its state
  (``run.config.settings``, ``run.tally``) is, once per chain.
- layer breaks, cycles (between packages, and between modules: every import counts, a
  package's ``__init__`` is a module) and private reach-ins: ``tools/layers.py``, the
  implementation ``tests/test_layers.py`` holds at 0.
- lines: physical lines of the ``.py`` files under ``stay/`` (production) and ``tests/``;
  modules: the ``.py`` files under ``stay/`` and ``stay/pipeline/``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: tools/ is not installed
    sys.path.insert(0, str(ROOT))

from tools.layers import breaking_imports, cycles, import_graph, layer_breaks, private_reach_ins  # noqa: E402

HANDLER_MODULES = ("_runner", "_gates", "_run")
"""The modules of stay/pipeline holding the functions the runner hands the run context to."""

_MODEL_BASES = {"BaseModel", "NamedTuple", "TypedDict"}


def _name(node: ast.expr) -> str:
    """The last name of ``dataclass``, ``dataclasses.dataclass`` or ``dataclass(frozen=True)``."""
    if isinstance(node, ast.Call):
        return _name(node.func)
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _is_record(cls: ast.ClassDef) -> bool:
    return any(_name(d) == "dataclass" for d in cls.decorator_list) or \
        any(_name(base) in _MODEL_BASES for base in cls.bases)


def fields(cls: ast.ClassDef) -> list[tuple[str, ast.expr]]:
    """(name, annotation) of each field ``cls`` declares."""
    return [(item.target.id, item.annotation) for item in cls.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            and "ClassVar" not in ast.unparse(item.annotation)]


def records(path: Path) -> Iterator[ast.ClassDef]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and _is_record(node):
            yield node


def largest_class(root: Path) -> tuple[list[str], int]:
    """The classes of stay/pipeline with the most fields (every one, when several tie), and that count."""
    counted = [(len(fields(cls)), f"{path.stem}.{cls.name}")
               for path in sorted((root / "stay" / "pipeline").glob("*.py")) for cls in records(path)]
    most = max(count for count, _ in counted)
    return [name for count, name in counted if count == most], most


def run_context(root: Path) -> dict[str, int]:
    """Run and the classes of its own module its fields are annotated with, with their field counts."""
    path = root / "stay" / "pipeline" / "_run.py"
    classes = {cls.name: cls for cls in records(path)} if path.is_file() else {}
    if "Run" not in classes:
        return {}
    named = {node.id for _, annotation in fields(classes["Run"]) for node in ast.walk(annotation)
             if isinstance(node, ast.Name) and node.id in classes}
    return {name: len(fields(classes[name])) for name in sorted(named | {"Run"})}


def reach_ins(root: Path) -> int:
    count = 0
    for module in HANDLER_MODULES:
        path = root / "stay" / "pipeline" / f"{module}.py"
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        count += sum(1 for node in ast.walk(tree)
                     if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                     and node.value.id == "run" and id(node) not in called)
    return count


def lines(directory: Path) -> int:
    return sum(len(path.read_text(encoding="utf-8").splitlines()) for path in directory.rglob("*.py"))


def report(root: Path) -> list[str]:
    graph = import_graph(root)
    names, count = largest_class(root)
    context = run_context(root)
    return [
        f"largest class (stay/pipeline): {', '.join(names)}, {count} fields",
        "run context: " + (", ".join(f"{cls} {n}" for cls, n in context.items()) +
                           f"; {sum(context.values())} fields" if context else "no class Run in stay/pipeline/_run.py"),
        f"reach-ins from handlers: {reach_ins(root)}",
        f"layer breaks: {len(layer_breaks(graph))} (in {len(breaking_imports(graph))} imports)",
        f"package cycles: {len(cycles(graph))}",
        f"module cycles: {len(cycles(graph, by=str))}",
        f"private reach-ins: {len(private_reach_ins(graph))}",
        f"lines: production {lines(root / 'stay')}, tests {lines(root / 'tests')}",
        f"modules: production {len(list((root / 'stay').rglob('*.py')))}, "
        f"pipeline {len(list((root / 'stay' / 'pipeline').glob('*.py')))}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="stay's structural figures, for this checkout or another")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--detail", action="store_true", help="also list each layer break, cycle and private reach-in")
    ns = parser.parse_args(argv)
    print("\n".join(report(ns.root)))
    if ns.detail:
        graph = import_graph(ns.root)
        for importer, imported in layer_breaks(graph):
            print(f"layer break: {importer} -> {imported}")
        for group in cycles(graph) + cycles(graph, by=str):
            print("cycle: " + " <-> ".join(group))
        for found in private_reach_ins(graph):
            print(f"private reach-in: {found.importer}:{found.line} imports {found.imported}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
