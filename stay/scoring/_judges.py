"""Judges for the evals: the offline judge (it judges nothing), or the judging model behind the
request cache, and scoring through Message Batches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stay.models import AnthropicBackend, CachedBackend, ModelClient, RequestCache, backend_from, prefetch
from stay.scoring._core import CourseOnDisk, Judge, JudgeReply, ModelJudge, OfflineJudge, ScoreResult
from stay.scoring._scorers import default_scorers, score_course
from stay.settings import Settings
from stay.settings import checked_backend as settings_checked_backend

OFFLINE = "offline"


def checked_backend(name: str, flag: str) -> str:
    """``name`` if it is a backend stay can build or judge with (one registered under the
    ``stay.backends`` entry points), else a one-line ``UsageError`` naming ``flag``, the
    closest name and the installed ones. The one place the evals check a backend's name."""
    return settings_checked_backend(name, flag)


def make_judge(backend: str, cache_dir: Path, *, judge_model: str | None = None,
               settings: Settings | None = None, salt: str = "", client: ModelClient | None = None) -> Judge:
    """The offline judge (it judges nothing), or the judging model (``judge_model``, default the
    judging role's) behind the request cache: a judged item is never paid for twice.

    ``salt`` keys the cache's answers apart by judging session (``stay.scoring._session``):
    a new session is answered afresh, never from another day's verdicts, while the same
    session run again pays nothing. ``backend`` is the judge's backend (``checked_backend``),
    which may be another than the one that built the courses (``--stay-judge-backend``);
    ``client`` stands in for it (tests)."""
    if backend == OFFLINE:
        return OfflineJudge()
    chosen = settings or Settings.from_env()
    # the judge's own backend, with the retry settings, as the build's
    model_client = client or backend_from(chosen.replace(backend=checked_backend(backend, "the judge's backend")))
    return ModelJudge(CachedBackend(model_client, RequestCache(cache_dir, salt=salt)),
                      judge_model or chosen.model("judging"), via=backend)


class _Recorder:
    """A judge that only records what it is asked (the first pass of batch scoring)."""

    name = "recorder"

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def ask(self, request: Any) -> JudgeReply:
        self.requests.append(request)
        return JudgeReply(None, "(recorded for a batch)", "none")


def batch_score(course_dir: Path, client: Any, cache: RequestCache, *, poll_seconds: float = 30.0,
                sleep: Any = None, judge_model: str | None = None,
                settings: Settings | None = None) -> dict[str, ScoreResult]:
    """Score a course with every judge request sent through one Message Batch: a first
    pass records the requests (scorers build them purely), the batch answers them into
    the request cache, and a second pass scores from the cache with no live call."""
    recorder = _Recorder()
    course = CourseOnDisk.load(course_dir)
    score_course(course, default_scorers(recorder))
    chosen = settings or Settings.from_env()
    model = judge_model or chosen.model("judging")
    claude = backend_from(chosen.replace(backend="anthropic"), client=client)
    kwargs: dict[str, Any] = {"poll_seconds": poll_seconds}
    if sleep is not None:
        kwargs["sleep"] = sleep
    if isinstance(claude, AnthropicBackend):  # the batch calls retry by the settings, as the build's do
        kwargs["retries"] = claude
    prefetch(client, [(request, model) for request in recorder.requests], cache, **kwargs)
    judge = ModelJudge(CachedBackend(claude, cache), model)
    return score_course(course, default_scorers(judge))
