"""Public names a package imports on first use (PEP 562), so ``stay --help`` never pays for the pipeline.
A package declares each once, as ``from module import Name as Name`` under ``if TYPE_CHECKING:`` (what
mypy reads); ``lazy_package`` reads that block and derives ``__getattr__``, ``__dir__`` and ``__all__``."""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def lazy_package(package: str, source: str,
                 *eager: str) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` of ``package`` (its ``__file__`` is
    ``source``): the names its TYPE_CHECKING block imports, and ``eager`` ones it imports itself."""
    tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    exports = {alias.asname or alias.name: node.module or ""
               for block in tree.body if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
               for node in block.body if isinstance(node, ast.ImportFrom)
               for alias in node.names}
    public = sorted([*exports, *eager])

    def __getattr__(name: str) -> Any:  # a name is imported once, then kept
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return list(public)

    return __getattr__, __dir__, public
