"""``stay evals calibrate``: how far each model judge agrees with hand-labelled items (the gold
set), asked through its scorer's own instructions and verdict, and whether its scorer may gate
(kappa at ``KAPPA_TO_GATE`` or above; docs/evals.md, "Calibrating the judges")."""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from stay._display import fixed
from stay.errors import UsageError
from stay.scoring._core import NOT_JUDGED as NOT_JUDGED_OFFLINE
from stay.scoring._core import Judge, ModelScorer
from stay.scoring._defaults import CALIBRATION, KAPPA_TO_GATE

REPORT_NAME = Path(CALIBRATION).name
"""What ``compare`` looks for beside the candidate's report when not given ``--calibration``."""
RESAMPLES = 2_000
SEED = 0
INTERVAL = (f"95% percentile interval from a seeded bootstrap over items ({RESAMPLES} resamples, seed {SEED}; "
            "resamples whose kappa is undefined left out)")
MAX_GOLD_BYTES = 2 * 2**20
"""A gold file is a few hundred items of a few hundred words: 2 MB is far past any."""
NOT_JUDGED = "not judged"
"""A scorer with no judge (the validator counts): there is nothing to calibrate."""
UNCALIBRATED = "uncalibrated"


class GoldItem(BaseModel):
    """One labelled item: ``inputs`` exactly what its scorer's judge is given, and the lesson
    when the judge reads one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9._-]+$")]
    judge: StrictStr
    kinds: Annotated[list[StrictStr], Field(min_length=1)]
    label: Literal["fine", "defect"]
    inputs: dict[str, Any]
    lesson: StrictStr | None = None


class GoldFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: dict[str, StrictStr]
    """What makes an item each label (and each kind of defect), in words: labels are given
    by these rules, from the item alone."""
    items: Annotated[list[GoldItem], Field(min_length=1)]


@dataclass(frozen=True)
class Gold:
    items: tuple[GoldItem, ...]
    sha256: str
    directory: str

    def of(self, judge: str) -> list[GoldItem]:
        return [item for item in self.items if item.judge == judge]


def load_gold(directory: str | os.PathLike[str]) -> Gold:
    """Every ``*.yaml`` under ``directory``, read bounded (``stay._bounds``) and held to
    ``GoldFile``; an item's judge must be its file's name, and ids unique. Bad input is one
    ``UsageError`` line naming the file, the item and the field."""
    import yaml

    from stay._bounds import Damaged, read_stored, yaml_shape

    root = Path(directory)
    paths = sorted(root.glob("*.yaml")) if root.is_dir() else []
    if not paths:
        raise UsageError(f"{root}: no gold set here (a directory of <judge>.yaml files); pass --gold DIR")
    digest, items, seen = hashlib.sha256(), [], set()
    for path in paths:
        try:
            data = read_stored(path, MAX_GOLD_BYTES)
            text = data.decode("utf-8")
            if yaml_shape(text) is not None:
                raise UsageError(f"{path}: uses anchors or aliases, or nests too deeply; write each item out in full")
            document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when built
        except (Damaged, OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            mark = getattr(exc, "problem_mark", None)
            why = (exc.reason if isinstance(exc, Damaged) else f"not valid YAML at line {mark.line + 1}" if mark
                   else type(exc).__name__)
            raise UsageError(f"{path}: not a gold file ({why}); fix it") from None
        try:
            gold = GoldFile.model_validate(document)
        except ValidationError as exc:
            raise UsageError(f"{path}: {_where(exc, document)}; fix the field") from None
        for item in gold.items:
            if item.judge != path.stem:
                raise UsageError(f"{path}: item {item.id}: field 'judge': {item.judge!r}, but this file holds "
                                 f"{path.stem!r}'s items; move it to {item.judge}.yaml or fix the field")
            if item.id in seen:
                raise UsageError(f"{path}: item {item.id}: field 'id': used twice in the gold set; rename one")
            seen.add(item.id)
        digest.update(f"{path.name}\0{len(data)}\0".encode() + data)
        items.extend(gold.items)
    return Gold(tuple(items), digest.hexdigest(), str(root))


def _where(exc: ValidationError, document: Any) -> str:
    error = exc.errors()[0]
    loc = list(error["loc"])
    item = ""
    if len(loc) >= 2 and loc[0] == "items" and isinstance(loc[1], int):
        raw = document["items"][loc[1]] if isinstance(document, dict) else None
        named = raw.get("id") if isinstance(raw, dict) else None
        item = f"item {named if isinstance(named, str) else f'#{loc[1] + 1}'}: "
        loc = loc[2:]
    return f"{item}field '{'.'.join(map(str, loc)) or '(root)'}': {str(error['msg']).lower()}"


def judged_scorers(judge: Judge) -> list[ModelScorer]:
    """The registry's model-judged scorers, plug-ins' too, judged by ``judge``."""
    from stay.scoring._scorers import registered

    return [declared.make(judge) for declared in registered().values() if declared.field is not None]


def kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of (labelled defect, judged defect) pairs; None when undefined (chance
    agreement is 1: one label and one verdict throughout)."""
    n = len(pairs)
    if not n:
        return None
    agree = sum(a == b for a, b in pairs) / n
    label = sum(a for a, _b in pairs) / n
    judged = sum(b for _a, b in pairs) / n
    chance = label * judged + (1 - label) * (1 - judged)
    return None if chance >= 1 else (agree - chance) / (1 - chance)


def kappa_interval(pairs: list[tuple[bool, bool]]) -> tuple[float, float] | None:
    """The bootstrap interval (``INTERVAL``), or None when fewer than half the resamples have
    a kappa."""
    draw = random.Random(SEED)
    found = sorted(k for k in (kappa([draw.choice(pairs) for _ in pairs]) for _ in range(RESAMPLES))
                   if k is not None) if pairs else []
    if len(found) < RESAMPLES / 2:
        return None
    return found[round(0.025 * (len(found) - 1))], found[round(0.975 * (len(found) - 1))]


def _share(hits: int, of: int) -> float | None:
    return hits / of if of else None


def agreement(items: list[GoldItem], results: dict[str, Any]) -> dict[str, Any]:
    """One judge's entry: the counts, sensitivity, specificity, kappa and its interval, the
    failures apart, and the items it got wrong."""
    pairs, wrong, failed = [], [], {"unparseable": 0, "errors": 0}
    for item in items:
        result = results[item.id]
        if result.failure is not None:
            failed["errors" if result.failure == "error" else "unparseable"] += 1
            continue
        said = result.score < 0.5
        pairs.append((item.label == "defect", said))
        if said != (item.label == "defect"):
            wrong.append({"id": item.id, "label": item.label, "verdict": "defect" if said else "fine",
                          "reason": result.reason, "quote": result.quote})
    defects = sum(a for a, _b in pairs)
    found = kappa(pairs)
    return {"n": len(pairs), "defects": defects, "fine": len(pairs) - defects,
            "sensitivity": _share(sum(a and b for a, b in pairs), defects),
            "specificity": _share(sum(not a and not b for a, b in pairs), len(pairs) - defects),
            "kappa": found, "interval": kappa_interval(pairs) if found is not None else None,
            "failures": failed, "wrong": wrong}


def calibrate(gold: Gold, judge: Judge, *, backend: str) -> dict[str, Any]:
    """The calibration report of ``judge`` on ``gold``: per model-judged scorer, its
    agreement, or why it was not run (offline, or no gold items for it)."""
    from stay.scoring._core import OfflineJudge

    entries: dict[str, dict[str, Any]] = {}
    scorers = judged_scorers(judge)
    for scorer in scorers:
        items = gold.of(scorer.name)
        entry: dict[str, Any] = {"version": scorer.version, "gold_items": len(items), "kappa": None}
        entries[scorer.name] = entry
        if isinstance(judge, OfflineJudge):  # it reads no prose: asking it would calibrate a heuristic
            entry["not_run"] = f"{NOT_JUDGED_OFFLINE}: the offline judge reads no prose"
            continue
        if not items:
            entry["not_run"] = "no gold items for this judge"
            continue
        judging = scorer.judging()  # exactly the request a scored course sends
        for item in items:
            scorer.ask(judging, item.id, item.inputs, item.lesson)
        result = judging.result()
        if not result.judged:
            entry["not_run"] = result.not_judged or NOT_JUDGED
            continue
        entry.update(agreement(items, {r.item: r for r in result.items}))
    declared = {s.name for s in scorers}
    return {"calibration": 1, "judge": judge.name, "backend": backend, "kappa_to_gate": KAPPA_TO_GATE,
            "interval": INTERVAL, "gold": {"dir": gold.directory, "sha256": gold.sha256, "items": len(gold.items)},
            "judges": entries,
            "no_scorer": {name: len(gold.of(name)) for name in sorted({i.judge for i in gold.items} - declared)}}


def kappa_text(entry: dict[str, Any]) -> str:
    """"kappa 0.84 [0.71, 0.93]", as every output shows a calibrated judge."""
    interval = entry.get("interval")
    return f"kappa {entry['kappa']:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else " [n/a]")


def calibration_text(document: dict[str, Any], output: str) -> str:
    lines = [f"calibration of {document['judge']} on {document['gold']['dir']} ({document['gold']['items']} items, "
             f"sha256 {document['gold']['sha256'][:16]}); kappa: {document['interval']}; a scorer gates when its "
             f"judge's kappa is at least {document['kappa_to_gate']}", ""]
    run = {name: entry for name, entry in sorted(document["judges"].items()) if not entry.get("not_run")}
    if run:
        lines.append(f"{'judge':20} {'version':>7} {'items':>5} {'sensitivity':>11} {'specificity':>11}  "
                     f"{'kappa [95%]':24} failures")
    for name, entry in run.items():
        failures = entry["failures"]["unparseable"] + entry["failures"]["errors"]
        lines.append(f"{name:20} {'v' + str(entry['version']):>7} {entry['n']:>5} {fixed(entry['sensitivity']):>11} "
                     f"{fixed(entry['specificity']):>11}  "
                     f"{kappa_text(entry) if entry['kappa'] is not None else 'kappa n/a':24} {failures}")
    for name, entry in run.items():
        for miss in entry["wrong"]:
            lines.append(f"wrong: {name} {miss['id']} (label {miss['label']}, judged {miss['verdict']}): "
                         f"{' '.join(str(miss['reason']).split())[:200]}"
                         + (f" [quote: {' '.join(str(miss['quote']).split())[:120]}]" if miss.get("quote") else ""))
    reasons: dict[str, list[str]] = {}
    for name, entry in sorted(document["judges"].items()):
        if entry.get("not_run"):
            reasons.setdefault(entry["not_run"], []).append(name)
    lines += [f"could not run: {', '.join(names)} ({why})" for why, names in reasons.items()]
    if not run:
        lines.append("nothing calibrated: no kappa, so no scorer this judge judged may gate")
    if document["no_scorer"]:
        lines.append("gold items for judges no scorer declares (not run): "
                     + ", ".join(f"{name} {n}" for name, n in document["no_scorer"].items()))
    return "\n".join([*lines, f"wrote {output}"]) + "\n"


def run_calibrate(gold_dir: str | os.PathLike[str], judge: Judge, output: str | os.PathLike[str], *,
                  backend: str) -> str:
    """Calibrate, write the report atomically, and return what the command prints."""
    from stay.artefacts import write_text_atomic

    document = calibrate(load_gold(gold_dir), judge, backend=backend)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(output, json.dumps(document, indent=2, sort_keys=True) + "\n")
    return calibration_text(document, os.fspath(output))


class _Entry(BaseModel):
    model_config = ConfigDict(extra="allow")

    version: int
    kappa: float | None = None
    interval: tuple[float, float] | None = None


class CalibrationShape(BaseModel):
    model_config = ConfigDict(extra="allow")

    calibration: Literal[1]
    judge: str
    judges: dict[str, _Entry]


def read_calibration(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A calibration report, read bounded and held to its shape; one ``UsageError`` line otherwise."""
    from stay._bounds import Damaged, load_stored_json

    try:
        document = load_stored_json(path)
        CalibrationShape.model_validate(document)
    except FileNotFoundError:
        raise UsageError(f"{path}: no calibration report; run `stay evals calibrate` to write one") from None
    except Damaged as exc:
        raise UsageError(f"{path}: not a calibration report ({exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the calibration ({exc.strerror or type(exc).__name__})") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        raise UsageError(f"{path}: not a calibration report: field '{'.'.join(map(str, error['loc']))}': "
                         f"{str(error['msg']).lower()}") from None
    return dict(document)


@dataclass(frozen=True)
class Standing:
    """A scorer's calibration as ``compare`` shows it, and why it may not gate (None: it may)."""

    label: str
    not_gating: str | None = None


def _run_judge(report: dict[str, Any], scorer: str) -> set[str]:
    return {str(result.get("judge")) for brief in report["briefs"].values() for build in brief["builds"]
            for name, result in build["scorers"].items() if name == scorer}


def standings(baseline: dict[str, Any], candidate: dict[str, Any],
              calibration: dict[str, Any] | None) -> dict[str, Standing]:
    """Per model-judged scorer both runs judged (a judge-free one, which gates as before, and
    one a run did not judge, which has no test, have none): its judge's kappa when
    ``calibration`` calibrated the judge both runs were judged by at the scorer's version in
    both, else "uncalibrated"; one below ``KAPPA_TO_GATE``, or uncalibrated, does not gate."""
    from stay.scoring._report import not_judged
    from stay.scoring._scorers import JUDGE_FREE_NAMES

    # no judge to calibrate: a judge-free scorer gates as before; one a run did not judge has no test
    skip = JUDGE_FREE_NAMES | set(not_judged(baseline)) | set(not_judged(candidate))
    found = {}
    for scorer in sorted(set(baseline["scorers"]) & set(candidate["scorers"]) - skip):
        calibrated = calibration or {}
        entry = calibrated.get("judges", {}).get(scorer)
        judges = _run_judge(baseline, scorer) | _run_judge(candidate, scorer)
        matches = (entry is not None and entry.get("kappa") is not None and judges == {calibrated.get("judge")}
                   and baseline["scorers"][scorer] == candidate["scorers"][scorer] == entry.get("version"))
        if not matches:
            found[scorer] = Standing(UNCALIBRATED, "does not gate")
            continue
        value = float(entry["kappa"])
        found[scorer] = Standing(kappa_text(entry), None if value >= KAPPA_TO_GATE else
                                 f"does not gate: below {KAPPA_TO_GATE}")
    return found


def calibration_note(path: Path | None, calibration: dict[str, Any] | None) -> str:
    """The line every compare output prints about the calibration it used."""
    if calibration is None:
        return (f"calibration: none (no {REPORT_NAME} beside the candidate and no --calibration): model-judged "
                "scorers are uncalibrated and do not gate; run `stay evals calibrate`")
    gold = calibration.get("gold") or {}
    return (f"calibration: {path} (judge {calibration['judge']}, gold sha256 {str(gold.get('sha256', 'n/a'))[:16]}); "
            f"a model-judged scorer gates when its judge's kappa is at least {KAPPA_TO_GATE}")


def find_calibration(given: str | None, candidate: str | os.PathLike[str] | None) -> tuple[Path | None,
                                                                                         dict[str, Any] | None]:
    """``--calibration PATH`` read, or ``calibration.json`` beside the candidate's report
    when there is one, or nothing."""
    if given is not None:
        return Path(given), read_calibration(given)
    beside = Path(candidate).parent / REPORT_NAME if candidate is not None else None
    if beside is not None and beside.is_file():
        return beside, read_calibration(beside)
    return None, None


__all__ = ["Gold", "GoldItem", "Standing", "calibrate", "find_calibration", "kappa",
           "load_gold", "read_calibration", "run_calibrate", "standings"]
