"""Eval reports on disk (docs/evals.md): their shape, what their builds were made with (from the
courses' ledgers), writing and reading them, and the checks two runs pass before ``compare`` tests them.
A failed build is kept (``failed_entry``): leaving it out would lean towards a pass."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter, ValidationError, model_validator

from stay._bounds import Damaged, load_stored_json, read_stored
from stay._words import damaged_ledger
from stay.artefacts import write_text_atomic
from stay.errors import EnvironmentProblem, UsageError
from stay.models import DEFAULT_MODELS, Usage
from stay.requests import Role
from stay.scoring._core import ItemResult, ScoreResult
from stay.scoring._defaults import FAILURE_GAP
from stay.scoring.scorers import JUDGE_FREE_NAMES

Count = Annotated[int, Field(ge=0, strict=True)]
Dollars = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_KNOBS = TypeAdapter(dict[str, Annotated[float, Field(strict=True, allow_inf_nan=False)]])


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ScorerResult(_Open):
    items: list[ItemResult]
    judge: str = ""
    unparseable: Count = 0
    errors: Count = 0
    cost: Dollars | None = None
    judged: bool = True
    not_judged: str | None = None


FAILURE_CHARS = 300  # a failure is one line that names the error, never a log


class BuildFailure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    error: Annotated[str, Field(min_length=1, max_length=100)]
    message: Annotated[str, Field(max_length=FAILURE_CHARS, pattern=r"^[^\n]*$")]


class BuildShape(_Open):
    epoch: StrictInt = 0
    # what the run checks key builds by: a list here would be an unhashable key there
    seed: StrictStr | StrictInt | None = None
    course_sha256: StrictStr | None = None
    scorers: dict[str, ScorerResult]
    built_with: dict[str, dict[str, str]] | None = None
    quality: dict[str, float] | None = None
    failed: BuildFailure | None = None
    judged_in: str | None = None
    built_in: str | None = None
    built_by: list[StrictStr] | None = None
    course: str | None = None

    @model_validator(mode="after")
    def _failed_has_no_scores(self) -> BuildShape:
        # a failed build's scores would be counted by every reader that ignores ``failed``
        if self.failed is not None and self.scorers:
            raise ValueError("a failed build has no scorers (its scores cannot be trusted)")
        return self


class BriefShape(_Open):
    builds: list[BuildShape]


class FailureCounts(_Open):
    items: Count | None = None
    unparseable: Count | None = None
    errors: Count | None = None


class PromptsShape(_Open):
    dir: str | None = None
    sha256: dict[str, str] | None = None
    mixed: dict[str, list[str]] | None = None
    source: str | None = None


class ReportShape(_Open):
    label: str
    backend: str
    judge: str
    judge_model: str | None = None
    scorers: dict[str, StrictInt]
    epochs: Count | None = None
    seed: int | str | None = None
    briefs: dict[str, BriefShape]
    quality: dict[str, float] | None = None
    models: dict[str, str] | None = None
    prompts: PromptsShape | None = None
    means: dict[str, float | None] | None = None
    failures: dict[str, FailureCounts] | None = None
    totals: dict[str, Dollars | Count | None] | None = None


def shape_problem(document: object, shape: type[BaseModel] = ReportShape, whole: str = "the report") -> str | None:
    """The first field of ``document`` that breaks ``shape`` (``whole``: the document itself)."""
    try:
        shape.model_validate(document)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or whole
        return f"field '{where}': {error['msg'].lower()}"
    return None


PROMPTS = "prompts/"  # the ledger's prefix for a prompt or reference file
OFFLINE = "offline"
QUALITY_RECORD = Path(".runs") / "suite-quality.json"
"""The offline quality knob a suite build was made with: not a ledger input (the rigged backend
is no stage's source), so without it a rerun with another knob would reuse the old builds."""


def ledger_built_with(course_dir: Path) -> dict[str, dict[str, str]]:
    """Per artefact, the sources the ledger says it was built with (prompts, references, schema, model)."""
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


_RUN_ENTRY = re.compile(r"^## run \d+: \S+ \((.+)\)$", re.MULTILINE)  # a run log's heading: the backend
REPLAY = " (replay)"  # what a replaying backend adds to its name: the same backend answered


def course_built_by(course_dir: Path) -> list[str]:
    """The backends that wrote a course, from its run log: a rescored course says who built it,
    not who judged it. [] without a run log (a course from outside stay)."""
    path = course_dir / ".state" / "run-log.md"
    if not path.is_file():
        return []
    try:
        text = read_stored(path).decode("utf-8", "replace")  # bounded, like every stored file
    except (Damaged, OSError):
        return []  # unknown, never a guess: the run check leaves an unknown builder alone
    return sorted({name.removesuffix(REPLAY) for name in _RUN_ENTRY.findall(text)})


def recorded_quality(course_dir: Path) -> dict[str, float]:
    """The offline quality knob the suite recorded beside a course ({}: none recorded)."""
    path = course_dir / QUALITY_RECORD
    if not path.is_file():
        return {}
    try:  # bounded, like every stored file: a record is untrusted
        return _KNOBS.validate_python(load_stored_json(path))
    except ValidationError:
        raise Damaged(os.fspath(path), "not a quality record (knob names to numbers); delete the course "
                                       "directory and build it again") from None


def built_prompts(builds: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Prompt file -> the distinct hashes the builds' ledgers record ({}: none records ``built_with``)."""
    found: dict[str, set[str]] = {}
    for build in builds:
        for record in (build.get("built_with") or {}).values():
            for source, sha in record.items():
                if source.startswith(PROMPTS):
                    found.setdefault(source.removeprefix(PROMPTS), set()).add(sha)
    return {name: sorted(hashes) for name, hashes in sorted(found.items())}


def header_prompts(builds: Iterable[Mapping[str, Any]], requested: Mapping[str, str]) -> dict[str, Any]:
    """The header's prompt hashes: the builds' ledgers' (a file in several versions under ``mixed``),
    else those the run was asked to use."""
    built = built_prompts(builds)
    if not built:
        return {"sha256": dict(sorted(requested.items())), "source": "requested"}
    return {"sha256": {name: hashes[0] for name, hashes in built.items() if len(hashes) == 1},
            "mixed": {name: hashes for name, hashes in built.items() if len(hashes) > 1},
            "source": "ledger"}


def _prompt_versions(document: Mapping[str, Any]) -> dict[str, set[str]]:
    """Prompt file -> its hashes, shortened to the ledger's length so the two sources compare."""
    built = built_prompts(build for _brief, _index, build in _builds(document))
    if built:
        return {name: set(hashes) for name, hashes in built.items()}
    header = (document.get("prompts") or {}).get("sha256") or {}
    return {name: {str(sha)[:16]} for name, sha in header.items()}


def header_mismatches(document: Mapping[str, Any]) -> list[str]:
    """Prompt files the header names with a hash none of the run's builds was built with."""
    built = built_prompts(build for _brief, _index, build in _builds(document))
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
    """Lines every comparison output carries: who generated and judged each run, the prompt files
    that differ, a header naming prompts its courses were not built with, and whether the generator
    can see the change."""
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


VERSION = 2


def _known_sum(costs: Iterable[float | None]) -> float | None:
    """The total, or None when any part is unknown (a model with no price on file)."""
    values = list(costs)
    return None if None in values else round(sum(v for v in values if v is not None), 6)


def build_entry(scores: Mapping[str, ScoreResult], *, epoch: int, seed: str | None, course_sha256: str | None,
                build_usage: Usage | None = None, build_cost: float | None = 0.0, built: bool = False,
                course_dir: Path | None = None, judged_in: str | None = None,
                built_with: Mapping[str, Mapping[str, str]] | None = None,
                built_by: Iterable[str] | None = None) -> dict[str, Any]:
    """One build's part of a report: a brief built (or loaded, nothing paid) once, and scored; with
    ``course_dir``, what its ledger says it was built with and its run log by whom (``built_with`` and
    ``built_by``, when given, win over what ``course_dir`` would say)."""
    entry: dict[str, Any] = {
        "epoch": epoch, "seed": seed, "built": built, "course_sha256": course_sha256,
        "build": {"usage": (build_usage or Usage()).model_dump(),
                  "cost": None if build_cost is None else round(build_cost, 6)},  # None: a model has no price
        # each scorer's cost: at the judge's backend's prices (ScoreResult.cost)
        "scorers": {name: {**result.model_dump(mode="json"), "cost": None if result.cost is None
                           else round(result.cost, 6)} for name, result in sorted(scores.items())},
    }
    if built_with is None and course_dir is not None:
        built_with = ledger_built_with(course_dir)
    if built_with is not None:
        entry["built_with"] = {path: dict(record) for path, record in sorted(built_with.items())}
    if built_by is None and course_dir is not None:
        built_by = course_built_by(course_dir)
    if built_by:  # none recorded: unknown, which the backend check leaves to the header
        entry["built_by"] = sorted(set(built_by))
    if judged_in is not None:
        entry["judged_in"] = judged_in
    return entry


def failed_entry(error: BaseException, *, epoch: int, seed: str | None,
                 build_cost: float | None = 0.0) -> dict[str, Any]:
    """A failed build's entry: why, and nothing scored (``build_cost`` None: unknown)."""
    message = " ".join(str(error).split())
    if len(message) > FAILURE_CHARS:
        message = message[:FAILURE_CHARS - 3] + "..."
    return {"epoch": epoch, "seed": seed, "built": False, "course_sha256": None,
            "build": {"usage": Usage().model_dump(), "cost": build_cost}, "scorers": {},
            "failed": {"error": type(error).__name__[:100], "message": message}}


def judge_of(builds: Mapping[str, list[dict[str, Any]]]) -> tuple[str, str | None]:
    """(judge, judge model) of a run: "model" and its id, or the judge's own name."""
    names = sorted({r["judge"] for entries in builds.values() for e in entries for n, r in e["scorers"].items()
                    if n not in JUDGE_FREE_NAMES})
    models = sorted(name.removeprefix("model:") for name in names if name.startswith("model:"))
    if models and len(models) == len(names):
        return "model", ", ".join(models)
    return ", ".join(names) or "none", None


def not_judged(document: Mapping[str, Any]) -> dict[str, str]:
    """Scorer -> why, for every scorer no build of the run judged (the offline judge reads no prose)."""
    results: dict[str, list[Mapping[str, Any]]] = {}
    for _brief, _index, build in _builds(document):
        for name, result in build["scorers"].items():
            results.setdefault(name, []).append(result)
    return {name: str(found[0].get("not_judged") or "not judged") for name, found in sorted(results.items())
            if all(r.get("judged") is False for r in found)}


def report(*, label: str, backend: str, prompts_dir: str, prompt_hashes: Mapping[str, str],
           scorers: Mapping[str, int], builds: Mapping[str, list[dict[str, Any]]], epochs: int,
           seed: int | None = None, quality: Mapping[str, float] | None = None,
           models: Mapping[Role, str] = DEFAULT_MODELS) -> dict[str, Any]:
    """The whole report from each brief's builds; ``prompt_hashes`` and ``quality`` stand in only
    where no build records its own."""
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
        "sessions": {key: sorted({str(e[key]) for e in entries if e.get(key) is not None})
                     for key in ("built_in", "judged_in")},
        "means": means, "failures": failures,
        "totals": {"builds": len(entries),
                   "build_cost": _known_sum(e["build"]["cost"] for e in entries),  # unknown, never partial
                   # a judge with no price on file is unknown, never $0: the compare page's rule
                   "judge_cost": _known_sum(r.get("cost") for e in entries for r in e["scorers"].values()),
                   **{f"judge_{k}": sum(u[k] for u in judge_usage) for k in
                      ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}},
    }


def write_report(path: str | os.PathLike[str], document: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


def read_json(path: str | os.PathLike[str], kind: str, short: str, missing: str,
              shape: type[BaseModel] | None = None) -> Any:
    """A stored JSON document (an eval report, a calibration), read bounded and held to ``shape``; a file
    that is not one is a one-line ``UsageError``: ``kind`` names it, ``short`` in "cannot read the ...",
    ``missing`` without it."""
    try:
        document = load_stored_json(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: {missing}") from None
    except Damaged as exc:
        raise UsageError(f"{path}: not {kind} ({exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the {short} ({exc.strerror or type(exc).__name__})") from None
    problem = None if shape is None else shape_problem(document, shape, "")
    if problem is not None:
        raise UsageError(f"{path}: not {kind}: {problem}")
    return document


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The eval report at ``path`` (``pytest evals/`` writes one), read bounded and checked against
    the report's shape; a file that is not one raises ``stay.UsageError`` in one line."""
    document = read_json(path, "an eval report", "report", "no such report; run `pytest evals/` to write one")
    check_report(document, str(path))
    return dict(document)


def check_report(document: Any, where: str = "report") -> None:
    """``UsageError`` naming the first field that breaks the report's shape (``ReportShape``)."""
    if not isinstance(document, dict):
        raise UsageError(f"{where}: not an eval report (a JSON object is expected)")
    if document.get("version") != VERSION:
        raise UsageError(f"{where}: an eval report of version {repr(document.get('version'))[:40]}, expected "
                         f"{VERSION}; run the suite again with this version of stay")
    problem = shape_problem(document)
    if problem is not None:
        raise UsageError(f"{where}: not an eval report: {problem}")


REFUSE, WARN, INVALID = "refuse", "warn", "invalid"  # refused (exit 2), a warning, an invalid run (exit 5)
Run = tuple[str, dict[str, Any]]  # its name in messages ("baseline runs/a.json") and its report


@dataclass(frozen=True)
class Finding:
    check: str
    kind: str
    message: str
    allow: str | None = None  # the --allow name that accepts it, when one can


@dataclass(frozen=True)
class Check:
    name: str
    kind: str
    run: Callable[[Run, Run], list[str]]  # both runs -> one message per problem
    allow: str | None = None


def _builds(report: Mapping[str, Any]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    for brief, entry in sorted(report["briefs"].items()):
        for index, build in enumerate(entry["builds"]):
            yield brief, index, build


Checker = TypeVar("Checker", bound=Callable[..., list[str]])
CHECKS: list[Check] = []  # in the order declared: a refusal names its problems in this order


def _of_each_build(run: Callable[[dict[str, Any], str, dict[str, Any]], list[str]]) -> Callable[..., list[str]]:
    return lambda name, report: [f"{name}: briefs.{brief}.builds[{index}]{problem}"
                                 for brief, index, build in _builds(report) for problem in run(report, brief, build)]


def check(name: str, kind: str, *, allow: str | None = None,
          each: Literal["", "run", "build"] = "") -> Callable[[Checker], Checker]:
    """Declare a check of both runs; ``each`` "run": of each run alone, as its name and report; "build": of
    each build, as (report, brief, build), each problem said from the build's own path on."""
    def declare(run: Checker) -> Checker:
        alone = _of_each_build(run) if each == "build" else run
        both = (lambda baseline, candidate: alone(*baseline) + alone(*candidate)) if each else run
        CHECKS.append(Check(name, kind, both, allow))
        return run
    return declare


@check("duplicated-builds", REFUSE, each="run")
def duplicated_builds(name: str, report: dict[str, Any]) -> list[str]:
    found = []
    seen: dict[tuple[str, Any], str] = {}
    shas: dict[tuple[Any, Any], str] = {}
    for brief, index, build in _builds(report):
        where = f"briefs.{brief}.builds[{index}]"
        key = (brief, build.get("epoch", 0))
        if key in seen:
            found.append(f"{name}: {where}: epoch {key[1]} of brief {brief} again (first at {seen[key]}); "
                         "keep one build per (brief, epoch): score each course directory once")
        seen.setdefault(key, where)
        # the same course twice is one counted twice only when its seed says so too: under two
        # seeds, or none recorded (a rescored course), it may be a generator that ignores the
        # seed (the offline backend without --stay-quality), which ``same_courses`` warns on
        sha = build.get("course_sha256")
        if sha and build.get("seed") is not None and (sha, build["seed"]) in shas:
            found.append(f"{name}: {where}.course_sha256: the same course and seed as {shas[sha, build['seed']]}; "
                         "a course counted twice shrinks the interval: score each course directory once")
        if sha:
            shas.setdefault((sha, build.get("seed")), where)
    return found


@check("same-courses", WARN, each="run")
def same_courses(name: str, report: dict[str, Any]) -> list[str]:
    repeated = sorted(brief for brief, entry in report["briefs"].items()
                      if len({b.get("course_sha256") for b in entry["builds"] if b.get("course_sha256")})
                      < sum(bool(b.get("course_sha256")) for b in entry["builds"]))
    if not repeated:
        return []
    return [f"{name}: briefs.*.builds.course_sha256: {len(repeated)} of {len(report['briefs'])} briefs have the same "
            f"course at two epochs ({', '.join(repeated[:3])}{', ...' if len(repeated) > 3 else ''}): a generator "
            "that ignores the seed, or a course scored twice; those epochs measure no build-to-build variance"]


@check("partial-run", REFUSE, each="run")
def partial_run(name: str, report: dict[str, Any]) -> list[str]:
    """A brief with no builds at all is left to compare's own check (an invalid run, exit 5)."""
    epochs = report.get("epochs")
    if epochs is None:  # an old report that does not say: nothing to hold its builds to
        return []
    return [f"{name}: briefs.{brief}.builds: {len(entry['builds'])} builds, but the run's epochs is {epochs}; "
            "an interrupted or partial run: run the suite again to completion"
            for brief, entry in sorted(report["briefs"].items()) if entry["builds"] and len(entry["builds"]) != epochs]


def _bad_score(score: object, failure: object) -> str | None:
    if score is None:  # a judge that failed scores nothing; an item that did not fail must score
        return None if failure is not None else "null, and the item records no judge failure"
    if isinstance(score, bool) or not isinstance(score, int | float):
        return f"{score!r} is not a number"
    if not math.isfinite(score):
        return f"{score} is not finite"
    if not 0 <= score <= 1:
        return f"{score} is outside [0, 1]"
    return None


@check("bad-scores", REFUSE, each="build")
def bad_scores(report: dict[str, Any], brief: str, build: dict[str, Any]) -> list[str]:
    problems = []
    for scorer, result in sorted(build["scorers"].items()):
        for number, item in enumerate(result["items"]):
            why = _bad_score(item.get("score"), item.get("failure"))
            if why:
                problems.append(f".scorers.{scorer}.items[{number}].score: {why}; a score is a number in [0, 1]: "
                                "rescore the run (`stay evals score`)")
    return problems


@check("seeded-elsewhere", REFUSE, each="build")
def seeded_elsewhere(report: dict[str, Any], brief: str, build: dict[str, Any]) -> list[str]:
    """A seed ``run/slug/epoch`` (``stay.suite.build_seed``) must name the brief and epoch it is filed under."""
    seed = build.get("seed")
    if not isinstance(seed, str) or seed.count("/") < 2:
        return []  # no seed recorded (a rescored course), or not the suite's form
    _run, slug, epoch = seed.rsplit("/", 2)
    if slug == brief and epoch == str(build.get("epoch", 0)):
        return []
    return [f".seed: {seed!r} was seeded for brief {slug} epoch {epoch}, not brief {brief} epoch "
            f"{build.get('epoch', 0)}: file each build under its own brief, or run the suite again"]


@check("judge-fields", REFUSE, each="build")
def judge_fields(report: dict[str, Any], brief: str, build: dict[str, Any]) -> list[str]:
    """Each scorer's judge must be one the header names (``judge_of``'s forms)."""
    judge, model = report.get("judge"), report.get("judge_model")
    named = ({f"model:{m}" for m in str(model).split(", ")} if judge == "model" and model
             else {str(judge), *str(judge).split(", ")})  # one judge whose name has a comma, or several
    return [f".scorers.{scorer}.judge: {result['judge']!r}, but the header says judge {judge!r}"
            + (f", judge_model {model!r}" if model else "") + ": rescore the run with one judge (`stay evals score`)"
            for scorer, result in sorted(build["scorers"].items())
            if scorer not in JUDGE_FREE_NAMES and result.get("judge") and result["judge"] not in named]


@check("models", REFUSE, allow="models")
def models_differ(baseline: Run, candidate: Run) -> list[str]:
    before, after = baseline[1].get("models") or {}, candidate[1].get("models") or {}
    if not before or not after or before == after:
        return []
    roles = sorted(role for role in set(before) | set(after) if before.get(role) != after.get(role))
    return [f"{candidate[0]}: models: generation models differ from {baseline[0]} ("
            + ", ".join(f"{r} {before.get(r)} -> {after.get(r)}" for r in roles)
            + "); if that is what you are testing, pass --allow models"]


def _content(report: dict[str, Any]) -> object:
    return sorted((brief, str(build.get("epoch", 0)), str(build.get("course_sha256")),
                   repr(sorted((s, [i.get("score") for i in r["items"]]) for s, r in build["scorers"].items())))
                  for brief, _index, build in _builds(report))


@check("identical-runs", WARN)
def identical_runs(baseline: Run, candidate: Run) -> list[str]:
    if _content(baseline[1]) != _content(candidate[1]):
        return []
    return [f"{candidate[0]}: briefs: the same builds and scores as {baseline[0]} (A against A): "
            "compare a run with a different candidate"]


@check("identical-prompts", WARN)
def identical_prompts(baseline: Run, candidate: Run) -> list[str]:
    before = (baseline[1].get("prompts") or {}).get("sha256")
    after = (candidate[1].get("prompts") or {}).get("sha256")
    if not before or before != after:
        return []
    return [f"{candidate[0]}: prompts.sha256: built with the same prompt files as {baseline[0]}; a prompt change "
            "cannot show: build the candidate with --stay-prompts DIR"]


def failure_counts(report: Mapping[str, Any], briefs: Collection[str] | None = None) -> dict[str, tuple[int, int, int]]:
    """Scorer -> (unparseable, errors, items) of its judge items over ``briefs`` (None: every brief)."""
    counts: dict[str, Counter[str]] = {}
    for brief, _index, build in _builds(report):
        if briefs is not None and brief not in briefs:
            continue
        for scorer, result in build["scorers"].items():
            counts.setdefault(scorer, Counter()).update(str(i.get("failure")) for i in result["items"])
    return {scorer: (c["unparseable"], c["error"], c.total()) for scorer, c in counts.items()}


@check("failure-rates", WARN)
def failure_rates_differ(baseline: Run, candidate: Run) -> list[str]:
    before, after = ({s: (u + e) / n for s, (u, e, n) in failure_counts(run[1]).items() if n}
                     for run in (baseline, candidate))
    return [f"{candidate[0]}: failures.{scorer}: {after[scorer]:.0%} of judge items failed against "
            f"{before[scorer]:.0%} in {baseline[0]}; the judge's failures are not the same in both runs, so the means "
            "leave out different items: rescore the run with more failures"
            for scorer in sorted(set(before) & set(after)) if abs(before[scorer] - after[scorer]) > FAILURE_GAP]


@check("failed-builds", INVALID, each="build")
def failed_builds(report: dict[str, Any], brief: str, build: dict[str, Any]) -> list[str]:
    failed = build.get("failed")
    return [f".failed: epoch {build.get('epoch', 0)} of brief {brief} failed ({failed.get('error')}: "
            f"{failed.get('message')}); a run without its failed builds leans towards a pass: rebuild them (run the "
            "suite again: the builds that passed are reused), then compare"] if isinstance(failed, dict) else []


@check("quality-knobs", REFUSE, each="run")
def quality_knobs(name: str, report: dict[str, Any]) -> list[str]:
    """Builds under two ``--stay-quality`` knobs measure two generators; a header naming another
    knob than its builds' misnames them."""
    knobs: dict[str, str] = {}  # knob -> the first build made under it
    for brief, index, build in _builds(report):
        if "quality" in build:
            knobs.setdefault(json.dumps(build["quality"], sort_keys=True), f"briefs.{brief}.builds[{index}].quality")
    header = json.dumps(report.get("quality") or {}, sort_keys=True)
    if len(knobs) > 1:
        (one, first), (other, second) = list(knobs.items())[:2]
        return [f"{name}: {second}: built under quality knob {other}, but {first} under {one}: a run's builds "
                "measure one generator: rebuild the run under one --stay-quality"]
    if knobs and all("quality" in build for _brief, _index, build in _builds(report)) and header not in knobs:
        # then the header must be theirs
        (knob, where), = knobs.items()
        return [f"{name}: quality: the header says knob {header}, but its builds were made under {knob} ({where}): "
                "rebuild the run, or rescore it with `stay evals score`"]
    return []


def _judged_by_a_model(report: dict[str, Any]) -> bool:
    """A model judge can drift between sessions; the offline judge judges alike on any day."""
    return report.get("judge") == "model" or any(
        str(result.get("judge", "")).startswith("model:") for _brief, _index, build in _builds(report)
        for name, result in build["scorers"].items() if name not in JUDGE_FREE_NAMES)


def _sessions(report: dict[str, Any], key: str) -> set[str | None]:
    # a failed build was never judged (``failed-builds`` makes its run invalid): it has no session
    return {build.get(key) if isinstance(build.get(key), str) else None for _brief, _index, build in _builds(report)
            if not isinstance(build.get("failed"), dict)}


def _in(sessions: set[str | None]) -> str:
    known = sorted(s for s in sessions if s is not None)
    unknown = "an unknown session (a report from before sessions were recorded)" if None in sessions else ""
    named = ("session " if len(known) == 1 else "sessions ") + ", ".join(known) if known else ""
    return " and ".join(part for part in (named, unknown) if part)


def _apart(baseline: Run, candidate: Run, key: str) -> str | None:
    """The start of a message on runs whose builds record different (or unknown) ``key`` sessions."""
    before, after = _sessions(baseline[1], key), _sessions(candidate[1], key)
    if len(before | after) == 1 and None not in before:
        return None
    verb = key.removesuffix("_in")
    return f"{candidate[0]}: briefs.*.builds.{key}: {verb} in {_in(after)}, {baseline[0]} in {_in(before)}: "


def _path(name: str) -> str:
    return shlex.quote(name.split(" ", 1)[-1])


@check("sessions", REFUSE, allow="sessions")
def judged_apart(baseline: Run, candidate: Run) -> list[str]:
    """Judged in different (or unknown) sessions: a judge that shifted between days shifts one whole run."""
    apart = _apart(baseline, candidate, "judged_in")
    if apart is None or not (_judged_by_a_model(baseline[1]) or _judged_by_a_model(candidate[1])):
        return []
    return [apart + "judged in different sessions (judge drift between days is not in the test, so it is not accounted "
            f"for): re-judge both in one session with `stay evals rejudge {_path(baseline[0])} "
            f"{_path(candidate[0])}`, or pass --allow sessions"]


def _builders(report: dict[str, Any]) -> set[str]:
    """The backends the builds record (``built_by``); the header's ``backend`` is ``compare``'s to hold."""
    return {str(name) for _brief, _index, build in _builds(report) if not isinstance(build.get("failed"), dict)
            for name in build.get("built_by") or ()}


@check("backend", REFUSE, allow="backend")
def built_by_other_backends(baseline: Run, candidate: Run) -> list[str]:
    """Builds made by different backends: a difference would be the provider's, not the prompts'."""
    before, after = _builders(baseline[1]), _builders(candidate[1])
    if len(before | after) < 2:
        return []
    return [f"{candidate[0]}: briefs.*.builds.built_by: built by {' and '.join(sorted(after)) or 'unknown'}, "
            f"{baseline[0]} by {' and '.join(sorted(before)) or 'unknown'}: a difference would be the backends', "
            "not the prompts': build both runs with one backend (--stay-backend), or pass --allow backend"]


@check("built-apart", WARN)
def built_apart(baseline: Run, candidate: Run) -> list[str]:
    """Built in different sessions: warned on, not refused (rebuilding both arms costs the generation
    again, and a prompt change is rebuilt anyway)."""
    apart = _apart(baseline, candidate, "built_in")
    # the offline backend (and the quality knob) is a pure function of its seed
    if apart is None or OFFLINE in (baseline[1].get("backend"), candidate[1].get("backend")):
        return []
    return [apart + "generator drift between the sessions is not accounted for; build both arms in one session with "
            "`pytest evals --stay-prompts CANDIDATE_DIR --stay-baseline-prompts BASELINE_DIR`"]


def run_checks(baseline: Run, candidate: Run) -> list[Finding]:
    return [Finding(check.name, check.kind, message, check.allow)
            for check in CHECKS for message in check.run(baseline, candidate)]

