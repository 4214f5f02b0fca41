"""Running the evals: build (or load) each brief once per epoch, score every build, and
report.

Used by ``pytest evals/`` and by ``stay evals score``. Each build (brief x epoch) is
independent and goes into its own course directory, ``<courses>/e<NN>/<slug>``.
Offline, epochs differ by a seed (the run's seed, the brief and the epoch), which the
offline backend's quality knob turns into build-to-build noise; with a model, the same
seed goes into the request cache's key as a salt (never into the prompt), so every
epoch is a fresh set of requests while a rerun of the same run pays for nothing.
Judging uses the judging role (or ``judge_model``) through the model layer and its
request cache, or, with no key, the offline heuristic judge, which says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stay.artefacts import Brief
from stay.briefs import slugify
from stay.models import AnthropicBackend, CachedBackend, OfflineBackend, RequestCache, Usage, prefetch
from stay.models import model_for as _model_for
from stay.scoring import (
    CourseOnDisk,
    Judge,
    ModelJudge,
    OfflineJudge,
    Scorer,
    ScoreResult,
    default_scorers,
    score_course,
)
from stay.scoring._core import JudgeReply
from stay.scoring._report import build_entry
from stay.stages import Prompts

OFFLINE = "offline"
DEFAULT_EPOCHS = 6
"""Builds per brief and run. At six, the calibration benchmark (``benchmarks/
evals_calibration.py``) puts the gate's power at a 20% degradation at or above 0.8 for
each 72-item scorer, with a false-positive rate under 0.05; at four it is 0.66-0.75
(docs/evals.md). CI runs the offline suite with ``--stay-epochs 2``: it proves the
plumbing, not the power."""


def backend_name(requested: str | None = None) -> str:
    return requested or ("anthropic" if os.environ.get("ANTHROPIC_API_KEY") else OFFLINE)


def build_seed(run_seed: int, slug: str, epoch: int) -> str:
    """One build's seed: its run's seed, its brief and its epoch."""
    return f"{run_seed}/{slug}/{epoch}"


def epoch_dir(courses_dir: Path, epoch: int) -> Path:
    return courses_dir / f"e{epoch:02d}"


def make_judge(backend: str, cache_dir: Path, *, judge_model: str | None = None) -> Judge:
    """The offline heuristic judge, or the judging model (``judge_model``, default the
    judging role's) behind the request cache: a judged item is never paid for twice."""
    if backend == OFFLINE:
        return OfflineJudge()
    return ModelJudge(CachedBackend(AnthropicBackend(), RequestCache(cache_dir)), judge_model or _model_for("judging"))


def evaluate_build(brief_path: Path, *, epoch: int, courses_dir: Path, backend: str, prompts: Prompts,
                   judge: Judge, run_seed: int = 0, rebuild: bool = True, quality: Mapping[str, float] | None = None,
                   scorers: list[Scorer] | None = None,
                   built_with: Mapping[str, Mapping[str, str]] | None = None) -> tuple[str, dict[str, Any]]:
    """Build (or, with ``rebuild=False``, load) one epoch of a brief's course and score it:
    (slug, the build's report entry)."""
    from stay.pipeline import build_course

    brief = Brief.from_yaml(brief_path)
    slug = slugify(brief.title)
    seed = build_seed(run_seed, slug, epoch)
    where = epoch_dir(courses_dir, epoch)
    usage, built = Usage(), False
    cost: float | None = 0.0
    if rebuild or not (where / slug / "course.yaml").is_file():
        options: dict[str, Any] = {}
        if backend == OFFLINE:
            generator: Any = OfflineBackend(quality=dict(quality or {}), seed=seed)
        else:  # the epoch's salt keys its requests apart in the cache; the prompt is untouched
            generator = CachedBackend(AnthropicBackend(), RequestCache(where / slug / ".runs" / "cache", salt=seed))
            options["cache"] = False
        result = build_course(brief, courses_dir=where, yes=True, backend=generator, prompts=prompts,
                              progress=lambda _line: None, **options)
        usage, cost, built = result.usage, result.cost, True
    course = CourseOnDisk.load(where / slug)
    scores = score_course(course, scorers or default_scorers(judge))
    return slug, build_entry(scores, epoch=epoch, seed=seed, course_sha256=course.sha256, build_usage=usage,
                             build_cost=cost, built=built, built_with=built_with)


class _Recorder:
    """A judge that only records what it is asked (the first pass of batch scoring)."""

    name = "recorder"

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def ask(self, request: Any) -> JudgeReply:
        self.requests.append(request)
        return JudgeReply(None, "(recorded for a batch)", "none")


def batch_score(course_dir: Path, client: Any, cache: RequestCache, *, poll_seconds: float = 30.0,
                sleep: Any = None, judge_model: str | None = None) -> dict[str, ScoreResult]:
    """Score a course with every judge request sent through one Message Batch: a first
    pass records the requests (scorers build them purely), the batch answers them into
    the request cache, and a second pass scores from the cache with no live call."""
    recorder = _Recorder()
    course = CourseOnDisk.load(course_dir)
    score_course(course, default_scorers(recorder))
    model = judge_model or _model_for("judging")
    kwargs: dict[str, Any] = {"poll_seconds": poll_seconds}
    if sleep is not None:
        kwargs["sleep"] = sleep
    prefetch(client, [(request, model) for request in recorder.requests], cache, **kwargs)
    judge = ModelJudge(CachedBackend(AnthropicBackend(client), cache), model)
    return score_course(course, default_scorers(judge))


def merge_parts(parts: Path) -> dict[str, list[dict[str, Any]]]:
    """The builds the suite's workers wrote (one JSON file each), by brief slug."""
    import json

    builds: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(parts.glob("*.json")):
        part = json.loads(path.read_text(encoding="utf-8"))
        builds.setdefault(part["slug"], []).append(part["build"])
    return builds


def write_run_report(cfg: Any, builds: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The suite's report from its builds and its configuration (``evals/conftest.py``'s
    ``EvalConfig``: label, backend, prompts_dir, epochs, seed, quality, output)."""
    from stay.scoring import scorer_versions
    from stay.scoring._report import report, write_report

    document = report(label=cfg.label, backend=cfg.backend, prompts_dir=str(cfg.prompts_dir or "prompts (packaged)"),
                      prompt_hashes=Prompts.load(cfg.prompts_dir).hashes(),
                      scorers=scorer_versions(default_scorers(OfflineJudge())), builds=builds, epochs=cfg.epochs,
                      seed=cfg.seed, quality=cfg.quality if cfg.backend == OFFLINE else None)
    write_report(cfg.output, document)
    return document
