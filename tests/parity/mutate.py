"""Hypothesis strategies that damage a course the ways models and people do.

A course is held in memory as {relative path: bytes}. Structural damage (deleted
files, dropped or retyped fields, renamed ids, banned words, shuffled, emptied or
duplicated lists, broken Markdown) keeps files parseable so deep rules run;
garbage (random bytes, YAML of the wrong shape, non-UTF-8, huge and deeply
nested files) exercises loading; whitespace damage (a tab, CR, byte order mark,
NEL, U+2028 or U+2029 put in place of a space or line break, or between any two
characters) is where libyaml and the pure parser disagree. Every choice is drawn by hypothesis, so a
failing example shrinks to the smallest damage that shows it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from stay._bounds import MAX_FILE_BYTES

BANNED = ["simply", "just", "obviously", "of course", "everyone knows", "easy",
          "understand", "know", "good", "clear", "appropriate", "all of the above",
          "None of the above."]
IDS = ["m01", "m02", "m03", "m1", "m01-l01", "m01-l02", "m01-l04", "m02-l01", "m02-l07",
       "m01-l01-o1", "m01-l01-o2", "m01-l01-o9", "m02-l01-o1", "m01-l01-o01",
       "m01-l01-e1", "m01-l01-q1", "m01-l01-q0", "p1", "p0", "r1", "r01", "x", " ", "",
       "../m01", "m01/l01", "apply", "analyze", "remember", "create", "hook", "recap",
       "quiz", "exercise", "capstone", "mcq", "short", "scheme", "host", "current", "stale"]

yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 400) | st.sampled_from(IDS + BANNED)
    | st.text(max_size=8) | st.floats(allow_nan=False, width=16),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["id", "term", "x", "lesson", "outcome"]), children,
                      max_size=3),
    max_leaves=6,
)


def load_course(course_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(course_dir).as_posix(): p.read_bytes()
            for p in sorted(course_dir.rglob("*")) if p.is_file()}


def write_course(files: dict[str, bytes], course_dir: Path) -> None:
    for rel, content in files.items():
        target = course_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def _dump(data: Any) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1_000_000).encode()


def _slots(node: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in a parsed document, depth first."""
    found: list[tuple[Any, Any]] = []
    stack = [node]
    while stack:
        current = stack.pop()
        keys: list[Any] = (list(current) if isinstance(current, dict)
                           else list(range(len(current))) if isinstance(current, list) else [])
        for key in keys:
            found.append((current, key))
            stack.append(current[key])
    return found


@dataclass(frozen=True)
class Damage:
    kind: str
    file: int
    at: int
    value: Any = None

    def apply(self, files: dict[str, bytes]) -> None:
        paths = sorted(files)
        if not paths:
            return
        path = paths[self.file % len(paths)]
        if self.kind == "delete":
            del files[path]
        elif self.kind == "garbage":
            files[path] = self.value
        elif self.kind in ("respace", "inspace"):
            files[path] = _damage_whitespace(files[path], self)
        elif self.kind == "stray":
            name = "".join(c for c in str(self.value) if c.isalnum() or c in "._-")
            files[f"modules/{name.lstrip('.') or 'stray'}.txt"] = b"stray\n"
        elif path.endswith(".md"):
            files[path] = _damage_markdown(files[path], self)
        else:
            files[path] = _damage_yaml(files[path], self)


def _damage_yaml(raw: bytes, damage: Damage) -> bytes:
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except Exception:  # already garbage: leave it
        return raw
    slots = _slots(data)
    if not slots:
        return _dump(damage.value)
    container, key = slots[damage.at % len(slots)]
    current = container[key]
    kind = damage.kind
    if kind == "drop":
        del container[key]
    elif kind == "retype":
        container[key] = damage.value
    elif kind == "rename":
        container[key] = IDS[damage.at % len(IDS)] if isinstance(damage.value, bool) else (
            f"{current}{damage.value}" if isinstance(current, str) else damage.value)
    elif kind == "inject" and isinstance(current, str):
        word = BANNED[damage.at % len(BANNED)]
        container[key] = word if damage.value else f"{current} {word}"
    elif kind == "shuffle" and isinstance(current, list):
        random.Random(damage.at).shuffle(current)
    elif kind == "empty" and isinstance(current, (list, dict)):
        current.clear()
    elif kind == "duplicate" and isinstance(current, list) and current:
        current.append(current[damage.at % len(current)])
    else:
        container[key] = damage.value
    return _dump(data)


_MARKDOWN_INSERTS = [
    "```\nplain = 'no language'\n```", "# A second title", "## A stray section",
    "---", "This sentence is simply there.", "Of course everyone knows this.",
    " ".join(["word"] * 140) + ".", "- a list item", "~~~python\nunclosed = True",
    "| a | table |", "1. numbered", "###### deep heading ####",
]


def _damage_markdown(raw: bytes, damage: Damage) -> bytes:
    lines = raw.decode("utf-8", "surrogateescape").split("\n")
    at = damage.at % len(lines)
    if damage.kind in ("drop", "empty"):
        del lines[at]
    elif damage.kind == "shuffle":
        other = (at * 7 + 3) % len(lines)
        lines[at], lines[other] = lines[other], lines[at]
    elif damage.kind == "inject":
        lines.insert(at, _MARKDOWN_INSERTS[damage.at % len(_MARKDOWN_INSERTS)])
    else:
        lines[at] = str(damage.value)
    return "\n".join(lines).encode("utf-8", "surrogateescape")


# Whitespace and line breaks the two YAML parsers (and the Markdown reading) may treat
# differently, and plain ones.
WHITESPACE = ["\t", "\t", "\r", "\r\n", "\n", "\ufeff", "\x85", "\u2028", "\u2029", "\x0b", "\x0c",
              "\xa0", "\u3000", " ", "  ", " \t", "\t\t"]


def _damage_whitespace(raw: bytes, damage: Damage) -> bytes:
    """``respace``: one existing space or line break becomes ``value``; ``inspace``:
    ``value`` goes between two characters anywhere."""
    text = raw.decode("utf-8", "surrogateescape")
    if damage.kind == "respace":
        spots = [index for index, char in enumerate(text) if char in " \n"]
        if spots:
            at = spots[damage.at % len(spots)]
            text = text[:at] + str(damage.value) + text[at + 1:]
    else:
        at = damage.at % (len(text) + 1)
        text = text[:at] + str(damage.value) + text[at:]
    return text.encode("utf-8", "surrogateescape")


whitespace = st.builds(
    Damage,
    kind=st.sampled_from(["respace", "respace", "inspace"]),
    file=st.integers(0, 10_000),
    at=st.integers(0, 100_000),
    value=st.sampled_from(WHITESPACE),
)

structural = st.builds(
    Damage,
    kind=st.sampled_from(["delete", "drop", "retype", "rename", "inject", "shuffle", "empty",
                          "duplicate", "stray"]),
    file=st.integers(0, 10_000),
    at=st.integers(0, 10_000),
    value=st.one_of(yaml_values, st.booleans(), st.sampled_from(["-x", "1", ".md", "x/y.md"])),
)


MAP_DEPTH = int((2 * MAX_FILE_BYTES) ** 0.5) - 64
"""The deepest block mapping whose text (about depth squared over two bytes: each level is
indented one more) stays under the library's read limit. A file past that limit is outside
parity by design: the library refuses to read it (issue 20; tests/test_bounds.py holds the
refusal), while the frozen reference reads it whole, a 30,000-deep mapping being 450 MB."""


def _deep(depth: int, style: str) -> bytes:
    if style == "flow":
        return ("[" * depth + "]" * depth).encode()
    if style == "block":
        return ("- " * depth + "x\n").encode()
    depth = min(depth, MAP_DEPTH)
    return "".join(" " * i + "k:\n" for i in range(depth)).encode() + b" " * depth + b"v\n"


garbage_content = st.one_of(
    st.binary(max_size=300),
    st.sampled_from([b"- a\n- b\n", b"just a string\n", b"42\n", b"null\n", b"", b"{}\n",
                     b"[]\n", b"key: [unclosed\n", b"\tbad: indent\n", b"a: 1\na: 2\n",
                     b"&a [*a]\n", b"--- 1\n--- 2\n", b"!!python/object:os.system x\n",
                     b"\xef\xbb\xbfbom: true\n", b"x: 2024-01-01\n", b"x: !!binary AAAA\n"]),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.text(max_size=80).map(lambda t: t.encode("latin-1", "replace") + b"\xe9\xff"),
    # nesting far from the pure parser's recursion limit (about 330 levels) on both sides:
    # within it both parsers agree, far past it both fail; at the limit itself the answer
    # depends on the caller's stack depth, which no two programs share.
    st.builds(_deep, st.sampled_from([5, 60, 3_000, 30_000]),
              st.sampled_from(["flow", "block", "map"])),
    st.integers(2_000, 20_000).map(lambda n: b"items:\n" + b"  - entry\n" * n),
)

garbage = st.builds(Damage, kind=st.just("garbage"), file=st.integers(0, 10_000),
                    at=st.just(0), value=garbage_content)
