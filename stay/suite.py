"""The evals suite: build each brief once per epoch, score every build, and report.

It sits above both the pipeline (which builds) and the scorers (which judge courses on
disk): neither imports the other. Used by ``pytest evals/``. Each build (brief x epoch)
is independent and goes into its own course directory, ``<courses>/e<NN>/<slug>``.
Offline, epochs differ by a seed (the run's seed, the brief and the epoch), which the
quality knob (``stay.testing.RiggedBackend``) turns into build-to-build noise; with a model, the same
seed goes into the request cache's key as a salt (never into the prompt), so every
epoch is a fresh set of requests while a rerun of the same run pays for nothing.

Every build goes through the pipeline's staleness, with the prompts it is given: a
rerun after a prompt edit rebuilds exactly the artefacts of the stages that prompt
feeds, and the report records, per course, what the ledger says each artefact was
actually built with (``built_with``: its prompts', references', schema's and model's
hashes), not what the run was asked to use.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from stay._stored import Damaged
from stay.artefacts import Brief
from stay.briefs import slugify
from stay.models import CachedBackend, RequestCache, Usage, backend_from
from stay.pipeline import build_course
from stay.scoring import (
    OFFLINE,
    QUALITY_RECORD,
    CourseOnDisk,
    Judge,
    OfflineJudge,
    Scorer,
    build_entry,
    default_scorers,
    ledger_built_with,
    recorded_quality,
    report,
    score_course,
    scorer_versions,
    write_report,
)
from stay.settings import Settings
from stay.stages import Prompts
from stay.testing import RiggedBackend

DEFAULT_EPOCHS = 10
"""Builds per brief and run: the fewest at which the calibration benchmark (``benchmarks/
evals_calibration.py``) puts the one-sided gate's power at a 20% degradation at or above
0.8 for every scorer of 36 or more items a run, at build ICC up to 0.15, with a
false-positive rate under 0.05 (docs/evals.md, "Calibration", quotes the table and the
epochs the 14-item rubric_specificity needs). CI runs the offline suite with
``--stay-epochs 2``: it proves the plumbing, not the power."""


def backend_name(requested: str | None = None, settings: Settings | None = None) -> str:
    return requested or (settings or Settings.from_env()).chosen_backend


def build_seed(run_seed: int, slug: str, epoch: int) -> str:
    """One build's seed: its run's seed, its brief and its epoch."""
    return f"{run_seed}/{slug}/{epoch}"


def epoch_dir(courses_dir: Path, epoch: int) -> Path:
    return courses_dir / f"e{epoch:02d}"


def evaluate_build(brief_path: Path, *, epoch: int, courses_dir: Path, backend: str,
                   prompts_dir: Path | None, judge: Judge, run_seed: int = 0, rebuild: bool = True,
                   quality: Mapping[str, float] | None = None, scorers: list[Scorer] | None = None,
                   settings: Settings | None = None) -> tuple[str, dict[str, Any]]:
    """Build (or, with ``rebuild=False``, load) one epoch of a brief's course and score it:
    (slug, the build's report entry). A build of a course already on disk regenerates
    what is stale, prompt changes included, and nothing else."""
    chosen = settings or Settings.from_env()
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
            generator = CachedBackend(backend_from(chosen.replace(backend="anthropic")),
                                      RequestCache(where / slug / ".runs" / "cache", salt=seed))
            cache = False
        result = build_course(brief, courses_dir=where, yes=True, backend=generator, settings=chosen,
                              prompts_dir=prompts_dir, cache=cache, progress=lambda _line: None)
        usage, cost, built = result.usage, result.cost, True
        if backend == OFFLINE:
            (where / slug / QUALITY_RECORD).parent.mkdir(parents=True, exist_ok=True)
            (where / slug / QUALITY_RECORD).write_text(json.dumps(knob, sort_keys=True) + "\n", encoding="utf-8")
    course = CourseOnDisk.load(where / slug)
    scores = score_course(course, scorers or default_scorers(judge, data_dir=chosen.resolved_data_dir()))
    entry = build_entry(scores, epoch=epoch, seed=seed, course_sha256=course.sha256, build_usage=usage,
                        build_cost=cost, built=built, built_with=ledger_built_with(where / slug))
    if backend == OFFLINE:  # what this build was made with, which a rescore may not have asked for
        entry["quality"] = recorded_quality(where / slug)
    return slug, entry


def part_name(brief: Path, epoch: int) -> str:
    """The file one build of the suite writes its entry to, in the run's parts directory."""
    return f"{brief.stem}-e{epoch:02d}.json"


def missing_builds(parts: Path, briefs: Iterable[Path], epochs: int) -> list[str]:
    """The builds a suite run asked for that wrote no entry: they failed, or never ran (the
    run was interrupted). A report without them would leave out the worst builds and
    lean towards a pass, so ``finish_run`` writes none."""
    present = {path.name for path in parts.glob("*.json")} if parts.is_dir() else set()
    wanted = [part_name(brief, epoch) for brief in briefs for epoch in range(1, epochs + 1)]
    return [name.removesuffix(".json") for name in wanted if name not in present]


def finish_run(cfg: Any) -> tuple[dict[str, Any] | None, str]:
    """The suite's end: the report written from a complete run, or, when a build is missing,
    nothing written (an earlier report at ``cfg.output`` is kept as it was); and the line
    that says which. ``cfg`` is ``evals/conftest.py``'s ``EvalConfig``."""
    missing = missing_builds(cfg.parts, cfg.briefs, cfg.epochs)
    if missing:
        shutil.rmtree(cfg.parts, ignore_errors=True)
        wanted = len(cfg.briefs) * cfg.epochs
        return None, (f"stay evals: {cfg.output} not written: {len(missing)} of {wanted} builds failed or did not "
                      f"run ({', '.join(missing[:6])}{', ...' if len(missing) > 6 else ''}); fix them and run the "
                      "suite again")
    builds = merge_parts(cfg.parts)
    document = write_run_report(cfg, builds)
    shutil.rmtree(cfg.parts, ignore_errors=True)
    return document, (f"stay evals: wrote {cfg.output} ({len(builds)} briefs x {cfg.epochs} epochs; means: "
                      + ", ".join(f"{k} {v:.3f}" for k, v in document["means"].items() if v is not None) + ")")


def merge_parts(parts: Path) -> dict[str, list[dict[str, Any]]]:
    """The builds the suite's workers wrote (one JSON file each), by brief slug."""
    builds: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(parts.glob("*.json")):
        part = json.loads(path.read_text(encoding="utf-8"))
        builds.setdefault(part["slug"], []).append(part["build"])
    return builds


def write_run_report(cfg: Any, builds: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The suite's report from its builds and its configuration (``evals/conftest.py``'s
    ``EvalConfig``: label, backend, prompts_dir, epochs, seed, quality, rescore, output).
    The prompt hashes and the quality knob are what the builds record they were made with
    (``report``);
    the directory is the one the builds were given (``--stay-prompts``, else
    ``STAY_PROMPTS_DIR``, else the packaged prompts), or none when the run rescored."""
    settings = Settings.from_env()
    given = cfg.prompts_dir or settings.prompts_dir
    where = str(given or "prompts (packaged)")
    if getattr(cfg, "rescore", False):
        where = "(not generated: courses scored as saved" + (f"; {given} not used)" if given else ")")
    document = report(label=cfg.label, backend=cfg.backend, prompts_dir=where,
                      prompt_hashes=Prompts.load(given).hashes(),
                      scorers=scorer_versions(default_scorers(OfflineJudge())), builds=builds, epochs=cfg.epochs,
                      seed=cfg.seed, quality=cfg.quality if cfg.backend == OFFLINE else None, models=settings.models)
    write_report(cfg.output, document)
    return document


def _built_under(course_dir: Path) -> dict[str, float] | None:
    """The knob a course was built with; None when its record is damaged (unknown, so the
    rebuild starts afresh rather than trust it)."""
    try:
        return recorded_quality(course_dir)
    except Damaged:
        return None
