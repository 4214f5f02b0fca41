"""The wave: every lesson (content, exercises, quiz) and the capstone, in flight together.

The wave nodes start their tasks and return at once: ``write_lesson`` every lesson's
calls, ``write_capstone`` (each course-scope wave stage) its one call beside them;
``gather``, the barrier, waits for every task and re-raises the first failure. What the
wave must write is worked out once, from the stage declarations, when the first wave
node runs, so progress counts every task from the start.

``STAY_WAVE_CONCURRENCY`` caps lessons in flight; ``STAY_MODEL_CONCURRENCY`` caps
model calls in flight whatever the width: each lesson makes its calls at once, so four
lessons alone would be twelve requests. Each task writes only its own files,
atomically, once its calls are done (a lesson's together: one synced journal line, as
a module's plans), so a crash loses no finished lesson; the ledger is written sorted,
and the shared files (glossary.yaml, course.yaml, the run log) are written once, after
the barrier.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from stay._display import plural
from stay.artefacts import Artefact, LessonPlan, LessonReview
from stay.models import prefetch
from stay.pipeline._checks import course_report
from stay.pipeline._gateway import ModelGateway
from stay.pipeline._layout import LessonPlace
from stay.pipeline._policy import needs_writing
from stay.pipeline._produce import Job, Note, job
from stay.pipeline._reader import RunReader
from stay.pipeline._reporter import Reporter
from stay.pipeline._run import RunConfig, Tally, Walk, Writer
from stay.pipeline._state import CourseState
from stay.settings import Settings
from stay.stages import Stage, lesson_file
from stay.validate import Defect, Severity

WARNINGS = "validator_warnings"


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


@dataclass
class Wave:
    """The wave's work and its tasks: started by the wave nodes, awaited by gather. Its
    threads ask through the model gateway, write through the writer, and stop once the
    walk is cancelled."""

    model: ModelGateway
    report: Reporter
    writer: Writer
    settings: Settings
    lessons: dict[str, list[Job]]
    """lesson id -> its calls, in lesson order (only lessons with something to write)."""
    courses: dict[str, Job]
    """course-scope wave stage -> its call."""
    started: float = field(default_factory=time.perf_counter)
    futures: list[Future[None]] = field(default_factory=list)
    _finished: dict[str, str] = field(default_factory=dict)
    """Task -> its progress label, for tasks done but not yet reported."""
    _reported: int = 0
    _joined: threading.Event = field(default_factory=threading.Event)
    """Set once every worker thread has ended."""

    def __post_init__(self) -> None:
        settings = self.settings
        self.tally: Tally = self.writer.tally
        self.walk: Walk = self.writer.walk
        self.lesson_gauge = Gauge()
        self.call_gauge = Gauge()
        self.model.in_flight = self.call_gauge
        self.lesson_slots = threading.Semaphore(settings.wave_concurrency)
        # Not ``with`` executors: leaving a ``with`` block waits for every task, and a
        # person pressing Ctrl-C must not wait on a call that hangs.
        self.calls_pool = ThreadPoolExecutor(max_workers=settings.model_concurrency + 1,
                                             thread_name_prefix="stay-call")
        self.lessons_pool = ThreadPoolExecutor(max_workers=settings.wave_concurrency + 1,
                                               thread_name_prefix="stay-lesson")
        self.calls_before = self.tally.calls
        self.total = len(self.lessons) + len(self.courses)
        self._report_lock = threading.Lock()
        self._order = [*self.lessons, *self.courses]
        # progress reports tasks in this order: the curriculum's, then the course's

    @property
    def empty(self) -> bool:
        return self.total == 0

    @property
    def in_flight(self) -> bool:
        """Tasks were started and not yet gathered: decided by the walk, never by whether a
        thread happens to have finished."""
        return bool(self.futures) and not self._joined.is_set()

    # -- the wave nodes start tasks -----------------------------------------------------

    def start_lessons(self) -> None:
        for lesson_id, calls in self.lessons.items():
            self.futures.append(self.lessons_pool.submit(self._lesson, lesson_id, calls))

    def start_course(self, stage: str) -> None:
        call = self.courses.get(stage)
        if call is not None:  # beside the lessons: a model-call slot, not a lesson slot
            self.futures.append(self.calls_pool.submit(self._course, call))

    def _lesson(self, lesson_id: str, calls: list[Job]) -> None:
        with self.lesson_slots, self.lesson_gauge:
            futures = [self.calls_pool.submit(self._answer, call) for call in calls]  # the lesson's calls at once
            made: dict[str, Artefact] = {}
            failure: BaseException | None = None
            for call, future in zip(calls, futures, strict=True):
                try:
                    answer = future.result()
                except BaseException as exc:  # the first, raised once the others' files are written
                    failure = failure or exc
                    continue
                if answer is not None:
                    made[call.paths[0]] = answer
            # the lesson's files in one step: one synced journal line before their renames,
            # not one a file (a failed call loses none of its lesson's finished files)
            self.writer.write(made)  # checks for a cancel under the ledger lock: none written after
            if failure is not None:
                raise failure
        self._progress(lesson_id, f"{lesson_id}: {', '.join(call.stage.name for call in calls)}")

    def _course(self, call: Job) -> None:
        answer = self._answer(call)
        if answer is not None:
            self.writer.write({call.paths[0]: answer})
        self._progress(call.stage.name, f"{call.stage.name}: {call.paths[0]}")

    def _answer(self, call: Job) -> Artefact | None:
        """The call's artefact; None once the run is cancelled (nothing is asked)."""
        if self.walk.cancelled.is_set():
            return None
        (made,) = self.model.produce(call.request, call.parse)
        return made

    def _progress(self, task: str, label: str) -> None:
        """Report ``task`` done, in the wave's order: a task that finishes before an
        earlier one waits for it, so the same course prints the same lines whichever
        thread is faster. Reporting happens under the lock, so lines never interleave."""
        if self.walk.cancelled.is_set():
            return
        with self._report_lock:
            self._finished[task] = label
            while self._reported < len(self._order) and self._order[self._reported] in self._finished:
                done = self._order[self._reported]
                self._reported += 1
                self.report.tick(self._finished.pop(done), self._reported, self.total)

    # -- gather: the barrier ------------------------------------------------------------

    def wait(self) -> WaveStats:
        """Wait for every task; the first failure is raised once all have ended."""
        errors = [future.exception() for future in self.futures]
        self._join()
        failure = next((e for e in errors if e is not None), None)
        if failure is not None:
            raise failure
        return WaveStats(len(self.lessons), self.tally.calls - self.calls_before, self.lesson_gauge.most,
                         self.call_gauge.most, time.perf_counter() - self.started)

    def cancel(self, *, wait: bool) -> None:
        """No task writes after this returns (the run's cancel is set under the ledger
        lock, which every write checks), and pending tasks are dropped. With ``wait``, the
        running ones are waited for too; without (Ctrl-C: a person must not wait on a call
        that hangs), ``then`` releases the course lock once they have ended."""
        self.walk.course.cancel(self.walk.cancelled)
        self.lessons_pool.shutdown(wait=False, cancel_futures=True)
        self.calls_pool.shutdown(wait=False, cancel_futures=True)
        if wait:
            self._join()

    def _join(self) -> None:
        self.lessons_pool.shutdown(wait=True)
        self.calls_pool.shutdown(wait=True)
        self._joined.set()

    def then(self, release: Callable[[], None]) -> None:
        """Call ``release`` once every worker has ended: now if they have, else from a
        thread that waits for them, so no worker outlives the lock its run held (a retry
        in the same process is refused until then, rather than racing them)."""
        if self._joined.is_set() or not self.futures:
            release()
            return

        def reap() -> None:
            self._join()
            release()

        threading.Thread(target=reap, name="stay-release", daemon=True).start()


def wave_of(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, writer: Writer) -> Wave:
    """The run's wave, worked out on first use from every wave stage's declaration."""
    walk = writer.walk
    if walk.wave is None:
        walk.wave = _plan(config, reader, model, report, writer)
    return walk.wave


def _plan(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, writer: Writer) -> Wave:
    wave_stages = [stage for stage in config.stages if stage.phase == "wave"]
    ledger = writer.walk.course
    if not config.may_write("wave"):
        _report_behind(config, reader, ledger, report, wave_stages)
        return Wave(model, report, writer, config.settings, {}, {})
    layout = reader.layout
    lessons: dict[str, list[Job]] = {}
    for place in layout.lessons():
        for stage in (s for s in wave_stages if s.scope == "lesson"):
            if needs_writing(config, ledger, report, place.path(stage.output), "wave"):
                lessons.setdefault(place.id, []).append(job(config, reader, stage, place))
    courses = {stage.name: job(config, reader, stage, None) for stage in wave_stages
               if stage.scope == "course" and needs_writing(config, ledger, report, stage.output, "wave")}
    wave = Wave(model, report, writer, config.settings, lessons, courses)
    if wave.empty:
        report.say("wave: every lesson and the capstone are current")
        return wave
    extra = " and " + ", ".join(f"the {name}" for name in courses) if courses else ""
    settings = config.settings
    report.say(f"wave: {plural(len(lessons), 'lesson')}{extra} (at most "
                   f"{plural(settings.wave_concurrency, 'lesson')}, {plural(settings.model_concurrency, 'call')} "
                   "in flight)")
    if config.batch is not None:  # warm the request cache through Message Batches first
        calls = [call for group in lessons.values() for call in group] + list(courses.values())
        prefetch(config.batch.client, [(call.request, settings.model(call.request.role)) for call in calls],
                 config.batch.cache, progress=report.say, poll_seconds=config.batch.poll_seconds,
                 retries=config.batch.retries, billed=model.account)  # a refused entry was paid for: counted
    return wave


def _report_behind(config: RunConfig, reader: RunReader, ledger: CourseState, report: Reporter,
                   wave_stages: list[Stage]) -> None:
    """A command that does not author the wave says what the wave would write."""
    paths = [path for stage in wave_stages for path, _place in reader.layout.outputs(stage)]
    behind = [p for p in paths if ledger.status(p).state in ("missing", "stale")]
    if behind:
        report.say(f"wave: {plural(len(behind), 'file')} missing or stale; stay {config.command} does not "
                   f"write them ({config.hint('write', config.slug)} does)")


def review_stale(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, writer: Writer) -> None:
    """Review each lesson whose review is missing or stale (the ledger: a lesson whose files
    did not change is not reviewed again) and whose reviewed files all exist, concurrently
    within the wave's caps, through the same gateway. Run after the wave's barrier, and by
    repair after a round rewrote a lesson's files, so a fix is confirmed by the reviewer."""
    stage = next((s for s in config.stages if s.phase == "review"), None)  # none: offline, or --no-review
    if stage is None:
        return
    reviewed = [file for _name, source in stage.inputs  # the plan is read from the plans, as ever
                if source is not LessonPlan and (file := lesson_file(source))]
    todo = [place for place in reader.layout.lessons() if all(reader.exists(place.path(f)) for f in reviewed)
            and needs_writing(config, writer.walk.course, report, place.path(stage.output), stage.phase)]
    if not todo:
        return
    # The validator's WARNs on the files the review reads go with each request, so the model
    # judges the lesson as a whole. They are computed from those files, which are the review's
    # ledger inputs already, so they need no edge of their own.
    warns = [d for d in course_report(config.root, config.settings).defects
             if d.severity == Severity.WARN and not d.code.startswith("rev")]
    lessons = {place.id: [job(config, reader, stage, place, (_warnings(place, reviewed, warns),))] for place in todo}
    wave = writer.walk.wave = Wave(model, report, writer, config.settings, lessons, {})
    report.say(f"review: {plural(len(lessons), 'lesson')} by the judging model ({config.settings.model('judging')})")
    wave.start_lessons()
    wave.wait()
    for place in todo:
        path = place.path(stage.output)
        made = reader.load(path) if reader.exists(path) else None
        if isinstance(made, LessonReview) and made.dropped:
            report.say(f"  {path}: {plural(made.dropped, 'finding')} dropped, its quote not found in its file")


def _warnings(place: LessonPlace, reviewed: list[str], warns: list[Defect]) -> Note:
    paths = {place.path(file) for file in reviewed}
    lines = [d.line() for d in warns if d.path in paths]
    return Note(WARNINGS, lines, "\n".join(f"- {line}" for line in lines) or "none")
