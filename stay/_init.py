"""``stay init`` and the example briefs (``stay new --example NAME``): one copy,
``examples/briefs/``, which the wheel carries as ``stay/_examples``."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from stay._bounds import TooLarge, read_bounded
from stay._words import did_you_mean
from stay.artefacts import BRIEF_OPTIONAL, BRIEF_REQUIRED, Brief, create_text_atomic
from stay.errors import UsageError

INIT_EXAMPLE = "how-http-requests-travel"
"""The sample course's own brief, so what a newcomer builds can be set beside the committed sample."""
BRIEF_FILE = "brief.yaml"
"""What it is, not what it is about: the user edits it into their own course."""
GITIGNORE = """\
# Written by `stay init`: what stay writes that is not the course itself.
# .runs/ is each course's request cache, traces, rejected answers and lock (rebuilt or
# refilled by a run, and they hold whole prompts and answers); site/ is `stay view`'s
# default output, rendered from the course. Commit the rest, .state/ included: it holds
# the gates' answers and the ledger a resumed build trusts.
.runs/
/site/
"""


def examples_dir() -> Path:
    here = Path(__file__).resolve().parent
    wheel = here / "_examples"
    return wheel if wheel.is_dir() else here.parent / "examples" / "briefs"


def example_names() -> list[str]:
    return sorted(path.stem for path in examples_dir().glob("*.yaml"))


def example_path(name: str) -> Path:
    names = example_names()
    if name not in names:
        raise UsageError(f"there is no example '{name[:60]}'{did_you_mean(name, names)}; the examples are "
                         f"{', '.join(names)} (`stay new --list-examples` gives their titles)")
    return examples_dir() / f"{name}.yaml"


def example_lines() -> list[str]:
    """``stay new --list-examples``: one line per example, then how to build one."""
    names = example_names()
    briefs = [Brief.from_yaml(examples_dir() / f"{name}.yaml") for name in names]
    width = max(map(len, names))
    lines = [f"{name:<{width}}  {brief.title} ({brief.time_available})"
             for name, brief in zip(names, briefs, strict=True)]
    return [*lines, f"build one with: stay new --example {INIT_EXAMPLE}"]


def _already(path: Path, body: str) -> bool:
    """Whether ``path`` is a regular file (never a link) holding exactly ``body``, read no further."""
    if path.is_symlink() or not path.is_file():
        return False
    expected = body.encode("utf-8")
    try:
        return read_bounded(path, len(expected)) == expected
    except (OSError, TooLarge):
        return False


def init(directory: str | os.PathLike[str] = ".", example: str = INIT_EXAMPLE) -> list[str]:
    """Write ``brief.yaml`` and ``.gitignore`` into ``directory``, refusing (writing nothing) when either
    holds other bytes; one already holding them is kept, so a killed init is simply run again. Returns
    the lines to print."""
    source = example_path(example)
    root = Path(directory)
    brief, ignore = root / BRIEF_FILE, root / ".gitignore"
    header = (f"# A course brief, from stay's example '{example}'. Edit it ({', '.join(BRIEF_REQUIRED[:3])},\n"
              f"# {', '.join(BRIEF_REQUIRED[3:])}; optional: {', '.join(BRIEF_OPTIONAL)}), then build it (stay new).\n")
    text = header + source.read_text(encoding="utf-8")
    wanted = {brief: text, ignore: GITIGNORE}
    there = {path for path, body in wanted.items() if _already(path, body)}
    for path in wanted:  # in order, so the refusal names the same file every run
        if path not in there and (path.exists() or path.is_symlink()):
            raise UsageError(f"{path}: already exists; stay init never overwrites a file: move it away, "
                             "or run `stay init DIR` for a new directory", path=path)
    root.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    try:
        for path, body in wanted.items():
            if path not in there:
                create_text_atomic(path, body)  # whole or none; a file made meanwhile is never overwritten
                made.append(path)
    except BaseException:  # the brief written but not the .gitignore: remove it, so nothing blocks a retry
        for path in made:
            path.unlink(missing_ok=True)
        raise
    shown = BRIEF_FILE if os.path.normpath(directory) == "." else os.path.join(os.fspath(directory), BRIEF_FILE)
    kept = " and ".join(str(path) for path in wanted if path in there)
    said = [f"wrote {' and '.join(str(path) for path in made)}" if made else "",
            f"kept {kept} (already holding what stay init writes)" if kept else ""]
    return ["; ".join(part for part in said if part),
            f"next: stay new {shlex.quote(shown)}   (it stops at the design gate; "
            f"`stay build {shlex.quote(shown)} --yes` answers both gates)"]
