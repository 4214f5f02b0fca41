"""YAML parsing for the validator: libyaml's speed, PyYAML's verdicts.

The contract defines "not YAML" as "``yaml.safe_load`` raises" (the pure parser, ten times
slower), so files are parsed with libyaml, and anything it rejects, nests deeper than ``_DEEP``
or holds a construct where the two are known to disagree (``_pure_only``: tabs, U+FEFF, YAML
1.1 line breaks, ``|#``, an empty ``!`` node, ``?``/``!`` in a flow collection, as the
differential test ``tests/validate/test_yaml_parity.py`` found) goes to the pure parser, whose
answer is authoritative. ``_build`` then makes an alias-free document's values by
SafeLoader's own rules without its per-node bookkeeping.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from stay._bounds import nests_deeper

try:
    from yaml import CSafeLoader
except ImportError:  # PyYAML built without libyaml: the pure parser does it all
    CSafeLoader = None  # type: ignore[assignment,misc]

_Resolvers = dict[str, tuple[tuple[str, Any], ...]]
_resolvers: tuple[tuple[int, ...], _Resolvers, tuple[tuple[str, Any], ...]] | None = None


def _implicit_resolvers() -> tuple[_Resolvers, tuple[tuple[str, Any], ...]] | None:
    """SafeLoader's implicit resolvers by first character ('' for the empty scalar),
    wildcard resolvers last; rebuilt whenever anyone has added one since (so this stays
    ``Resolver.resolve``'s table). None when path resolvers are in use."""
    global _resolvers
    table = yaml.SafeLoader.yaml_implicit_resolvers
    if yaml.SafeLoader.yaml_path_resolvers:
        return None
    fingerprint = (id(table), len(table), *map(len, table.values()))
    if _resolvers is None or _resolvers[0] != fingerprint:
        wildcard = tuple(table.get(None, []))
        by_first = {first: (*resolvers, *wildcard) for first, resolvers in table.items() if first is not None}
        _resolvers = (fingerprint, by_first, wildcard)
    return _resolvers[1], _resolvers[2]


_FastLoader: Any = None
if CSafeLoader is not None:

    class _SpecialisedLoader(CSafeLoader):
        """libyaml's parser with ``Resolver.resolve`` specialised to SafeLoader's tables:
        libyaml calls it for every node, and the general method rebuilds a list of
        resolvers on each call."""

        def __init__(self, stream: str, tables: tuple[_Resolvers, tuple[tuple[str, Any], ...]]) -> None:
            super().__init__(stream)
            self._by_first, self._wildcard = tables

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is ScalarNode:
                if implicit[0]:
                    for tag, regexp in self._by_first.get(value[:1], self._wildcard):
                        if regexp.match(value):
                            return tag
                return self.DEFAULT_SCALAR_TAG
            if kind is SequenceNode:
                return self.DEFAULT_SEQUENCE_TAG
            return self.DEFAULT_MAPPING_TAG

    _FastLoader = _SpecialisedLoader


def _fast_loader(text: str) -> Any:
    tables = _implicit_resolvers()
    return CSafeLoader(text) if tables is None else _FastLoader(text, tables)


# Deeper than this, the pure parser decides (it fails somewhere past 300 levels).
_DEEP = 64
# More nesting indicators than this could overflow libyaml's C stack (seen at ~25,000).
_MAX_INDICATORS = 10_000
_INDICATORS = "-:?[{"
# Characters on which the two parsers can disagree: see the module docstring.
_PURE_ONLY_CHARS = ("\t", "\ufeff", "\x85", "\u2028", "\u2029")
# What may stand before a token (a flow collection, a tag) and after a tag.
_BEFORE_TOKEN = " ,[]{}:?-"
_AFTER_TAG = ",[]{}"


class _TooDeep(Exception):
    """The composed tree is deeper than ``_DEEP``: let the pure parser decide."""


def _pure_only(text: str) -> bool:
    """Whether ``text`` holds a character or construct libyaml may read differently. Each test
    over-approximates (costing time, never a verdict) and is a linear ``str.find`` loop."""
    if any(c in text for c in _PURE_ONLY_CHARS):
        return True
    if "#" in text and _header_runs_into_comment(text):
        return True
    if "!" in text and _empty_non_specific_tag(text):
        return True
    if ("?" in text or "!" in text) and _opens_flow_collection(text):
        return True
    # Many indicators may mean deep nesting: libyaml's event stream (linear, not
    # recursive) says whether it is; the pure parser is ten times slower on a big file.
    return sum(text.count(c) for c in _INDICATORS) > _MAX_INDICATORS and nests_deeper(text, _DEEP)


def _header_runs_into_comment(text: str) -> bool:
    """A ``#`` after ``|`` or ``>`` and only chomping or indentation indicators (``|#``,
    ``>-2#``): libyaml reads a comment, the pure scanner wants a space first."""
    at = text.find("#")
    while at != -1:
        before = at - 1
        while before >= 0 and text[before] in "-+0123456789":
            before -= 1
        if before >= 0 and text[before] in "|>":
            return True
        at = text.find("#", at + 1)
    return False


def _empty_non_specific_tag(text: str) -> bool:
    """``!`` or ``!<!>`` standing alone as a token (at the start, or after whitespace or a
    flow indicator; before whitespace, a flow indicator or the end): on an empty node
    libyaml resolves a string, the pure composer null."""
    at = text.find("!")
    while at != -1:
        if at == 0 or text[at - 1].isspace() or text[at - 1] in _BEFORE_TOKEN:
            after = at + 4 if text.startswith("<!>", at + 1) else at + 1
            if after == len(text) or text[after].isspace() or text[after] in _AFTER_TAG:
                return True
        at = text.find("!", at + 1)
    return False


def _opens_flow_collection(text: str) -> bool:
    """Some ``[`` or ``{`` may open a flow collection that is not empty: it stands where a
    token can start and is not closed at once. Inside one, the pure scanner ends a
    plain scalar at ``?`` and takes ``,`` ``[`` ``]`` into a tag; libyaml does neither."""
    for opener, closer in (("[", "]"), ("{", "}")):
        at = text.find(opener)
        while at != -1:
            if (at == 0 or text[at - 1].isspace() or text[at - 1] in _BEFORE_TOKEN) and (
                    text[at + 1:at + 2] != closer):
                return True
            at = text.find(opener, at + 1)
    return False


def pure_load(text: str) -> Any:
    """PyYAML's pure-Python parser, the contract's definition."""
    return yaml.load(text, Loader=yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """Parse ``text`` exactly as ``yaml.safe_load`` would, raising where it raises."""
    if _FastLoader is None or _pure_only(text):
        return pure_load(text)
    try:
        loader = _fast_loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if not may_alias(text):  # no node is shared: the tree can be built directly
                try:
                    return _build(loader, node, 1)
                except _Unusual:
                    pass
            _check_depth(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except Exception:
        return pure_load(text)


def may_alias(text: str) -> bool:
    """Whether some ``*`` stands where an alias token can start: at the start, or after
    whitespace or a flow or block indicator (inside a scalar, ``"*"`` or ``a*b``, it cannot)."""
    at = text.find("*")
    while at != -1:
        if at == 0 or text[at - 1].isspace() or text[at - 1] in _BEFORE_TOKEN:
            return True
        at = text.find("*", at + 1)
    return False


_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
# Scalar tags whose SafeConstructor methods are plain functions: built in one call.
# (The collection constructors are generators that finish only in construct_document,
# where a scalar tagged !!map or !!set raises.)
_PLAIN_SCALARS = frozenset(f"tag:yaml.org,2002:{name}" for name in
                           ("null", "bool", "int", "float", "binary", "timestamp"))


class _Unusual(Exception):
    """A node ``_build`` leaves to PyYAML's own constructor (a merge key, a set, a
    collection as a key, a tag it does not know)."""


def _build(loader: Any, node: Node, depth: int) -> Any:
    """What ``SafeConstructor.construct_document`` makes of an alias-free tree, without its
    per-node bookkeeping (most of the fast path's time); ``_TooDeep`` past ``_DEEP``. Other
    scalars go to the loader's constructor; anything else is ``_Unusual``."""
    if depth > _DEEP:
        raise _TooDeep
    kind = type(node)
    if kind is ScalarNode:
        if node.tag == _STR:
            return node.value
        if node.tag in _PLAIN_SCALARS:
            return loader.construct_object(node)
        raise _Unusual
    if kind is MappingNode and node.tag == _MAP:
        mapping: dict[Any, Any] = {}
        for key, value in node.value:
            if type(key) is not ScalarNode or key.tag == _MERGE:
                raise _Unusual
            mapping[_build(loader, key, depth + 1)] = _build(loader, value, depth + 1)
        return mapping
    if kind is SequenceNode and node.tag == _SEQ:
        return [_build(loader, child, depth + 1) for child in node.value]
    raise _Unusual


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


def expands_past(document: Any, bound: int) -> bool:
    """Whether ``document`` written out as a tree (each shared part once per reference, as
    any reader walks it) holds more than ``bound`` values. Each distinct part is sized
    once, so the cost is the parsed document's, however far an alias bomb would expand;
    a part that holds itself (``&a [*a]``) counts once where it recurs."""
    sizes: dict[int, int] = {}

    def size(value: Any) -> int:
        if not isinstance(value, dict | list):
            return 1
        known = sizes.get(id(value))
        if known is not None:
            return known
        sizes[id(value)] = 1  # while it is being sized: a reference back to it counts once
        children = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        total = 1
        for child in children:
            total += size(child)
            if total > bound:
                break
        sizes[id(value)] = total
        return total

    return size(document) > bound
