"""What a run's courses were built with, read from their ledgers (the one source of truth: a
report's header derives from its builds, never from what the run was asked to use), and what
that means for a comparison of two runs."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from stay._bounds import Damaged, load_stored_json
from stay._words import damaged_ledger
from stay.errors import EnvironmentProblem

PROMPTS = "prompts/"
"""The ledger's prefix for a prompt or reference file (``Prompts.hashes`` names them without it)."""
OFFLINE = "offline"
QUALITY_RECORD = Path(".runs") / "suite-quality.json"
"""Where the suite records the offline quality knob a build was made with. The knob is not
a ledger input (the rigged backend is test support, not a stage's source), so without this
record a rerun with another knob would find nothing stale and reuse the old builds."""


def ledger_built_with(course_dir: Path) -> dict[str, dict[str, str]]:
    """Per artefact, what the ledger says it was built with (prompts, references, schema,
    model); artefacts the ledger records no sources for are left out."""
    path = course_dir / ".state" / "hashes.json"
    if not path.is_file():
        return {}
    try:
        document = load_stored_json(path)  # bounded, like every stored file
    except Damaged as exc:
        raise EnvironmentProblem(damaged_ledger(path, exc.reason), path=path) from None
    entries = document.get("artefacts") if isinstance(document, dict) else None
    if not isinstance(entries, dict):
        raise EnvironmentProblem(damaged_ledger(path, "'artefacts' is not a mapping of entries"), path=path,
                                 field="artefacts")
    return {name: dict(entry["sources"]) for name, entry in sorted(entries.items())
            if isinstance(entry, dict) and isinstance(entry.get("sources"), dict)}


_RUN_ENTRY = re.compile(r"^## run \d+: \S+ \((.+)\)$", re.MULTILINE)
"""A run log's entry heading (``stay.pipeline._run_log.log_run``): the command and the backend's name."""
REPLAY = " (replay)"
"""What a replaying backend adds to its name (``CachedBackend.name``): the same backend answered."""


def course_built_by(course_dir: Path) -> list[str]:
    """The backends that wrote a course, from its run log (every run that wrote anything
    names its backend there): the course's own record, so a rescored course says who built
    it, not who judged it. [] when there is no run log (a course from outside stay)."""
    from stay._bounds import read_stored

    path = course_dir / ".state" / "run-log.md"
    if not path.is_file():
        return []
    try:
        text = read_stored(path).decode("utf-8", "replace")  # bounded, like every stored file
    except (Damaged, OSError):
        return []  # unknown, never a guess: the run check leaves an unknown builder alone
    return sorted({name.removesuffix(REPLAY) for name in _RUN_ENTRY.findall(text)})


def recorded_quality(course_dir: Path) -> dict[str, float]:
    """The offline quality knob a course was built with, as the suite recorded it beside the
    course; a course with no record was built without one (as before the knob was recorded)."""
    path = course_dir / QUALITY_RECORD
    if not path.is_file():
        return {}
    document = load_stored_json(path)  # bounded, like every stored file: a record is untrusted
    if not isinstance(document, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in document.values()):
        raise Damaged(os.fspath(path), "not a quality record (knob names to numbers); delete the course "
                                       "directory and build it again")
    return {str(k): float(v) for k, v in document.items()}


def built_prompts(builds: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Prompt file (as ``Prompts.hashes`` names it) -> the distinct hashes the builds' ledgers
    say their artefacts were built with; {} when no build records ``built_with``."""
    found: dict[str, set[str]] = {}
    for build in builds:
        for record in (build.get("built_with") or {}).values():
            for source, sha in record.items():
                if source.startswith(PROMPTS):
                    found.setdefault(source.removeprefix(PROMPTS), set()).add(sha)
    return {name: sorted(hashes) for name, hashes in sorted(found.items())}


def header_prompts(builds: Iterable[Mapping[str, Any]], requested: Mapping[str, str]) -> dict[str, Any]:
    """The report header's prompt hashes: from the builds' ledgers when they record them
    (``source: "ledger"``; a file built with more than one version is listed under
    ``mixed``), else the hashes the run was asked to use (``source: "requested"``)."""
    built = built_prompts(builds)
    if not built:
        return {"sha256": dict(sorted(requested.items())), "source": "requested"}
    return {"sha256": {name: hashes[0] for name, hashes in built.items() if len(hashes) == 1},
            "mixed": {name: hashes for name, hashes in built.items() if len(hashes) > 1},
            "source": "ledger"}


def _builds(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [build for brief in document["briefs"].values() for build in brief["builds"]]


def _prompt_versions(document: Mapping[str, Any]) -> dict[str, set[str]]:
    """Prompt file -> its hashes, shortened to the ledger's length so the two sources compare."""
    built = built_prompts(_builds(document))
    if built:
        return {name: set(hashes) for name, hashes in built.items()}
    header = (document.get("prompts") or {}).get("sha256") or {}
    return {name: {str(sha)[:16]} for name, sha in header.items()}


def header_mismatches(document: Mapping[str, Any]) -> list[str]:
    """Prompt files the header names with a hash none of the run's builds was built with."""
    built = built_prompts(_builds(document))
    header = (document.get("prompts") or {}).get("sha256") or {}
    return sorted(name for name, sha in header.items()
                  if name in built and not any(str(sha).startswith(h) for h in built[name]))


def changed_prompts(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[str]:
    """Prompt files whose versions differ between the runs (or within either run)."""
    before, after = _prompt_versions(baseline), _prompt_versions(candidate)
    return sorted(name for name in set(before) | set(after)
                  if before.get(name) != after.get(name) or len(before.get(name, ())) > 1)


def _who(document: Mapping[str, Any]) -> str:
    judge = document.get("judge", "n/a")
    model = document.get("judge_model")
    return f"backend {document.get('backend', 'n/a')}, judge {judge}" + (f" ({model})" if model else "")


def provenance_notes(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[str]:
    """Lines every comparison output carries: who generated and who judged each run, the
    prompt files that differ between the runs, a header that names prompts its courses were
    not built with, and a plain statement when the generator cannot see the change."""
    lines = [f"baseline: {_who(baseline)}; candidate: {_who(candidate)}"]
    for run, document in (("baseline", baseline), ("candidate", candidate)):
        wrong = header_mismatches(document)
        if wrong:
            lines.append(f"{run}: its header names prompts its courses were not built with (the builds' ledgers "
                         f"differ): {', '.join(wrong)}")
    changed = changed_prompts(baseline, candidate)
    if changed:
        lines.append(f"prompt files that differ between the runs: {', '.join(changed)}")
        if baseline.get("backend") == OFFLINE and candidate.get("backend") == OFFLINE:
            lines.append("the offline backend does not read prompt text: this comparison cannot see a prompt change")
    return lines
