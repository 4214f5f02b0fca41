"""One run of the pipeline: what it was asked to do (``RunConfig``, frozen), what it has
done (``Tally``, typed), and the ``Run`` context the node handlers receive, which holds
the collaborators they work through: the course reader (``_reader``), the model
gateway (``_gateway``), the reporter (``_reporter``), the ledger (``CourseState``) and
the ``Writer``, with the ``Walk`` state. Each handler is passed the ones it names
(``_inject``)."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stay._words import SPEAKS, YES, Speaks, command_hint
from stay.artefacts import Artefact, Brief, DurationLimits, dump
from stay.errors import PipelineError
from stay.models import ModelClient, OfflineBackend, Price, Usage, answer_cost, price_label, prices_of
from stay.pipeline._course_graph import artefact_graph, derived_files
from stay.pipeline._gateway import ModelGateway, cost_cap
from stay.pipeline._ledger import Sources, same_bytes
from stay.pipeline._progress import Progress
from stay.pipeline._reader import RunReader
from stay.pipeline._reporter import Reporter
from stay.pipeline._state import CourseState
from stay.pipeline._thread import ThreadNote, drop_proposal, recorded_thread
from stay.requests import ModelAnswer
from stay.settings import Settings
from stay.stages import Prompts, Stage
from stay.validate import CourseReport, Defect

if TYPE_CHECKING:
    from stay.models import RequestCache
    from stay.pipeline._fix import Change
    from stay.pipeline._repair import RepairReport
    from stay.pipeline._wave import Wave, WaveStats


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
    retries: Any = None
    """The AnthropicBackend whose retry rules the batch calls follow (None: its defaults)."""


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
    show: bool = False
    """``stay revise --show``: a revision is kept as a proposal and shown, not written (``_thread``)."""
    screen: bool = True
    """Screen the brief through the backend; False only from an explicit ``--no-screen``."""
    routes: Mapping[str, str] = field(default_factory=dict)
    """Router -> the successor this command goes on to (``_graph.route``): what a router
    node answers, and the runner follows."""
    not_reviewed: str = ""
    """Why this run reviews no lesson (the offline backend, ``--no-review``); '' when it may."""
    speaks: Speaks = field(default_factory=SPEAKS.get)
    """Who the hints are for, taken when the run starts (``stay._words.SPEAKS``)."""

    def hint(self, *words: str) -> str:
        return command_hint(self.courses_arg, *words, speaks=self.speaks)

    @property
    def yes_option(self) -> str:
        """``--yes`` or ``yes=True``, as ``hint`` speaks."""
        return YES[self.speaks]

    def may_write(self, phase: str) -> bool:
        """Whether this command authors ``phase`` (else its nodes only check)."""
        return phase in self.authors

    def stage(self, name: str) -> Stage:
        return next(stage for stage in self.stages if stage.name == name)


@dataclass
class Tally:
    """What a run has done so far: calls, tokens, dollars, files. Wave threads add to it
    at once, so every change goes through its lock."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    usage_by_stage: dict[str, Usage] = field(default_factory=dict)
    calls_by_stage: dict[str, int] = field(default_factory=dict)
    prices: dict[str, list[float]] = field(default_factory=dict)
    """Stage -> the price of each of its priced calls, in US dollars."""
    unpriced: set[str] = field(default_factory=set)
    written: list[str] = field(default_factory=list)
    """Files whose bytes this run changed (a file written again as it was is not one)."""
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

    def add_call(self, stage: str, answer: ModelAnswer, prices: Mapping[str, Price] | None = None) -> None:
        """Count one answer, priced at the backend's ``prices`` (None: Claude's)."""
        price = answer_cost(answer, prices)
        with self.lock:
            self.calls += 1
            self.calls_by_stage[stage] = self.calls_by_stage.get(stage, 0) + 1
            self.usage_by_stage[stage] = self.usage_by_stage.get(stage, Usage()) + answer.usage
            if price is None:
                self.unpriced.add(price_label(answer))
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
class Walk:
    """What one walk carries from node to node, mutable and per run: the ledger once the
    course exists, the cancel its wave threads check, the course lock, the moderation
    verdict, the wave's tasks and revise's pending notes. A handler that changes one of
    them names ``walk``; the others get the collaborators alone."""

    slug: str
    state: CourseState | None = None
    """The ledger, once the course exists (scaffold makes it for a new one)."""
    cancelled: threading.Event = field(default_factory=threading.Event)
    """Set when the run is interrupted: no wave task writes a file after it."""
    screened: bool = False
    """Input moderation passed this run's brief (recorded in the ledger by scaffold)."""
    unscreened: str | None = None
    """Why this run's brief was screened by nothing (``--no-screen``, the service
    unreachable, a replay with no recorded verdict): said, and written in the run log."""
    wave: Wave | None = None
    """The wave's tasks, started by the wave nodes (or revise_files) and awaited by a barrier."""
    revisions: dict[str, str] = field(default_factory=dict)
    """The revisions still to send (``revise_seed`` drops a note a file already has):
    what revise's nodes regenerate, and the note each write of one records."""
    threads: dict[str, list[ThreadNote]] = field(default_factory=dict)
    """Each revised file's reviewer thread so far (``_thread``): given to its request, and
    recorded, with the new note as kept, when the file is written."""
    proposed: dict[str, str] | None = None
    """``revise --show``: the revised files' texts, kept here instead of written; None
    for every other run."""

    @property
    def course(self) -> CourseState:
        """The ledger (a handler that names ``ledger`` gets this)."""
        if self.state is None:
            raise PipelineError(f"course '{self.slug}' is not loaded; this is a bug in stay")
        return self.state


@dataclass(frozen=True)
class Writer:
    """The one way a node's files reach the course: written, recorded in the ledger and
    on the tally as one step, and the artefact graph rebuilt from what is on disk."""

    stages: tuple[Stage, ...]
    reader: RunReader
    tally: Tally
    walk: Walk

    def refresh_graph(self) -> None:
        """Rebuild the artefact graph once the curriculum (and plans) are on disk."""
        curriculum = self.reader.curriculum()
        if curriculum is not None:
            self.walk.course.graph = artefact_graph(curriculum, self.reader.plans(), self.stages,
                                                    derived_files(self.stages, self.reader.exists, self.reader.load))

    def write(self, made: Mapping[str, Artefact]) -> bool:
        """Write files the pipeline made, and record them in the ledger and the run's list,
        as one step (``CourseState.write``: no crash leaves a finished file unrecorded); a
        revised file's ledger entry keeps the note it was revised with. Nothing is written
        once the run is cancelled: False. Under ``revise --show`` a revised file is not
        written: its text is the run's proposal (``walk.proposed``)."""
        walk = self.walk
        if walk.proposed is not None:
            shown = [path for path in made if path in walk.revisions]
            if shown and walk.cancelled.is_set():
                return False
            walk.proposed.update({path: dump(made[path]) for path in shown})
            made = {path: artefact for path, artefact in made.items() if path not in walk.revisions}
        if not made:
            return True
        paths = list(made)
        revised = {path: walk.revisions[path] for path in paths if path in walk.revisions}
        self.reader.wrote(paths)
        texts = {path: dump(artefact) for path, artefact in made.items()}
        # a first note is its own thread: the ledger's revision {note, sha} says it, as before threads
        threads = {path: recorded_thread(walk.threads[path], note) for path, note in revised.items()
                   if walk.threads.get(path)}
        same = {path for path in paths if same_bytes(walk.course.root / path, texts[path])}
        if not walk.course.write(texts, revisions=revised, cancelled=walk.cancelled, threads=threads):
            return False
        for path in revised:  # the thread goes on in the ledger; a proposal for the old bytes is over
            drop_proposal(walk.course.root, path)
        with self.tally.lock:
            self.tally.written.extend(path for path in paths if path not in same)
            if same:  # recorded again (its inputs' hashes), so course.yaml's statuses are projected again
                self.tally.projected = None
            self.tally.revised.update(revised)
        return True


def _unbilled(backend: ModelClient) -> bool:
    """Whether no call of this backend is billed (offline, behind the request cache or
    not): there is nothing to cap, and a worst case priced at the settings' models
    would stop a run that costs nothing."""
    return isinstance(getattr(backend, "inner", backend), OfflineBackend)


@dataclass(frozen=True)
class Run:
    """A run's context, as the runner holds it: what the run was asked (``config``), what
    it has done (``tally``), its collaborators, each its own object (the course
    ``reader``, the ``model`` gateway, the ``report``; the ledger is ``walk.course``,
    and the ``writer`` is made from them) and the ``walk`` state. Handlers never receive it: the runner passes
    each the collaborators its parameters name (``_inject``)."""

    config: RunConfig
    reader: RunReader
    model: ModelGateway
    report: Reporter
    tally: Tally
    walk: Walk

    @property
    def writer(self) -> Writer:
        """The writer over this run's reader, tally and walk (it holds nothing of its own,
        so one made here is the same as any other)."""
        return Writer(self.config.stages, self.reader, self.tally, self.walk)

    @classmethod
    def start(cls, config: RunConfig, backend: ModelClient, progress: Progress, brief: Brief | None, *,
              state: CourseState | None = None,
              model_slots: threading.Semaphore | None = None) -> Run:
        """A run's context, its collaborators made from the config and sharing one tally."""
        tally = Tally()

        def cost() -> float | None:
            with tally.lock:
                return None if tally.unpriced else tally.cost

        report = Reporter(progress, cost)
        model = ModelGateway(backend, config.settings, tally, report,
                             model_slots or threading.Semaphore(config.settings.model_concurrency),
                             cap=None if _unbilled(backend) else cost_cap(config.settings, prices_of(backend)))
        reader = RunReader(config.root, brief)
        walk = Walk(config.slug, state=state, proposed={} if config.show else None)
        return cls(config=config, reader=reader, model=model, report=report, tally=tally, walk=walk)

    @property
    def course(self) -> CourseState:
        """The ledger."""
        return self.walk.course

    def write(self, made: Mapping[str, Artefact]) -> bool:
        return self.writer.write(made)
