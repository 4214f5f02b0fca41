"""Judging for the evals: the judges (offline, the judging model behind the request cache, Message
Batches), judging sessions (docs/evals.md, "Drift between sessions") and ``stay evals calibrate``
(docs/evals.md, "Calibrating the judges")."""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from stay._bounds import Damaged, read_stored, yaml_shape
from stay._display import fixed
from stay.artefacts import write_text_atomic
from stay.errors import UsageError
from stay.models import AnthropicBackend, CachedBackend, ModelClient, RequestCache, backend_from, prefetch
from stay.scoring._core import NOT_JUDGED as NOT_JUDGED_OFFLINE
from stay.scoring._core import (
    CourseOnDisk,
    Judge,
    JudgeReply,
    ModelJudge,
    ModelScorer,
    OfflineJudge,
    ScoreResult,
    model_judge_name,
)
from stay.scoring._defaults import CALIBRATION, KAPPA_TO_GATE
from stay.scoring._report import OFFLINE, build_entry, not_judged, read_json, read_report, report, write_report
from stay.scoring.scorers import JUDGE_FREE_NAMES, default_scorers, registered, score_course, scorer_versions
from stay.settings import Settings, checked_backend


def backend_name(requested: str | None = None, settings: Settings | None = None, flag: str = "--stay-backend") -> str:
    """The backend asked for (checked: one line naming ``flag`` when it is none), else the settings'."""
    return checked_backend(requested, flag) if requested else (settings or Settings.from_env()).chosen_backend


def make_judge(backend: str, cache_dir: Path, *, judge_model: str | None = None,
               settings: Settings | None = None, salt: str = "", client: ModelClient | None = None) -> Judge:
    """The offline judge, or the judging model behind the request cache (a judged item is never paid
    for twice). ``salt`` keys the answers apart by judging session: a new session is answered afresh,
    the same one run again pays nothing. ``client`` stands in for the backend (tests)."""
    if backend == OFFLINE:
        return OfflineJudge()
    chosen = settings or Settings.from_env()
    # the judge's own backend, with the retry settings, as the build's
    model_client = client or backend_from(chosen.replace(backend=checked_backend(backend, "the judge's backend")))
    return ModelJudge(CachedBackend(model_client, RequestCache(cache_dir, salt=salt)),
                      judge_model or chosen.model("judging"), via=backend)


@dataclass
class _Recorder:
    """A judge that only records what it is asked (the first pass of batch scoring)."""

    name = "recorder"
    requests: list[Any] = field(default_factory=list)

    def ask(self, request: Any) -> JudgeReply:
        self.requests.append(request)
        return JudgeReply(None, "(recorded for a batch)", "none")


def batch_score(course_dir: Path, client: Any, cache: RequestCache, *, poll_seconds: float = 30.0,
                sleep: Callable[[float], None] = time.sleep, judge_model: str | None = None,
                settings: Settings | None = None) -> dict[str, ScoreResult]:
    """Score a course through one Message Batch: a first pass records the requests, the batch answers
    them into the request cache, and a second pass scores from it with no live call."""
    recorder = _Recorder()
    course = CourseOnDisk.load(course_dir)
    score_course(course, default_scorers(recorder))
    chosen = settings or Settings.from_env()
    model = judge_model or chosen.model("judging")
    claude = backend_from(chosen.replace(backend="anthropic"), client=client)
    # the batch calls retry by the settings, as the build's do
    prefetch(client, [(request, model) for request in recorder.requests], cache, poll_seconds=poll_seconds, sleep=sleep,
             retries=claude if isinstance(claude, AnthropicBackend) else None)
    judge = ModelJudge(CachedBackend(claude, cache), model)
    return score_course(course, default_scorers(judge))


REJUDGED = ".rejudged"  # baseline.json -> baseline.rejudged.json


def session_id(judge: str, arms: Mapping[str, Iterable[str]]) -> str:
    """The id of a session in which ``judge`` judged ``arms`` (label -> what each build judged)."""
    canonical = json.dumps({"judge": judge, "arms": {label: sorted(set(builds)) for label, builds in arms.items()}},
                           sort_keys=True)
    return "s-" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def judge_name(backend: str, judge_model: str | None = None, settings: Any = None) -> str:
    """The name ``make_judge``'s judge would give itself, without making it (no key needed)."""
    if backend == OFFLINE:
        return OfflineJudge().name
    return model_judge_name(judge_model or (settings or Settings.from_env()).model("judging"), backend)


def interleaved(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[tuple[int, str, int]]:
    """(run, brief, build index) per brief and epoch, the baseline's build then the candidate's: a
    judge that drifts during the session drifts alike for both."""
    def by_epoch(report: Mapping[str, Any], brief: str) -> list[int]:
        builds = report["briefs"].get(brief, {}).get("builds", [])
        return sorted(range(len(builds)), key=lambda i: (builds[i].get("epoch", 0), i))

    order = []
    for brief in sorted(set(baseline["briefs"]) | set(candidate["briefs"])):
        runs = [by_epoch(baseline, brief), by_epoch(candidate, brief)]
        for k in range(max(map(len, runs))):
            order += [(run, brief, builds[k]) for run, builds in enumerate(runs) if k < len(builds)]
    return order


def course_dir(report_path: Path, build: Mapping[str, Any], where: str) -> Path:
    """The course directory a build names, relative to the report: a report is untrusted, so it must
    be a course directory reached without a symbolic link."""
    course = build.get("course")
    if not isinstance(course, str) or not course:
        raise UsageError(f"{report_path}: {where}.course: no course directory recorded (a report written before "
                         "reports recorded them); run the suite again, or rescore the courses with `stay evals score`")
    base = Path(os.path.realpath(report_path.parent))
    path = Path(course) if os.path.isabs(course) else base / course
    expected = Path(os.path.normpath(path))
    if Path(os.path.realpath(path)) != expected:
        raise UsageError(f"{report_path}: {where}.course: {course!r} goes through a symbolic link; name the course "
                         "directory itself")
    if not (expected / "course.yaml").is_file() or (expected / "course.yaml").is_symlink():
        raise UsageError(f"{report_path}: {where}.course: {course!r} is not a course directory (no course.yaml); "
                         "keep the courses where the suite built them, or rescore them with `stay evals score`")
    return expected


def relative_course(course: Path, report_path: Path) -> str:
    return os.path.relpath(os.path.realpath(course), os.path.realpath(report_path.parent))


def rejudge(baseline_path: Path, candidate_path: Path, *, backend: str, judge_model: str | None = None,
            output_dir: Path | None = None, client: Any = None, settings: Any = None,
            progress: Any = None) -> tuple[str, list[tuple[Path, dict[str, Any]]]]:
    """Judge both runs' saved courses in one session, interleaved, and write both reports anew: the
    session's id, and the paths and documents written."""
    chosen = settings or Settings.from_env()
    paths = (Path(baseline_path), Path(candidate_path))
    outputs = tuple((output_dir or p.parent) / f"{p.name.removesuffix('.json').removesuffix(REJUDGED)}{REJUDGED}.json"
                    for p in paths)
    if outputs[0].resolve() == outputs[1].resolve():
        raise UsageError(f"{paths[0]} and {paths[1]} would both be rejudged into {outputs[0]}; rename one, or "
                         "give them different directories")
    documents = tuple(read_report(path) for path in paths)
    courses: dict[tuple[int, str, int], Any] = {}  # in the interleaved order
    arms: dict[str, list[str]] = {f"{side}:{document['label']}": [] for side, document
                                  in zip(("baseline", "candidate"), documents, strict=True)}
    for run, brief, index in interleaved(*documents):
        build = documents[run]["briefs"][brief]["builds"][index]
        where = f"briefs.{brief}.builds[{index}]"
        course = CourseOnDisk.load(course_dir(paths[run], build, where))
        if build.get("course_sha256") and course.sha256 != build["course_sha256"]:
            raise UsageError(f"{paths[run]}: {where}.course: {course.root} is not the course the report scored (its "
                             "files changed since: course_sha256 differs); rebuild it with the suite")
        courses[run, brief, index] = course
        list(arms.values())[run].append(f"{brief}/{build.get('epoch', 0)}/{course.sha256}")
    session = session_id(judge_name(backend, judge_model, chosen), arms)
    rescored: tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]] = ({}, {})
    versions: dict[str, int] = {}
    for (run, brief, index), course in courses.items():
        judge = make_judge(backend, course.root / ".runs" / "judge-cache", judge_model=judge_model, settings=chosen,
                           salt=session, client=client)
        scorers = default_scorers(judge, data_dir=chosen.resolved_data_dir())
        versions = scorer_versions(scorers)
        build = documents[run]["briefs"][brief]["builds"][index]
        fresh = build_entry(score_course(course, scorers), epoch=int(build.get("epoch", 0)), seed=None,
                            course_sha256=course.sha256)
        rescored[run].setdefault(brief, []).append({**build, "scorers": fresh["scorers"], "judged_in": session,
                                                    "course": relative_course(course.root, outputs[run])})
        if progress is not None:
            progress(f"judged {course.root} ({('baseline', 'candidate')[run]}, session {session})")
    written = []
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
    for run, document in enumerate(documents):
        prompts = document.get("prompts") or {}
        new = report(label=document["label"], backend=document["backend"], prompts_dir=str(prompts.get("dir", "n/a")),
                     prompt_hashes=prompts.get("sha256") or {}, scorers=versions, builds=rescored[run],
                     epochs=int(document.get("epochs") or 0), seed=document.get("seed"),
                     quality=document.get("quality"), models=document.get("models") or {})
        write_report(outputs[run], new)
        written.append((outputs[run], new))
    return session, written


REPORT_NAME = Path(CALIBRATION).name  # what compare looks for beside the candidate's report
RESAMPLES = 2_000
SEED = 0
INTERVAL = (f"95% percentile interval from a seeded bootstrap over items ({RESAMPLES} resamples, seed {SEED}; "
            "resamples whose kappa is undefined left out)")
MAX_GOLD_BYTES = 2 * 2**20  # a gold file is a few hundred items of a few hundred words


class GoldItem(BaseModel):
    """One labelled item: ``inputs`` exactly what its scorer's judge is given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9._-]+$")]
    judge: StrictStr
    kinds: Annotated[list[StrictStr], Field(min_length=1)]
    label: Literal["fine", "defect"]
    inputs: dict[str, Any]
    lesson: StrictStr | None = None


class GoldFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: dict[str, StrictStr]  # what makes an item each label: labels are given by them alone
    items: Annotated[list[GoldItem], Field(min_length=1)]


@dataclass(frozen=True)
class Gold:
    items: tuple[GoldItem, ...]
    sha256: str
    directory: str

    def of(self, judge: str) -> list[GoldItem]:
        return [item for item in self.items if item.judge == judge]


def load_gold(directory: str | os.PathLike[str]) -> Gold:
    """Every ``*.yaml`` under ``directory``, read bounded and held to ``GoldFile``: an item's judge is
    its file's name, ids are unique; bad input is one line naming the file, the item and the field."""
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
    return [declared.make(judge) for declared in registered().values() if declared.field is not None]


def kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of (labelled defect, judged defect) pairs; None when undefined (chance agreement 1)."""
    n = len(pairs)
    if not n:
        return None
    agree = sum(a == b for a, b in pairs) / n
    label = sum(a for a, _b in pairs) / n
    judged = sum(b for _a, b in pairs) / n
    chance = label * judged + (1 - label) * (1 - judged)
    return None if chance >= 1 else (agree - chance) / (1 - chance)


def kappa_interval(pairs: list[tuple[bool, bool]]) -> tuple[float, float] | None:
    """The bootstrap interval (``INTERVAL``); None when fewer than half the resamples have a kappa."""
    draw = random.Random(SEED)
    found = sorted(k for k in (kappa([draw.choice(pairs) for _ in pairs]) for _ in range(RESAMPLES))
                   if k is not None) if pairs else []
    if len(found) < RESAMPLES / 2:
        return None
    return found[round(0.025 * (len(found) - 1))], found[round(0.975 * (len(found) - 1))]


def _share(hits: int, of: int) -> float | None:
    return hits / of if of else None


def agreement(items: list[GoldItem], results: dict[str, Any]) -> dict[str, Any]:
    """One judge's entry: counts, sensitivity, specificity, kappa, failures, and what it got wrong."""
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
    """Per model-judged scorer, its judge's agreement with ``gold``, or why it was not run."""
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
        entry.update(agreement(items, {r.item: r for r in judging.result().items}))
    declared = {s.name for s in scorers}
    return {"calibration": 1, "judge": judge.name, "backend": backend, "kappa_to_gate": KAPPA_TO_GATE,
            "interval": INTERVAL, "gold": {"dir": gold.directory, "sha256": gold.sha256, "items": len(gold.items)},
            "judges": entries,
            "no_scorer": {name: len(gold.of(name)) for name in sorted({i.judge for i in gold.items} - declared)}}


def kappa_text(entry: dict[str, Any]) -> str:
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
    return dict(read_json(path, "a calibration report", "calibration",
                          "no calibration report; run `stay evals calibrate` to write one", CalibrationShape))


@dataclass(frozen=True)
class Standing:
    """A scorer's calibration as ``compare`` shows it, and why it may not gate (None: it may)."""

    label: str
    not_gating: str | None = None


def standings(baseline: dict[str, Any], candidate: dict[str, Any],
              calibration: dict[str, Any] | None) -> dict[str, Standing]:
    """Per model-judged scorer both runs judged: its judge's kappa when ``calibration`` calibrated the
    judge both runs used at the scorer's version in both, else "uncalibrated" (which does not gate)."""
    # no judge to calibrate: a judge-free scorer gates as before; one a run did not judge has no test
    skip = JUDGE_FREE_NAMES | set(not_judged(baseline)) | set(not_judged(candidate))
    found = {}
    for scorer in sorted(set(baseline["scorers"]) & set(candidate["scorers"]) - skip):
        calibrated = calibration or {}
        entry = calibrated.get("judges", {}).get(scorer)
        judges = {str(build["scorers"][scorer].get("judge")) for report in (baseline, candidate)
                  for brief in report["briefs"].values() for build in brief["builds"] if scorer in build["scorers"]}
        matches = (entry is not None and entry.get("kappa") is not None and judges == {calibrated.get("judge")}
                   and baseline["scorers"][scorer] == candidate["scorers"][scorer] == entry.get("version"))
        if not matches:
            found[scorer] = Standing("uncalibrated", "does not gate")
            continue
        value = float(entry["kappa"])
        found[scorer] = Standing(kappa_text(entry), None if value >= KAPPA_TO_GATE else
                                 f"does not gate: below {KAPPA_TO_GATE}")
    return found


def calibration_note(path: Path | None, calibration: dict[str, Any] | None) -> str:
    if calibration is None:
        return (f"calibration: none (no {REPORT_NAME} beside the candidate and no --calibration): model-judged "
                "scorers are uncalibrated and do not gate; run `stay evals calibrate`")
    gold = calibration.get("gold") or {}
    return (f"calibration: {path} (judge {calibration['judge']}, gold sha256 {str(gold.get('sha256', 'n/a'))[:16]}); "
            f"a model-judged scorer gates when its judge's kappa is at least {KAPPA_TO_GATE}")


def find_calibration(given: str | None, candidate: str | os.PathLike[str] | None) -> tuple[Path | None,
                                                                                         dict[str, Any] | None]:
    """``--calibration PATH``, or ``calibration.json`` beside the candidate's report, or nothing."""
    if given is not None:
        return Path(given), read_calibration(given)
    beside = Path(candidate).parent / REPORT_NAME if candidate is not None else None
    if beside is not None and beside.is_file():
        return beside, read_calibration(beside)
    return None, None

