"""The wave: every lesson (content, exercises, quiz) and the capstone, in flight together.

``STAY_WAVE_CONCURRENCY`` caps lessons in flight; ``STAY_MODEL_CONCURRENCY`` caps
model calls in flight whatever the width: each lesson makes its three calls at
once, so four lessons alone would be twelve requests. Each wave task writes only
its own files, atomically, as soon as they are done, so a crash loses no finished
file; the ledger is written sorted, and the shared files (glossary.yaml,
course.yaml, the run log) are written once, after the barrier.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from stay.artefacts import (
    Artefact,
    Assessment,
    Audience,
    Curriculum,
    LessonPlan,
    Outcome,
    Outcomes,
    load,
    write,
)
from stay.models import ModelAnswer, ModelRequest, model_for, prefetch
from stay.pipeline._course_graph import lesson_paths
from stay.pipeline._run import Run
from stay.stages import capstone as capstone_stage
from stay.stages import content as content_stage
from stay.stages import exercises as exercises_stage
from stay.stages import quiz as quiz_stage


@dataclass(frozen=True)
class WaveStats:
    """What the wave did, for tests and benchmarks (never written into a course)."""

    lessons: int
    calls: int
    max_lessons_in_flight: int
    max_calls_in_flight: int
    seconds: float


class Gauge:
    """Counts things in flight and remembers the most there ever were."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            self.now -= 1


def _todo(run: Run, path: str) -> bool:
    """Whether the wave must write ``path``: missing or stale. An edited file is kept,
    and never recorded as current."""
    from stay.pipeline._nodes import say_kept

    status = run.course.status(path)
    if status.state == "edited":
        say_kept(run, path, status)
    return status.state in ("missing", "stale")


def revisited_plans(plans: dict[str, LessonPlan], curriculum: Curriculum,
                    plan: LessonPlan) -> list[LessonPlan]:
    """The plans that introduce the terms ``plan`` revisits (a quiz's extra inputs)."""
    introducer: dict[str, LessonPlan] = {}
    for lesson_id, _module_dir, _prefix in lesson_paths(curriculum):
        for new in plans[lesson_id].new_terms if lesson_id in plans else []:
            introducer.setdefault(" ".join(new.term.casefold().split()), plans[lesson_id])
    found: list[LessonPlan] = []
    for revisited in plan.revisits:
        source = introducer.get(" ".join(revisited.casefold().split()))
        if source is not None and source not in found:
            found.append(source)
    return found


Parse = Callable[[ModelAnswer], Artefact]


def _requests(run: Run, jobs: list[tuple[str, str, LessonPlan, list[Outcome], list[str]]], capstone: bool,
              curriculum: Curriculum, outcomes: Outcomes, audience: Audience,
              plans: dict[str, LessonPlan]) -> dict[str, tuple[ModelRequest, Parse]]:
    """Every request the wave will make, by the file it becomes, with its parser."""
    found: dict[str, tuple[ModelRequest, Parse]] = {}
    for _lesson_id, prefix, plan, own, todo in jobs:
        for suffix in todo:
            path = prefix + suffix
            if suffix == ".md":
                found[path] = (content_stage.request(plan, own, audience, path, run.prompts),
                               functools.partial(content_stage.artefact, plan=plan, path=path))
            elif suffix == ".exercises.yaml":
                found[path] = (exercises_stage.request(plan, own, audience, path, run.prompts),
                               functools.partial(exercises_stage.artefact, path=path))
            else:
                found[path] = (quiz_stage.request(plan, own, audience, revisited_plans(plans, curriculum, plan),
                                                  path, run.prompts),
                               functools.partial(quiz_stage.artefact, path=path))
    if capstone:
        found[capstone_stage.PATH] = (capstone_stage.request(
            curriculum, outcomes, load(run.root / "assessment.yaml", Assessment),
            [plans[i] for i, _d, _p in lesson_paths(curriculum)], run.prompts), capstone_stage.artefact)
    return found


def run_wave(run: Run) -> WaveStats:
    if not run.may_write("wave"):
        _check(run)
        return WaveStats(0, 0, 0, 0, 0.0)
    curriculum = load(run.root / "curriculum.yaml", Curriculum)
    outcomes = load(run.root / "outcomes.yaml", Outcomes)
    audience = load(run.root / "audience.yaml", Audience)
    plans = run.plans()
    jobs: list[tuple[str, str, LessonPlan, list[Outcome], list[str]]] = []
    for lesson_id, _module_dir, prefix in lesson_paths(curriculum):
        plan = plans[lesson_id]
        own = [o for o in outcomes.outcomes if o.lesson == lesson_id]
        todo = [s for s in (".md", ".exercises.yaml", ".quiz.yaml") if _todo(run, prefix + s)]
        if todo:
            jobs.append((lesson_id, prefix, plan, own, todo))
    capstone = _todo(run, capstone_stage.PATH)
    total = len(jobs) + capstone
    if not total:
        run.say("wave: every lesson and the capstone are current")
        return WaveStats(0, 0, 0, 0, 0.0)
    run.say(f"wave: {len(jobs)} lessons{' and the capstone' if capstone else ''} "
            f"(at most {run.wave_width} lessons, {run.model_width} calls in flight)")
    calls = _requests(run, jobs, capstone, curriculum, outcomes, audience, plans)
    if run.batch is not None:  # warm the request cache through one Message Batch first
        client, cache, poll = run.batch
        prefetch(client, [(request, model_for(request.role)) for request, _parse in calls.values()], cache,
                 progress=run.say, poll_seconds=poll)
    lessons_gauge = Gauge()
    run.calls_in_flight = Gauge()
    lesson_slots = threading.Semaphore(run.wave_width)
    finished = 0
    calls_before = run.calls
    start = time.perf_counter()

    def call(path: str, make: Callable[[], Artefact]) -> None:
        if run.cancelled.is_set():
            return
        made = make()
        if run.cancelled.is_set():  # interrupted while the call was in flight: write nothing
            return
        write(run.root / path, made)
        run.wrote([path])

    def progress(label: str) -> None:
        nonlocal finished
        with run.lock:
            finished += 1
            count = finished
        run.say(f"  [{count}/{total}] {label}")

    # Not ``with`` executors: leaving a ``with`` block waits for every task, and a person
    # pressing Ctrl-C must not wait on a call that hangs. On any interruption the run is
    # marked cancelled (no task writes after it) and pending tasks are dropped.
    calls_pool = ThreadPoolExecutor(max_workers=max(1, run.model_width) + 1, thread_name_prefix="stay-call")
    lessons_pool = ThreadPoolExecutor(max_workers=max(1, run.wave_width) + 1, thread_name_prefix="stay-lesson")
    try:

        def lesson(job: tuple[str, str, LessonPlan, list[Outcome], list[str]]) -> None:
            lesson_id, prefix, _plan, _own, todo = job
            with lesson_slots, lessons_gauge:
                # the lesson's calls at once; the model-call cap is in Run.ask
                futures = [calls_pool.submit(call, prefix + s, functools.partial(run.produce, *calls[prefix + s]))
                           for s in todo]
                for future in futures:
                    future.result()
            progress(f"{lesson_id}: {', '.join(s.lstrip('.').split('.')[0] for s in todo)}")

        def project() -> None:
            call(capstone_stage.PATH, functools.partial(run.produce, *calls[capstone_stage.PATH]))
            progress("capstone: project.yaml")

        futures: list[Future[None]] = []
        if capstone:  # beside the lessons: it takes a model-call slot, not a lesson slot
            futures.append(calls_pool.submit(project))
        futures += [lessons_pool.submit(lesson, job) for job in jobs]
        errors = [f.exception() for f in futures]  # gather: the barrier waits for every task
    except BaseException:
        run.cancelled.set()
        raise
    finally:
        finished_cleanly = not run.cancelled.is_set()
        calls_pool.shutdown(wait=finished_cleanly, cancel_futures=True)
        lessons_pool.shutdown(wait=finished_cleanly, cancel_futures=True)
    failure = next((e for e in errors if e is not None), None)
    if failure is not None:
        raise failure
    stats = WaveStats(len(jobs), run.calls - calls_before, lessons_gauge.most, run.calls_in_flight.most,
                      time.perf_counter() - start)
    run.wave = stats
    return stats


def _check(run: Run) -> None:
    """A command that does not author the wave reports what the wave would write."""
    curriculum = load(run.root / "curriculum.yaml", Curriculum)
    pending = [prefix + suffix for _id, _dir, prefix in lesson_paths(curriculum)
               for suffix in (".md", ".exercises.yaml", ".quiz.yaml")] + [capstone_stage.PATH]
    behind = [p for p in pending if run.course.status(p).state in ("missing", "stale")]
    if behind:
        run.say(f"wave: {len(behind)} files missing or stale; stay {run.command} does not write them "
                f"({run.hint('write', run.slug)} does)")
