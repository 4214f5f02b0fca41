"""Public names a package imports on first use (PEP 562), so ``stay --help`` and
``python -m stay.validate`` never pay for the pipeline, Jinja2 or the scorers.

A package declares each public name once, as ``from module import Name as Name`` under
``if TYPE_CHECKING:`` (what mypy reads, the ``as`` re-exporting it); ``lazy_package`` reads
that block from the package's source and derives ``__getattr__``, ``__dir__`` and ``__all__``."""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
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
    return (*lazy_names(package, exports, public), public)


def lazy_names(package: str, exports: Mapping[str, str],
               public: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps each lazily
    imported name to the module that defines it; a name is imported once, then kept in
    the package's namespace."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return list(public)

    return __getattr__, __dir__
