"""Hand-made eval reports, for testing compare without building anything."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from evals.conftest import EvalConfig
from stay.scoring._report import VERSION
from stay.suite import OFFLINE
from tests.conftest import ROOT

Item = float | str | None
"""A score, or "unparseable" / "error" for a judge that failed."""


def make_report(builds: dict[str, list[dict[str, list[Item]]]], *, label: str = "run", content: str | None = None,
                judge: str = "model", judge_model: str | None = "claude-sonnet-5-5", backend: str = "anthropic",
                versions: dict[str, int] | None = None, reasons: str = "judged",
                session: str | None = "s-one-session") -> dict[str, Any]:
    """A report: ``builds`` maps brief -> per epoch, scorer -> item scores. Items judged
    the same content in two reports when both use the same ``content`` tag (None: a tag of
    the label, so two reports never share content). Every build was built and judged in
    ``session`` (None: a report from before sessions were recorded); by default two
    reports share it, as the suite's two-arm run and ``stay evals rejudge`` write them."""
    tag = label if content is None else content
    scorers = sorted({name for epochs in builds.values() for epoch in epochs for name in epoch})
    briefs: dict[str, Any] = {}
    for brief, epochs in builds.items():
        entries = []
        for number, epoch in enumerate(epochs, 1):
            results = {}
            for name, values in epoch.items():
                items = []
                for i, value in enumerate(values):
                    failure = value if isinstance(value, str) else None
                    items.append({"item": f"{name}-{i}", "content": f"{tag}/{brief}/{number}/{name}/{i}",
                                  "score": None if failure else value, "failure": failure,
                                  "reason": f"{reasons} {name}-{i}", "raw": None})
                results[name] = {"items": items, "unparseable": sum(v == "unparseable" for v in values),
                                 "errors": sum(v == "error" for v in values),
                             "judge": f"model:{judge_model}" if judge == "model" else judge}
            entries.append({"epoch": number, "scorers": results, "seed": None, "built": True, "built_by": [backend],
                            **({"judged_in": session, "built_in": session} if session else {})})
        briefs[brief] = {"builds": entries}
    return {"version": VERSION, "label": label, "backend": backend, "judge": judge, "judge_model": judge_model,
            "scorers": versions or dict.fromkeys(scorers, 2), "epochs": max(map(len, builds.values())),
            "briefs": briefs}


def steady(briefs: int = 6, epochs: int = 4, items: int = 12, rate: float = 0.75, scorers: tuple[str, ...] = ("a", "b"),
           drop: dict[str, float] | None = None) -> dict[str, list[dict[str, list[Item]]]]:
    """Deterministic builds: each scores ``rate`` of its items, give or take one item from
    epoch to epoch (build-to-build noise), less ``drop`` (a share of items) per scorer."""
    found: dict[str, list[dict[str, list[Item]]]] = {}
    for b in range(briefs):
        found[f"brief-{b}"] = []
        for e in range(epochs):
            epoch: dict[str, list[Item]] = {}
            for name in scorers:
                passed = round(items * (rate - (drop or {}).get(name, 0.0))) + ((b + e) % 3 - 1)
                epoch[name] = [1.0 if i < passed else 0.0 for i in range(items)]
            found[f"brief-{b}"].append(epoch)
    return found


def with_(report: dict[str, Any], **changes: Any) -> dict[str, Any]:
    changed = copy.deepcopy(report)
    changed.update(changes)
    return changed


SUITE_BRIEF = ROOT / "evals" / "briefs" / "accessible-web-forms.yaml"
"""The one brief the suite tests build (the smallest of the suite's)."""


def suite_run(label: str, seed: int, courses: Path, output: Path, **changes: Any) -> EvalConfig:
    """The suite's own configuration (``evals/conftest.py``'s ``EvalConfig``) of an offline run
    of two epochs of ``SUITE_BRIEF``, no quality knob, with ``changes``: tests drive the
    suite's functions with what the suite gives them, not a stand-in."""
    fields: dict[str, Any] = {"prompts_dir": None, "label": label, "backend": OFFLINE, "output": output,
                              "courses": courses, "rescore": False, "quality": {}, "epochs": 2, "seed": seed,
                              "briefs": (SUITE_BRIEF,)}
    return EvalConfig(**{**fields, **changes})


def calibration(report: dict[str, Any], kappa: float = 0.9) -> dict[str, Any]:
    """A calibration report (``stay evals calibrate``'s) in which ``report``'s judge has ``kappa``
    on every scorer of the report: written beside a candidate, its model-judged scorers may gate
    (for tests about the gate's statistics, not about calibration)."""
    judge = f"model:{report['judge_model']}" if report["judge"] == "model" else report["judge"]
    return {"calibration": 1, "judge": judge, "gold": {"sha256": "0" * 64},
            "judges": {name: {"version": version, "kappa": kappa, "interval": [kappa - 0.1, min(1.0, kappa + 0.05)]}
                       for name, version in report["scorers"].items()}}
