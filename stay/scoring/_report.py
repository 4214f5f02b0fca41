"""Eval reports: one JSON document per run of the suite, merged from its workers; same inputs,
same bytes. A build that failed is kept (``failed_entry``): leaving it out would drop the worst
builds and lean towards a pass, so ``compare`` refuses the run instead (docs/evals.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from stay.models import DEFAULT_MODELS, Usage
from stay.requests import Role
from stay.scoring._core import ScoreResult
from stay.scoring._provenance import header_prompts

VERSION = 2
BUILT_WITH_KEYS = ("prompt", "references", "schema", "model")


def _known_sum(costs: Iterable[float | None]) -> float | None:
    """The total, or None when any part is unknown (a model with no price on file)."""
    values = list(costs)
    return None if None in values else round(sum(v for v in values if v is not None), 6)


def build_entry(scores: Mapping[str, ScoreResult], *, epoch: int, seed: str | None, course_sha256: str,
                build_usage: Usage, build_cost: float | None, built: bool,
                built_with: Mapping[str, Mapping[str, str]] | None = None,
                judged_in: str | None = None, built_by: Iterable[str] | None = None) -> dict[str, Any]:
    """One build's part of a report: a brief built (or loaded) once, and scored
    (``judged_in``: the judging session, ``stay.scoring._session``; ``built_by``: the
    backends its course's run log says wrote it, ``_provenance.course_built_by``)."""
    judged = {}
    for name, result in sorted(scores.items()):
        entry = result.model_dump(mode="json")  # its cost: at the judge's backend's prices (ScoreResult.cost)
        entry["cost"] = None if result.cost is None else round(result.cost, 6)
        judged[name] = entry
    entry = {
        "epoch": epoch, "seed": seed, "built": built, "course_sha256": course_sha256,
        "build": {"usage": build_usage.model_dump(),
                  "cost": None if build_cost is None else round(build_cost, 6)},  # None: a model has no price
        "scorers": judged,
    }
    if built_with is not None:
        entry["built_with"] = {path: dict(record) for path, record in sorted(built_with.items())}
    if judged_in is not None:
        entry["judged_in"] = judged_in
    if built_by:  # none recorded: unknown, which the backend check leaves to the header
        entry["built_by"] = sorted(set(built_by))
    return entry


def failure(error: BaseException) -> dict[str, str]:
    """A failed build's record: the error's class and its message, one line, bounded."""
    from stay.scoring._shape import FAILURE_CHARS

    message = " ".join(str(error).split())
    if len(message) > FAILURE_CHARS:
        message = message[:FAILURE_CHARS - 3] + "..."
    return {"error": type(error).__name__[:100], "message": message}


def failed_entry(error: BaseException, *, epoch: int, seed: str | None,
                 build_cost: float | None = 0.0) -> dict[str, Any]:
    """The report entry of a build that failed: why, and nothing scored. ``build_cost`` is
    None when what the failed build spent is unknown (a suite build that raised midway)."""
    return {"epoch": epoch, "seed": seed, "built": False, "course_sha256": None,
            "build": {"usage": Usage().model_dump(), "cost": build_cost}, "scorers": {}, "failed": failure(error)}


def sessions_of(entries: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The header's sessions: the distinct ``judged_in`` and ``built_in`` of the builds
    (a build that records none is left out: its session is unknown)."""
    builds = list(entries)
    return {key: sorted({str(e[key]) for e in builds if e.get(key) is not None}) for key in ("built_in", "judged_in")}


def judge_of(builds: Mapping[str, list[dict[str, Any]]]) -> tuple[str, str | None]:
    """(judge, judge model) of a run: "model" and its id, or the judge's own name."""
    from stay.scoring._scorers import JUDGE_FREE_NAMES

    names = sorted({r["judge"] for entries in builds.values() for e in entries for n, r in e["scorers"].items()
                    if n not in JUDGE_FREE_NAMES})
    models = sorted(name.removeprefix("model:") for name in names if name.startswith("model:"))
    if models and len(models) == len(names):
        return "model", ", ".join(models)
    return ", ".join(names) or "none", None


def not_judged(document: Mapping[str, Any]) -> dict[str, str]:
    """Scorer -> why, for every scorer no build of the run judged (``ScoreResult.judged``
    False: the offline judge reads no prose). Such a scorer has no mean and no pass
    anywhere; a report from before ``judged`` reads as judged."""
    results: dict[str, list[Mapping[str, Any]]] = {}
    for brief in (document.get("briefs") or {}).values():
        for build in brief.get("builds") or [] if isinstance(brief, Mapping) else []:
            for name, result in (build.get("scorers") or {}).items() if isinstance(build, Mapping) else []:
                if isinstance(result, Mapping):
                    results.setdefault(str(name), []).append(result)
    return {name: str(found[0].get("not_judged") or "not judged") for name, found in sorted(results.items())
            if all(r.get("judged") is False for r in found)}


def report(*, label: str, backend: str, prompts_dir: str, prompt_hashes: Mapping[str, str],
           scorers: Mapping[str, int], builds: Mapping[str, list[dict[str, Any]]], epochs: int,
           seed: int | None = None, quality: Mapping[str, float] | None = None,
           models: Mapping[Role, str] = DEFAULT_MODELS) -> dict[str, Any]:
    """The whole report, from each brief's builds (``builds``: slug -> build entries);
    ``models`` is the role -> model table the builds used (``Settings.models``). The prompt
    hashes and the quality knob are the ones the builds record (``built_with``, ``quality``);
    ``prompt_hashes`` and ``quality`` stand in only where no build records them."""
    judge, judge_model = judge_of(builds)
    entries = [entry for slug in sorted(builds) for entry in builds[slug]]
    knobs = {json.dumps(e["quality"], sort_keys=True) for e in entries if isinstance(e.get("quality"), dict)}
    if len(knobs) == 1 and all("quality" in e for e in entries):
        quality = json.loads(knobs.pop())
    means: dict[str, float | None] = {}
    failures = {}
    for name in sorted(scorers):
        results = [e["scorers"][name] for e in entries if name in e["scorers"]]
        values = [i["score"] for r in results for i in r["items"] if i["failure"] is None and i["score"] is not None]
        means[name] = sum(values) / len(values) if values else None
        failures[name] = {"items": sum(len(r["items"]) for r in results),
                          "unparseable": sum(r["unparseable"] for r in results),
                          "errors": sum(r["errors"] for r in results)}
    judge_usage = [r["usage"] for e in entries for r in e["scorers"].values()]
    return {
        "version": VERSION, "label": label, "backend": backend, "judge": judge, "judge_model": judge_model,
        "scorers": dict(sorted(scorers.items())), "epochs": epochs, "seed": seed,
        "quality": dict(sorted((quality or {}).items())),
        # what the courses were built with, from their ledgers; what was asked only when no build says
        "models": dict(models), "prompts": {"dir": prompts_dir, **header_prompts(entries, prompt_hashes)},
        "briefs": {slug: {"builds": sorted(builds[slug], key=lambda e: e["epoch"])} for slug in sorted(builds)},
        "sessions": sessions_of(entries),
        "means": means, "failures": failures,
        "totals": {"builds": len(entries),
                   "build_cost": _known_sum(e["build"]["cost"] for e in entries),  # unknown, never partial
                   # a judge with no price on file is unknown, never $0: the compare page's rule
                   "judge_cost": _known_sum(r.get("cost") for e in entries for r in e["scorers"].values()),
                   **{f"judge_{k}": sum(u[k] for u in judge_usage) for k in
                      ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}},
    }


def write_report(path: str | os.PathLike[str], document: dict[str, Any]) -> None:
    from stay.artefacts import write_text_atomic

    write_text_atomic(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A report from disk, checked; a file that is not one (missing, not a regular file,
    larger than any report, truncated, not UTF-8, too deep, of the wrong shape) is a
    one-line ``UsageError``."""
    from stay._bounds import Damaged, load_stored_json
    from stay.errors import UsageError

    try:
        document = load_stored_json(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such report; run `pytest evals/` to write one") from None
    except Damaged as exc:
        raise UsageError(f"{path}: not an eval report ({exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the report ({exc.strerror or type(exc).__name__})") from None
    check_report(document, str(path))
    return dict(document)


def check_report(document: Any, where: str = "report") -> None:
    """Raise ``UsageError`` naming the first field of ``document`` that a report lacks or
    holds in the wrong shape (``stay.scoring._shape``)."""
    from stay.errors import UsageError
    from stay.scoring._shape import shape_problem

    if not isinstance(document, dict):
        raise UsageError(f"{where}: not an eval report (a JSON object is expected)")
    if document.get("version") != VERSION:
        raise UsageError(f"{where}: an eval report of version {repr(document.get('version'))[:40]}, expected "
                         f"{VERSION}; run the suite again with this version of stay")
    problem = shape_problem(document)
    if problem is not None:
        raise UsageError(f"{where}: not an eval report: {problem}")
