"""YAML parsing for the validator: libyaml's speed, PyYAML's verdicts.

The contract defines "not YAML" as "``yaml.safe_load`` raises", and ``safe_load`` is
PyYAML's pure-Python parser. Parsing dominates a validator's run time and the pure
parser is about ten times slower than libyaml's, so well-formed files are parsed
with libyaml and anything it rejects, or anything where the two parsers are known
to disagree, is handed to the pure parser, whose answer is authoritative:

* libyaml composes nested collections recursively in C with no depth limit, so a
  document nested deeper than the pure parser's recursion limit parses with libyaml
  but raises ``RecursionError`` with ``safe_load``, and at tens of thousands of
  levels libyaml overflows the C stack. Every level of nesting needs an indicator
  character (``-``, ``:``, ``?``, ``[`` or ``{``), so their count bounds the depth:
  a text with many of them never reaches libyaml, and a composed tree deeper than
  ``_DEEP`` is re-parsed by the pure parser.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

try:
    from yaml import CSafeLoader as _FastLoader
except ImportError:  # PyYAML built without libyaml: the pure parser does it all
    _FastLoader = None  # type: ignore[assignment,misc]

# Deeper than this, the pure parser decides (it fails somewhere past 300 levels).
_DEEP = 64
# More nesting indicators than this could overflow libyaml's C stack (seen at ~25,000).
_MAX_INDICATORS = 10_000
_INDICATORS = "-:?[{"


class _TooDeep(Exception):
    """The composed tree is deeper than ``_DEEP``: let the pure parser decide."""


def safe_load(text: str) -> Any:
    """Parse ``text`` exactly as ``yaml.safe_load`` would, raising where it raises."""
    if _FastLoader is None or sum(text.count(c) for c in _INDICATORS) > _MAX_INDICATORS:
        return yaml.load(text, Loader=yaml.SafeLoader)
    try:
        loader = _FastLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_depth(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except Exception:
        return yaml.load(text, Loader=yaml.SafeLoader)


def _check_depth(root: Node) -> None:
    stack: list[tuple[Node, int]] = [(root, 1)]
    # An alias is the anchored node itself, reachable at more than one depth; the
    # pure composer recurses only at the anchor, but the deepest sighting is a safe
    # over-estimate, and a recursive alias simply runs past _DEEP.
    deepest: dict[int, int] = {}
    while stack:
        node, depth = stack.pop()
        if depth > _DEEP:
            raise _TooDeep
        if deepest.get(id(node), 0) >= depth:
            continue
        deepest[id(node)] = depth
        if isinstance(node, SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, MappingNode):
            for key, value in node.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
