"""Running the evals: build (or load) a course per brief, score it, and report.

Used by ``pytest evals/`` and by ``stay evals score``. Generation uses the prompt
directory under test; judging uses the judging role through the model layer and its
request cache, or, with no key, the offline heuristic judge, which says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from stay.artefacts import Brief
from stay.briefs import slugify
from stay.models import AnthropicBackend, CachedBackend, OfflineBackend, RequestCache, Usage, prefetch
from stay.models import model_for as _model_for
from stay.pipeline import build_course
from stay.scoring import Judge, ModelJudge, OfflineJudge, Scorer, default_scorers, score_course
from stay.scoring._core import JudgeReply
from stay.scoring._report import brief_entry
from stay.stages import Prompts

OFFLINE = "offline"


def backend_name(requested: str | None = None) -> str:
    return requested or ("anthropic" if os.environ.get("ANTHROPIC_API_KEY") else OFFLINE)


def make_judge(backend: str, cache_dir: Path) -> Judge:
    """The offline heuristic judge, or the judging model behind the request cache."""
    if backend == OFFLINE:
        return OfflineJudge()
    return ModelJudge(CachedBackend(AnthropicBackend(), RequestCache(cache_dir)))


def evaluate_brief(brief_path: Path, *, courses_dir: Path, backend: str, prompts: Prompts,
                   judge: Judge, rebuild: bool = True, quality: dict[str, float] | None = None,
                   scorers: list[Scorer] | None = None) -> tuple[str, dict[str, Any]]:
    """Build (or, with ``rebuild=False``, load) the brief's course, score it: (slug, entry)."""
    brief = Brief.from_yaml(brief_path)
    slug = slugify(brief.title)
    usage, built = Usage(), False
    cost: float | None = 0.0
    if rebuild or not (courses_dir / slug / "course.yaml").is_file():
        generator = OfflineBackend(quality=quality or {}) if backend == OFFLINE else backend
        result = build_course(brief, courses_dir=courses_dir, yes=True, backend=generator, prompts=prompts,
                              progress=lambda _line: None)
        usage, cost, built = result.usage, result.cost, True
    scores = score_course(courses_dir / slug, scorers or default_scorers(judge))
    return slug, brief_entry(slug, scores, build_usage=usage, build_cost=cost, built=built)


class _Recorder:
    """A judge that only records what it is asked (the first pass of batch scoring)."""

    name = "recorder"

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def ask(self, request: Any) -> JudgeReply:
        self.requests.append(request)
        return JudgeReply(None, "(recorded for a batch)", "none")


def batch_score(course_dir: Path, client: Any, cache: RequestCache, *,
                poll_seconds: float = 30.0, sleep: Any = None) -> dict[str, Any]:
    """Score a course with every judge request sent through one Message Batch: a first
    pass records the requests (scorers build them purely), the batch answers them into
    the request cache, and a second pass scores from the cache with no live call."""
    recorder = _Recorder()
    score_course(course_dir, default_scorers(recorder))
    model = _model_for("judging")
    kwargs: dict[str, Any] = {"poll_seconds": poll_seconds}
    if sleep is not None:
        kwargs["sleep"] = sleep
    prefetch(client, [(request, model) for request in recorder.requests], cache, **kwargs)
    judge = ModelJudge(CachedBackend(AnthropicBackend(client), cache), model)
    return score_course(course_dir, default_scorers(judge))
