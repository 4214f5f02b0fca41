"""stay's version, in a module of its own so the pipeline (which the public names in
``stay/__init__`` stand on) can name it without importing the package above it."""

from __future__ import annotations

__version__ = "0.1.0"

DISTRIBUTION = "stay-course"
"""The name stay is installed under (pyproject's ``name``); PyPI's unrelated ``stay`` takes the import
name too, so the two cannot be installed side by side."""
