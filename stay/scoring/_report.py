"""Eval reports: one JSON document per run of the suite, merged from its workers.

A report records, per brief and scorer, the score, every item with its reason, the
judge, the model ids, a hash of every prompt and reference file used, and the usage
and cost of building and judging. Same inputs, same answers: same bytes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stay.models import Usage, cost, model_table
from stay.scoring._core import ScoreResult

VERSION = 1


def brief_entry(slug: str, scores: dict[str, ScoreResult], *, build_usage: Usage, build_cost: float | None,
                built: bool) -> dict[str, Any]:
    """One brief's part of a report."""
    judged = {}
    for name, result in sorted(scores.items()):
        entry = result.model_dump(mode="json")
        model = result.judge.removeprefix("model:") if result.judge.startswith("model:") else None
        price = cost(model, result.usage) if model else 0.0
        entry["cost"] = None if price is None else round(price, 6)
        judged[name] = entry
    return {
        "slug": slug, "built": built,
        "build": {"usage": build_usage.model_dump(),
                  "cost": None if build_cost is None else round(build_cost, 6)},  # None: a model has no price
        "scorers": judged,
    }


def report(*, label: str, backend: str, judge: str, prompts_dir: str, prompt_hashes: dict[str, str],
           briefs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The whole report: per brief and scorer, and totals."""
    scorers = sorted({name for entry in briefs.values() for name in entry["scorers"]})
    means = {}
    for name in scorers:
        values = [entry["scorers"][name]["score"] for entry in briefs.values()
                  if name in entry["scorers"] and entry["scorers"][name]["score"] is not None]
        means[name] = sum(values) / len(values) if values else None
    build_costs = [entry["build"]["cost"] for entry in briefs.values()]
    build_total = None if None in build_costs else round(sum(build_costs), 6)  # unknown, never a partial sum
    judge_usage = [r["usage"] for e in briefs.values() for r in e["scorers"].values()]
    judge_cost = sum(r.get("cost") or 0.0 for e in briefs.values() for r in e["scorers"].values())
    return {
        "version": VERSION, "label": label, "backend": backend, "judge": judge,
        "models": dict(model_table()), "prompts": {"dir": prompts_dir, "sha256": prompt_hashes},
        "briefs": dict(sorted(briefs.items())), "means": means,
        "totals": {"build_cost": build_total, "judge_cost": round(judge_cost, 6),
                   "judge_input_tokens": sum(u["input_tokens"] for u in judge_usage),
                   "judge_output_tokens": sum(u["output_tokens"] for u in judge_usage)},
    }


def write_report(path: str | os.PathLike[str], document: dict[str, Any]) -> None:
    from stay.artefacts import write_text_atomic

    write_text_atomic(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    from stay.errors import UsageError

    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such report; run `pytest evals/` to write one") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not an eval report ({type(exc).__name__})") from None
    if not isinstance(document, dict) or document.get("version") != VERSION or "briefs" not in document:
        raise UsageError(f"{path}: not an eval report of version {VERSION}")
    return document
