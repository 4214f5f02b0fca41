"""The evals suite (``pytest evals/``): build each brief once per epoch, score every build, and report;
above both the pipeline and the scorers. Epochs differ by a seed (offline the quality knob's noise,
with a model a salt of the request cache's key, never the prompt): a rerun pays for nothing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from stay._bounds import Damaged
from stay.artefacts import Brief, write_text_atomic
from stay.briefs import slugify
from stay.models import CachedBackend, RequestCache, Usage, backend_from
from stay.pipeline import build_course
from stay.scoring import DEFAULT_EPOCHS as DEFAULT_EPOCHS  # re-exported: declared with the gate's defaults
from stay.scoring import (
    OFFLINE,
    QUALITY_RECORD,
    CourseOnDisk,
    Judge,
    OfflineJudge,
    Scorer,
    build_entry,
    checked_backend,
    content_hash,
    default_scorers,
    failed_entry,
    judge_name,
    recorded_quality,
    relative_course,
    report,
    score_course,
    scorer_versions,
    session_id,
    write_report,
)
from stay.settings import Settings
from stay.stages import Prompts
from stay.testing import RiggedBackend


def _sent(cfg: Any) -> Prompts:
    settings = Settings.from_env()
    return Prompts.load(cfg.prompts_dir or settings.prompts_dir, data_dir=settings.data_dir)


def build_seed(run_seed: int, slug: str, epoch: int) -> str:
    return f"{run_seed}/{slug}/{epoch}"


def epoch_dir(courses_dir: Path, epoch: int) -> Path:
    return courses_dir / f"e{epoch:02d}"


def evaluate_build(brief_path: Path, *, epoch: int, courses_dir: Path, backend: str,
                   prompts_dir: Path | None, judge: Judge, run_seed: int = 0, rebuild: bool = True,
                   quality: Mapping[str, float] | None = None, scorers: list[Scorer] | None = None,
                   settings: Settings | None = None) -> tuple[str, dict[str, Any]]:
    """Build (or, with ``rebuild=False``, load) one epoch of a brief's course and score it: (slug, its
    report entry). A course already on disk regenerates what is stale and nothing else."""
    chosen = (settings or Settings.from_env()).replace(prompts_dir=prompts_dir)
    brief = Brief.from_yaml(brief_path)
    slug = slugify(brief.title)
    seed = build_seed(run_seed, slug, epoch)
    where = epoch_dir(courses_dir, epoch)
    usage, built = Usage(), False
    cost: float | None = 0.0
    knob = {k: float(v) for k, v in sorted((quality or {}).items())} if backend == OFFLINE else {}
    if rebuild and backend == OFFLINE and (where / slug / "course.yaml").is_file() \
            and _built_under(where / slug) != knob:
        # built under another knob: nothing in the ledger is stale, so start the build afresh
        shutil.rmtree(where / slug)
    if rebuild or not (where / slug / "course.yaml").is_file():
        generator: Any
        cache: bool | None = None
        if backend == OFFLINE:
            # the offline suite's one test knob (--stay-quality: worse generation on purpose,
            # to test the harness) is test support, so it comes from stay.testing
            generator = RiggedBackend(quality=dict(quality or {}), seed=seed)
        else:  # the epoch's salt keys its requests apart in the cache; the prompt is untouched
            generator = CachedBackend(backend_from(chosen.replace(backend=checked_backend(backend, "--stay-backend"))),
                                      RequestCache(where / slug / ".runs" / "cache", salt=seed))
            cache = False
        result = build_course(brief, courses_dir=where, yes=True, backend=generator, settings=chosen,
                              prompts_dir=prompts_dir, cache=cache, progress=lambda _line: None)
        usage, cost, built = result.usage, result.cost, True
        if backend == OFFLINE:
            write_text_atomic(where / slug / QUALITY_RECORD, json.dumps(knob, sort_keys=True) + "\n")
    course = CourseOnDisk.load(where / slug)
    scores = score_course(course, scorers or default_scorers(judge, data_dir=chosen.resolved_data_dir()))
    entry = build_entry(scores, epoch=epoch, seed=seed, course_sha256=course.sha256, build_usage=usage,
                        build_cost=cost, built=built, course_dir=where / slug)
    if backend == OFFLINE:  # what this build was made with, which a rescore may not have asked for
        entry["quality"] = recorded_quality(where / slug)
    return slug, entry


def part_name(brief: Path, epoch: int) -> str:
    return f"{brief.stem}-e{epoch:02d}.json"


def suite_session(arms: Iterable[Any]) -> str:
    """The judging session of one suite run: a hash of its judge and, per arm, every build it asked
    for. The same command over the same prompts is the same session; another prompt or seed is another."""
    chosen = list(arms)
    builds = {}
    for cfg in chosen:
        prompts = content_hash(_sent(cfg).hashes())
        knob = json.dumps(dict(sorted(cfg.quality.items())), sort_keys=True)
        builds[cfg.label] = [f"{brief.stem}/{epoch}/seed {cfg.seed}/prompts {prompts}/quality {knob}/rescore "
                             f"{bool(cfg.rescore)}" for brief in cfg.briefs for epoch in range(1, cfg.epochs + 1)]
    return session_id(judge_name(chosen[0].judging, chosen[0].judge_model), builds)


def incomplete_record(output: Path) -> Path:
    """Where a run that wrote no report lists its failed builds and those that did not run."""
    return output.with_suffix(".incomplete.json")


def run_build(cfg: Any, brief: Path, epoch: int, judge: Judge) -> tuple[str, dict[str, Any]]:
    """One build of the suite, recorded in the run's parts directory: its entry, or its failure and
    the error raised again so the test fails too. A build stopped by Ctrl-C records nothing."""
    cfg.parts.mkdir(parents=True, exist_ok=True)
    try:
        slug, entry = evaluate_build(brief, epoch=epoch, courses_dir=cfg.courses, backend=cfg.backend,
                                     prompts_dir=cfg.prompts_dir, judge=judge, run_seed=cfg.seed,
                                     rebuild=not cfg.rescore, quality=cfg.quality)
    except Exception as error:  # any error: a build that raised is a failed build, never a missing one
        slug = _slug(brief)
        entry = failed_entry(error, epoch=epoch, seed=build_seed(cfg.seed, slug, epoch), build_cost=None)
        write_text_atomic(cfg.parts / part_name(brief, epoch), json.dumps({"slug": slug, "build": entry},
                                                                          sort_keys=True))
        raise
    write_text_atomic(cfg.parts / part_name(brief, epoch), json.dumps({"slug": slug, "build": entry}, sort_keys=True))
    return slug, entry


def unfinished_builds(parts: Path, briefs: Iterable[Path], epochs: int) -> tuple[dict[str, dict[str, str]], list[str]]:
    """The builds a run cannot report: failed (part name -> failure) and never run. A report without
    them would leave out the worst builds and lean towards a pass, so ``finish_run`` writes none."""
    failed, missing = {}, []
    for name in (part_name(brief, epoch).removesuffix(".json") for brief in briefs for epoch in range(1, epochs + 1)):
        part = _read_part(parts / f"{name}.json")
        if part is None:
            missing.append(name)
        elif isinstance(part.get("build"), dict) and isinstance(part["build"].get("failed"), dict):
            failed[name] = part["build"]["failed"]
    return failed, missing


def finish_run(cfg: Any) -> tuple[dict[str, Any] | None, str]:
    """The suite's end: the report from a complete run, or nothing written (an earlier report is kept)
    and the unfinished builds listed in ``incomplete_record``; and the lines that say which."""
    failed, missing = unfinished_builds(cfg.parts, cfg.briefs, cfg.epochs)
    record = incomplete_record(cfg.output)
    if failed or missing:
        shutil.rmtree(cfg.parts, ignore_errors=True)
        wanted = len(cfg.briefs) * cfg.epochs
        write_text_atomic(record, json.dumps({"output": str(cfg.output), "builds": wanted, "failed": failed,
                                              "did_not_run": missing}, indent=2, sort_keys=True) + "\n")
        counts = " and ".join(([f"{len(failed)} failed"] if failed else [])
                              + ([f"{len(missing)} did not run"] if missing else []))
        lines = [f"stay evals: {cfg.output} not written (an earlier report is kept as it was): of {wanted} builds, "
                 f"{counts}; listed in {record}"]
        lines += [f"  failed: {name}: {why.get('error')}: {why.get('message')}" for name, why in failed.items()]
        if missing:
            lines.append(f"  did not run: {', '.join(missing[:6])}{', ...' if len(missing) > 6 else ''}")
        lines.append("fix them and run the suite again: the builds that passed are reused")
        return None, "\n".join(lines)
    builds: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(cfg.parts.glob("*.json")):
        part = json.loads(path.read_text(encoding="utf-8"))
        builds.setdefault(part["slug"], []).append(part["build"])
    document = write_run_report(cfg, builds)
    shutil.rmtree(cfg.parts, ignore_errors=True)
    record.unlink(missing_ok=True)  # an earlier incomplete run's list no longer says anything true
    return document, (f"stay evals: wrote {cfg.output} ({len(builds)} briefs x {cfg.epochs} epochs; means: "
                      + ", ".join(f"{k} {v:.3f}" for k, v in document["means"].items() if v is not None) + ")")


def finish_runs(cfgs: Iterable[Any]) -> list[str]:
    """``finish_run`` for every arm, all or none: the arms share one judging session, so an older
    report of one arm must never pass for the other's partner."""
    arms = list(cfgs)
    unfinished = [any(unfinished_builds(cfg.parts, cfg.briefs, cfg.epochs)) for cfg in arms]
    if len(arms) == 1 or not any(unfinished):
        return [finish_run(cfg)[1] for cfg in arms]
    lines = []
    for cfg, incomplete in zip(arms, unfinished, strict=True):
        if incomplete:
            lines.append(finish_run(cfg)[1])
        else:
            shutil.rmtree(cfg.parts, ignore_errors=True)
            lines.append(f"stay evals: {cfg.output} not written: its builds are complete, but the other arm's are "
                         "not, and the two arms are judged in one session; fix them and run the suite again")
    return lines


def write_run_report(cfg: Any, builds: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The suite's report from its builds and configuration; each build records where its course is
    and the sessions it was judged (and built) in."""
    settings = Settings.from_env()
    given = cfg.prompts_dir or settings.prompts_dir
    where = str(given or "prompts (packaged)")
    if getattr(cfg, "rescore", False):
        where = "(not generated: courses scored as saved" + (f"; {given} not used)" if given else ")")
    session, courses = getattr(cfg, "session", None), getattr(cfg, "courses", None)
    for slug, entries in builds.items():  # where each course is, and the session it was judged (and built) in
        for entry in entries:
            if courses is not None:
                entry["course"] = relative_course(epoch_dir(courses, entry["epoch"]) / slug, cfg.output)
            if session:
                entry.update({"judged_in": session, **({"built_in": session} if entry.get("built") else {})})
    document = report(label=cfg.label, backend=cfg.backend, prompts_dir=where,
                      prompt_hashes=_sent(cfg).hashes(),
                      scorers=scorer_versions(default_scorers(OfflineJudge())), builds=builds, epochs=cfg.epochs,
                      seed=cfg.seed, quality=cfg.quality if cfg.backend == OFFLINE else None, models=settings.models)
    write_report(cfg.output, document)
    return document


def _slug(brief: Path) -> str:
    try:
        return slugify(Brief.from_yaml(brief).title)
    except Exception:  # the build's own error is what the record names; this only files it
        return brief.stem


def _read_part(path: Path) -> dict[str, Any] | None:
    """A build's part; None when there is none or it cannot be read (the build did not finish)."""
    try:
        part = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return part if isinstance(part, dict) else None


def _built_under(course_dir: Path) -> dict[str, float] | None:
    """The knob a course was built with; None when its record is damaged (the rebuild starts afresh)."""
    try:
        return recorded_quality(course_dir)
    except Damaged:
        return None
