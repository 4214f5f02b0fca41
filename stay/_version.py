"""stay's version, in a module of its own so the pipeline (which the public names in
``stay/__init__`` stand on) can name it without importing the package above it."""

from __future__ import annotations

__version__ = "0.1.0"
