"""One run of the pipeline: its inputs, what it has done so far, and how it reports."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from stay.artefacts import Brief, Curriculum, LessonPlan, load
from stay.errors import AnswerError, PipelineError
from stay.models import ModelAnswer, ModelClient, ModelRequest, Usage, cost, model_for
from stay.pipeline._course_graph import course_graph
from stay.pipeline._state import CourseState
from stay.stages import Prompts
from stay.validate import CourseReport

Progress = Callable[[str], None]


def print_progress(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


T = TypeVar("T")


def command_hint(courses_arg: str, *words: str) -> str:
    """A ``stay`` command to suggest, carrying the --courses-dir the user passed (none
    when it is the default), so it can be pasted as it is."""
    import shlex

    where = "" if courses_arg == "courses" else f" --courses-dir {shlex.quote(courses_arg)}"
    return f"`stay {' '.join(words)}{where}`"


class Stop(Exception):
    """Ends a run early, where it must wait (a gate) or has nothing to do."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(reason)
        self.where = where
        self.reason = reason


@dataclass
class Run:
    command: str
    courses_dir: Path
    backend: ModelClient
    prompts: Prompts
    progress: Progress
    yes: bool = False
    authors: tuple[str, ...] = ()
    """The phases this command may write (stay.pipeline._graph.PHASES); elsewhere it checks."""
    courses_arg: str = "courses"
    """--courses-dir as the user gave it, for the commands a hint tells them to run."""
    brief: Brief | None = None
    slug: str = ""
    root: Path = Path()
    state: CourseState | None = None
    written: list[str] = field(default_factory=list)
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    usage_by_stage: dict[str, Usage] = field(default_factory=dict)
    cost: float = 0.0
    """US dollars for this run's calls (models in ``unpriced`` not included)."""
    unpriced: set[str] = field(default_factory=set)
    cost_by_stage: dict[str, float] = field(default_factory=dict)
    validation: CourseReport | None = None
    repair: Any = None
    """RepairReport, when repair ran."""
    wave: Any = None
    """WaveStats of the wave, when one ran."""
    batch: Any = None
    """(anthropic client, RequestCache, poll seconds) when the wave goes through a Message Batch."""
    tracer: Any = None
    """The run's Tracer (stay.pipeline._trace)."""
    calls_in_flight: Any = field(default_factory=lambda: nullcontext())
    """A Gauge during the wave (stay.pipeline._wave); a no-op elsewhere."""
    wave_width: int = 4
    model_width: int = 8
    repair_rounds: int = 2
    lock: threading.Lock = field(default_factory=threading.Lock)
    cancelled: threading.Event = field(default_factory=threading.Event)
    """Set when the run is interrupted: no wave task writes a file after it."""
    run_number: int = 1
    """This run's number in .state/run-log.md: names its .state/retired/run-<n>/."""
    retired: list[str] = field(default_factory=list)
    screened: bool = False
    """Input moderation passed this run's brief (recorded in the ledger by scaffold)."""
    course_lock: Any = None
    """The CourseLock this run holds (stay.pipeline._lock), once it holds one."""
    house_limits: Any = None
    """DurationLimits of the run's house style (stay.briefs.house_limits)."""
    model_slots: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(8))
    _plan_cache: dict[tuple[str, int, int], LessonPlan] = field(default_factory=dict)

    def say(self, line: str) -> None:
        self.progress(line)

    def may_write(self, phase: str) -> bool:
        """Whether this command authors ``phase`` (else its nodes only check)."""
        return phase in self.authors

    def hint(self, *words: str) -> str:
        """A command to suggest, with the --courses-dir this run was given."""
        return command_hint(self.courses_arg, *words)

    @property
    def course(self) -> CourseState:
        if self.state is None:
            raise PipelineError(f"course '{self.slug}' is not loaded; this is a bug in stay")
        return self.state

    def produce(self, request: ModelRequest, parse: Callable[[ModelAnswer], T]) -> T:
        """Ask, and parse the answer into an artefact. An answer that does not fit its
        schema is asked for once more, with the validation errors attached; a second
        misfit is reported (AnswerError, naming the stage, the file and the field)."""
        try:
            return parse(self.ask(request))
        except AnswerError as exc:
            self.say(f"  {request.artefact}: the answer did not fit its schema; asking once more")
            note = f"Your previous answer did not fit the output schema: {exc}. Answer again."
            retry = request.model_copy(update={
                "user": request.user + "\n## schema_errors\n\n" + note + "\n",
                "inputs": {**request.inputs, "schema_errors": [str(exc)]}})
            return parse(self.ask(retry))

    def ask(self, request: ModelRequest) -> ModelAnswer:
        """One model call, under the model-call cap, counted and priced."""
        model = model_for(request.role)
        with self.model_slots, self.calls_in_flight:
            start = time.perf_counter()
            answer = self.backend.complete(request, model)
            seconds = time.perf_counter() - start
        self.account(request, answer, seconds)
        return answer

    def account(self, request: ModelRequest, answer: ModelAnswer, seconds: float = 0.0) -> None:
        """Count, price (at the batch price when a batch paid) and trace one answer."""
        if self.tracer is not None:
            self.tracer.call(request, answer, seconds)
        price = cost(answer.model, answer.usage, batch=answer.batch)
        with self.lock:
            self.calls += 1
            stage = self.usage_by_stage.get(request.stage, Usage())
            self.usage_by_stage[request.stage] = stage + answer.usage
            if price is None:
                self.unpriced.add(answer.model)
            else:
                self.cost += price
                self.cost_by_stage[request.stage] = self.cost_by_stage.get(request.stage, 0.0) + price
            self.usage = self.usage + answer.usage

    def wrote(self, paths: list[str]) -> None:
        """Record files just written by the pipeline in the ledger and the run's list."""
        with self.lock:
            self.course.record(paths)
            self.written.extend(paths)

    def refresh_graph(self) -> None:
        """Rebuild the artefact graph once the curriculum (and plans) are on disk."""
        curriculum = self.curriculum()
        if curriculum is not None:
            self.course.graph = course_graph(curriculum, self.plans(curriculum))

    def curriculum(self) -> Curriculum | None:
        path = self.root / "curriculum.yaml"
        return load(path, Curriculum) if path.is_file() else None

    def plans(self, curriculum: Curriculum | None = None) -> dict[str, LessonPlan]:
        """Every plan on disk, by lesson id (re-read only when a file changed)."""
        curriculum = curriculum if curriculum is not None else self.curriculum()
        found: dict[str, LessonPlan] = {}
        if curriculum is None:
            return found
        for module in curriculum.modules:
            for lesson in module.lessons:
                path = self.root / f"modules/{module.id}-{module.slug}/{lesson.id}.plan.yaml"
                if path.is_file():
                    found[lesson.id] = self._load_plan(path)
        return found

    def _load_plan(self, path: Path) -> LessonPlan:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        cached = self._plan_cache.get(key)
        if cached is None:
            cached = load(path, LessonPlan)
            self._plan_cache[key] = cached
        return cached
