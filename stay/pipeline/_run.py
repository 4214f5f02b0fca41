"""One run of the pipeline, in three parts: what it was asked to do (``RunConfig``,
frozen), what it has done (``Tally``, typed), and the ``Run`` the node handlers share,
which reads the course (``Reader`` for the stages' inputs) and asks the model."""

from __future__ import annotations

import math
import os
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stay._secrets import redact, redact_data
from stay.artefacts import Artefact, Brief, Curriculum, LessonPlan, artefact_type, dump
from stay.artefacts._brief import DurationLimits
from stay.artefacts._io import parse_bytes, read_bytes
from stay.errors import AnswerError, PipelineError
from stay.models import ModelClient, Rejecting, Usage, cost
from stay.pipeline._course_graph import artefact_graph
from stay.pipeline._layout import CourseLayout
from stay.pipeline._ledger import Sources
from stay.pipeline._progress import Progress, ProgressSink, ProgressUpdate
from stay.pipeline._state import CourseState
from stay.requests import ModelAnswer, ModelRequest
from stay.settings import Settings
from stay.stages import Prompts, Stage
from stay.validate import CourseReport, Defect

if TYPE_CHECKING:
    from stay._lock import CourseLock
    from stay.models import RequestCache
    from stay.pipeline._fix import Change
    from stay.pipeline._repair import RepairReport
    from stay.pipeline._trace import Tracer
    from stay.pipeline._wave import Wave, WaveStats

def command_hint(courses_arg: str, *words: str) -> str:
    """A ``stay`` command to suggest, carrying the --courses-dir the user passed (none
    when it is the default), so it can be pasted as it is."""
    where = "" if courses_arg == "courses" else f" --courses-dir {shlex.quote(courses_arg)}"
    return f"`stay {' '.join(words)}{where}`"


class Stop(Exception):
    """Ends a run early, where it must wait (a gate) or has nothing to do."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(reason)
        self.where = where
        self.reason = reason


@dataclass(frozen=True)
class BatchPlan:
    """The wave goes through Message Batches: the SDK client, the request cache the
    batch answers into, and how often to poll."""

    client: Any
    cache: RequestCache
    poll_seconds: float


@dataclass(frozen=True)
class RunConfig:
    """What a run was asked to do. Nothing here changes while it runs."""

    command: str
    slug: str
    root: Path
    courses_arg: str
    """--courses-dir as the user gave it, for the commands a hint tells them to run."""
    authors: tuple[str, ...]
    """The phases this command may write (stay.pipeline._graph.PHASES); elsewhere it checks."""
    settings: Settings
    prompts: Prompts
    stages: tuple[Stage, ...]
    limits: DurationLimits
    """The shortest and longest course the run's house style allows."""
    sources: Sources
    """What each stage is made with (prompts, references, schema, model): ledger inputs."""
    yes: bool = False
    run_number: int = 1
    """This run's number in .state/run-log.md: names its .state/retired/run-<n>/."""
    batch: BatchPlan | None = None
    revisions: Mapping[str, str] = field(default_factory=dict)
    """``stay revise``: course file -> the reviewer's note to regenerate it with."""
    force: bool = False
    """``stay revise --force``: revise files edited by hand too (their bytes are kept)."""
    routes: Mapping[str, str] = field(default_factory=dict)
    """Router -> the successor this command goes on to (``_graph.route``): what a router
    node answers, and the runner follows."""

    def hint(self, *words: str) -> str:
        return command_hint(self.courses_arg, *words)

    def stage(self, name: str) -> Stage:
        return next(stage for stage in self.stages if stage.name == name)


@dataclass
class Tally:
    """What a run has done so far: calls, tokens, dollars, files. Wave threads add to it
    at once, so every change goes through its lock."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    usage_by_stage: dict[str, Usage] = field(default_factory=dict)
    prices: dict[str, list[float]] = field(default_factory=dict)
    """Stage -> the price of each of its priced calls, in US dollars."""
    unpriced: set[str] = field(default_factory=set)
    written: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    revised: dict[str, str] = field(default_factory=dict)
    """Files this run revised, with their notes."""
    projected: int | None = None
    """How many files were written when land_manifest last wrote the status projection."""
    validation: CourseReport | None = None
    repair: RepairReport | None = None
    wave: WaveStats | None = None
    changes: list[Change] = field(default_factory=list)
    """What each regeneration to fix defects changed (repair, the check at the write), in order."""
    unresolved: dict[str, tuple[Defect, ...]] = field(default_factory=dict)
    """File -> the FAILs the check at the write left in it (only files with some)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_call(self, stage: str, answer: ModelAnswer) -> None:
        price = cost(answer.model, answer.usage, batch=answer.batch)
        with self.lock:
            self.calls += 1
            self.usage_by_stage[stage] = self.usage_by_stage.get(stage, Usage()) + answer.usage
            if price is None:
                self.unpriced.add(answer.model)
            else:
                self.prices.setdefault(stage, []).append(price)
            self.usage = self.usage + answer.usage

    # Wave threads finish in any order, and a running float sum depends on its order: the
    # same answers could cost $0.01234 or $0.01234000001. math.fsum is exactly rounded,
    # so the totals are the same whatever order the calls ended in.

    @property
    def cost(self) -> float:
        """US dollars for the priced calls (``unpriced`` lists the models with no price)."""
        return math.fsum(price for prices in self.prices.values() for price in prices)

    @property
    def cost_by_stage(self) -> dict[str, float]:
        return {stage: math.fsum(prices) for stage, prices in self.prices.items()}

    def add_written(self, paths: list[str]) -> None:
        with self.lock:
            self.written.extend(paths)

    def add_change(self, change: Change) -> None:
        with self.lock:
            self.changes.append(change)

    def settle(self, paths: Sequence[str], remaining: Sequence[Defect]) -> None:
        """The check at the write found ``remaining`` in ``paths``: what it found before
        in them is replaced (a file fixed since is listed no more)."""
        with self.lock:
            for path in paths:
                self.unresolved.pop(path, None)
            for defect in remaining:
                self.unresolved[defect.path] = (*self.unresolved.get(defect.path, ()), defect)


@dataclass
class Run:
    """What the node handlers share: the config, the tally, the course on disk, and the
    model behind its two caps."""

    config: RunConfig
    backend: ModelClient
    progress: Progress
    brief: Brief | None
    state: CourseState | None = None
    tally: Tally = field(default_factory=Tally)
    tracer: Tracer | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    """Set when the run is interrupted: no wave task writes a file after it."""
    model_slots: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(8))
    calls_in_flight: AbstractContextManager[Any] = field(default_factory=nullcontext)
    """A Gauge during the wave (stay.pipeline._wave); a no-op elsewhere."""
    course_lock: CourseLock | None = None
    screened: bool = False
    """Input moderation passed this run's brief (recorded in the ledger by scaffold)."""
    wave: Wave | None = None
    """The wave's tasks, started by the wave nodes and awaited by gather."""
    revisions: dict[str, str] = field(default_factory=dict)
    """The revisions still to send (``revise_seed`` drops a note a file already has):
    what revise's nodes regenerate, and the note each write of one records."""
    started: float = field(default_factory=time.monotonic)
    """When the run began: progress counts elapsed time from here."""
    _loaded: dict[str, tuple[bytes, Artefact]] = field(default_factory=dict, repr=False)
    """course file -> the bytes last parsed and what they parsed to"""
    _plans: dict[str, LessonPlan] | None = field(default=None, repr=False)
    """Every plan, as last read; dropped whenever the run writes a file."""
    _layout: CourseLayout | None = field(default=None, repr=False)

    # -- what the handlers read ----------------------------------------------------------

    @property
    def slug(self) -> str:
        return self.config.slug

    @property
    def root(self) -> Path:
        return self.config.root

    def say(self, line: str) -> None:
        # any sink, a notebook's too, gets no secret (a warning may quote an exception)
        self._emit(ProgressUpdate(redact(line), time.monotonic() - self.started, self._cost_so_far()))

    def tick(self, label: str, done: int, total: int) -> None:
        """Counted work finished: ``[done/total] label``, with the elapsed time and cost."""
        self._emit(ProgressUpdate(label, time.monotonic() - self.started, self._cost_so_far(), done, total))

    def _cost_so_far(self) -> float | None:
        with self.tally.lock:
            return None if self.tally.unpriced else self.tally.cost

    def _emit(self, update: ProgressUpdate) -> None:
        if isinstance(self.progress, ProgressSink):
            self.progress.update(update)
        else:
            self.progress(update.line())

    def may_write(self, phase: str) -> bool:
        """Whether this command authors ``phase`` (else its nodes only check)."""
        return phase in self.config.authors

    def hint(self, *words: str) -> str:
        """A command to suggest, with the --courses-dir this run was given."""
        return self.config.hint(*words)

    @property
    def course(self) -> CourseState:
        if self.state is None:
            raise PipelineError(f"course '{self.slug}' is not loaded; this is a bug in stay")
        return self.state

    @property
    def layout(self) -> CourseLayout:
        curriculum = self.curriculum()
        if curriculum is None:
            return CourseLayout.empty()
        if self._layout is None or self._layout.curriculum is not curriculum:
            self._layout = CourseLayout(curriculum)
        return self._layout

    # -- reading the course (the stages' inputs) ------------------------------------------

    def load(self, path: str) -> Artefact:
        """A course file as its artefact, parsed again only when its bytes changed. The
        bytes are read every time: a cache keyed on a file's time and size would miss a
        rewrite of the same size within one tick of the filesystem's clock."""
        file = self.root / path
        data = read_bytes(file)
        cached = self._loaded.get(path)
        if cached is not None and cached[0] == data:
            return cached[1]
        artefact: Artefact = parse_bytes(artefact_type(path), data, os.fspath(file))
        self._loaded[path] = (data, artefact)
        return artefact

    def curriculum(self) -> Curriculum | None:
        if not (self.root / "curriculum.yaml").is_file():
            return None
        loaded = self.load("curriculum.yaml")
        assert isinstance(loaded, Curriculum)
        return loaded

    def plans(self) -> dict[str, LessonPlan]:
        """Every plan on disk, by lesson id (read again only after the run wrote a file)."""
        if self._plans is not None:
            return self._plans
        found: dict[str, LessonPlan] = {}
        for place in self.layout.lessons():
            path = place.path("{lesson}.plan.yaml")
            if (self.root / path).is_file():
                plan = self.load(path)
                assert isinstance(plan, LessonPlan)
                found[place.id] = plan
        self._plans = found
        return found

    def refresh_graph(self) -> None:
        """Rebuild the artefact graph once the curriculum (and plans) are on disk."""
        curriculum = self.curriculum()
        if curriculum is not None:
            self.course.graph = artefact_graph(curriculum, self.plans(), self.config.stages)

    # -- asking the model -------------------------------------------------------------------

    def produce(self, request: ModelRequest, parse: Callable[[ModelAnswer], list[Artefact]]) -> list[Artefact]:
        """Ask, and parse the answer into artefacts. An answer that does not fit its
        schema is asked for once more, with the validation errors attached; a second
        misfit is reported (AnswerError, naming the stage, the file and the field)."""
        try:
            return self.checked(request, parse)
        except AnswerError as exc:
            self.say(f"  {request.artefact}: the answer did not fit its schema; asking once more")
            note = f"Your previous answer did not fit the output schema: {exc}. Answer again."
            return self.checked(with_note(request, "schema_errors", [str(exc)], note), parse)

    def checked(self, request: ModelRequest, parse: Callable[[ModelAnswer], list[Artefact]]) -> list[Artefact]:
        """Ask and parse (the schema, then the stage's checks). An answer that fails is
        rejected where the backend keeps answers (the request cache), so no rerun or
        replay is served it again: "ask again" means the model is asked."""
        answer = self.ask(request)
        try:
            return parse(answer)
        except AnswerError as exc:
            if isinstance(self.backend, Rejecting):
                self.backend.reject(request, self.config.settings.model(request.role), str(exc))
            raise

    def ask(self, request: ModelRequest) -> ModelAnswer:
        """One model call, under the model-call cap, counted and priced."""
        model = self.config.settings.model(request.role)
        with self.model_slots, self.calls_in_flight:
            start = time.perf_counter()
            answer = self.backend.complete(request, model)
            seconds = time.perf_counter() - start
        # every answer, whatever served it (a cache written before secrets were cut out of
        # answers, a relay, a backend of the caller's), before it is traced or written
        data, model_name = redact_data(answer.data), redact(answer.model)
        if data != answer.data or model_name != answer.model:
            answer = answer.model_copy(update={"data": data, "model": model_name})
        self.account(request, answer, seconds)
        return answer

    def account(self, request: ModelRequest, answer: ModelAnswer, seconds: float = 0.0) -> None:
        """Count, price (at the batch price when a batch paid) and trace one answer."""
        if self.tracer is not None:
            self.tracer.call(request, answer, seconds)
        self.tally.add_call(request.stage, answer)

    def write(self, made: Mapping[str, Artefact]) -> bool:
        """Write files the pipeline made, and record them in the ledger and the run's list,
        as one step (``CourseState.write``: no crash leaves a finished file unrecorded); a
        revised file's ledger entry keeps the note it was revised with. Nothing is written
        once the run is cancelled: False."""
        if not made:
            return True
        paths = list(made)
        revised = {path: self.revisions[path] for path in paths if path in self.revisions}
        if any(path.endswith(".plan.yaml") or path == "curriculum.yaml" for path in paths):
            self._plans = None
        texts = {path: dump(artefact) for path, artefact in made.items()}
        if not self.course.write(texts, revisions=revised, cancelled=self.cancelled):
            return False
        with self.tally.lock:
            self.tally.written.extend(paths)
            self.tally.revised.update(revised)
        return True


def with_note(request: ModelRequest, name: str, value: object, text: str) -> ModelRequest:
    """The request with one more named input, shown last in its user message: the
    validator's defects to fix, a schema error to mend, a reviewer's note."""
    return request.model_copy(update={"inputs": {**request.inputs, name: value},
                                      "user": request.user + f"\n## {name}\n\n{text}\n"})
