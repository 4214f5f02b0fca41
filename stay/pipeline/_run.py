"""The run: its config and tally, the model gateway, producing and fixing a file, the policy on what
to (re)write, the wave of lessons written in parallel, and bounded repair of the leaf artefacts, routed
on each defect's owner (docs/pipeline.md, "Repair")."""

from __future__ import annotations

import difflib
import json
import math
import re
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stay._display import plural
from stay._secrets import redact, redact_data
from stay._words import SPEAKS, YES, Speaks, command_hint
from stay.artefacts import (
    Artefact,
    Brief,
    DurationLimits,
    Glossary,
    LessonContent,
    LessonPlan,
    LessonReview,
    Module,
    dump,
    dump_yaml,
    to_data,
)
from stay.errors import AnswerError, CostCapReached, ModelError, PipelineError, TruncationError, Unreachable, UsageError
from stay.models import (
    SCREEN_STAGE,
    SCREENING,
    THINKING,
    ModelClient,
    OfflineBackend,
    Price,
    Rejecting,
    Screening,
    Usage,
    answer_cost,
    cost,
    describe_cost,
    holding,
    prefetch,
    price_label,
    prices_of,
    request_params,
    screen_request,
    screening_of,
)
from stay.pipeline._graph import GATED, artefact_graph, derived_files
from stay.pipeline._layout import (
    GLOSSARY,
    LessonPlace,
    RunReader,
    Unit,
    course_report,
    defects_in,
    norm_term,
    stage_inputs,
)
from stay.pipeline._state import CourseState, Sources, Status, ThreadNote, drop_proposal, recorded_thread, same_bytes
from stay.pipeline._trace import Progress, Reporter, Tracer
from stay.requests import ROLES, ModelAnswer, ModelRequest
from stay.settings import Settings
from stay.stages import REGENERATE, Prompts, Stage, lesson_file
from stay.validate import CourseReport, Defect, Severity

if TYPE_CHECKING:
    from stay.models import RequestCache


@dataclass
class ModelGateway:
    backend: ModelClient
    settings: Settings
    """Which model each role asks."""
    tally: Tally
    report: Reporter
    slots: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(8))
    """The model-call cap: calls in flight at once, whatever asks."""
    in_flight: AbstractContextManager[Any] = field(default_factory=nullcontext)
    """A Gauge during the wave (stay.pipeline._run); a no-op elsewhere."""
    tracer: Tracer | None = None
    cap: CostCap | None = None
    answered: dict[str, tuple[ModelRequest, str]] = field(default_factory=dict)
    """A request's ``artefact`` -> the request and model whose answer this run last parsed into it."""
    unreachable: Unreachable | None = None
    """The run's first ``Unreachable``: every later call says it at once, not waiting for a timeout again."""

    def produce(self, request: ModelRequest, parse: Callable[[ModelAnswer], list[Artefact]]) -> list[Artefact]:
        """Ask and parse; an answer that does not fit its schema is asked for once more, with the errors."""
        try:
            return self.checked(request, parse)
        except AnswerError as exc:
            self.report.say(f"  {request.artefact}: the answer did not fit its schema; asking once more")
            note = f"Your previous answer did not fit the output schema: {exc}. Answer again."
            return self.checked(with_note(request, "schema_errors", [str(exc)], note), parse)

    def checked(self, request: ModelRequest, parse: Callable[[ModelAnswer], list[Artefact]]) -> list[Artefact]:
        """Ask and parse; an answer that fails is rejected where the backend keeps answers, so no rerun or
        replay is served it again."""
        answer = self.ask(request)
        model = self.settings.model(request.role)
        try:
            made = parse(answer)
        except AnswerError as exc:
            if isinstance(self.backend, Rejecting):
                self.backend.reject(request, model, str(exc))
            raise
        self.answered[request.artefact] = (request, model)
        return made

    def reject_failed(self, failed: Mapping[str, Collection[Defect]], written: Collection[str]) -> None:
        """Reject (as ``checked`` does) the answer each written file the validator ``failed`` came from."""
        if not isinstance(self.backend, Rejecting):
            return
        for path, defects in failed.items():
            if path not in written or not defects:
                continue
            for artefact in [a for a in self.answered if fnmatchcase(path, a)]:  # a module's call: a pattern
                request, model = self.answered.pop(artefact)
                codes = ", ".join(sorted({d.code for d in defects}))
                self.backend.reject(request, model, f"the validator found {codes} in {path}, the file it was "
                                                    "written to")

    def ask(self, request: ModelRequest) -> ModelAnswer:
        """One model call, under the model-call cap and the cost cap, counted and priced."""
        model = self.settings.model(request.role)
        with self._reachable(request), self.slots, self.in_flight, self._held(request, model):
            return self._asked(request, model)

    def screening(self, text: str) -> Screening:
        """The input screen of ``text``, under the cost cap as any call, its billed reply counted."""
        request = screen_request(text)
        with self._reachable(request), self._held(request, self.settings.model("analysis")):
            try:
                found = screening_of(self.backend, text)
            except (AnswerError, ModelError) as exc:  # a billed verdict that cannot be used is still paid for
                if isinstance(exc.billed, ModelAnswer):
                    self.account(request, exc.billed, error=type(exc).__name__)
                raise
            if found.answer is not None:
                self.account(found.request, found.answer)
            return found

    @contextmanager
    def _reachable(self, request: ModelRequest) -> Iterator[None]:
        """Once the service was unreachable in this run, not asked again: said at once."""
        down = self.unreachable
        if down is not None:
            raise Unreachable(f"stage {request.stage} ({request.artefact}): not asked, since {down.what}",
                              fix=down.fix)
        try:
            yield
        except Unreachable as exc:
            self.unreachable = self.unreachable or exc
            raise

    @contextmanager
    def _held(self, request: ModelRequest, model: str) -> Iterator[None]:
        """Tell the call inside (``holding``) of every further request its backend sends: the paid reply
        before it is counted at once, and under a cost cap each request's worst case is held before it is
        sent, let go only once the answer's real price is in the tally (docs/models.md, "Capping cost")."""
        cap = self.cap
        where = f"{request.stage} ({request.artefact})"
        holds = [] if cap is None else [cap.hold(worst_case(request, model, self.settings, cap.prices), where,
                                                 model, self.tally)]

        def more(params: dict[str, Any], paid: ModelAnswer | None) -> bool:
            cut = paid is None or paid.stop_reason in CUT_OFF
            if paid is not None:  # paid for and not the answer: counted now, as the call it was
                self.account(request, paid, error=(TruncationError if cut else AnswerError).__name__)
                if cap is not None and holds:
                    cap.release(holds.pop(0))
            if cap is not None:
                again = (f"asking {where} again with more room (its answer was cut off at max_tokens: paid, counted)"
                         if cut else f"asking {where} again (its answer did not fit its schema: paid, counted)")
                holds.append(cap.hold(worst_of(params, cap.prices), again, model, self.tally))
            return paid is not None

        def instead(params: dict[str, Any]) -> None:
            if cap is not None:
                roomier = f"asking {where} with more room (an earlier run's answer to it was cut off at max_tokens)"
                holds[0] = cap.hold(worst_of(params, cap.prices), roomier, model, self.tally, replacing=holds[0])

        try:
            with holding(more, instead):
                yield
        finally:
            if cap is not None:
                for held in holds:
                    cap.release(held)

    def _asked(self, request: ModelRequest, model: str) -> ModelAnswer:
        start = time.perf_counter()
        try:
            answer = self.backend.complete(request, model)
        except (AnswerError, ModelError) as exc:
            # a reply that was paid for and cannot be used (cut off, refused, not
            # JSON) is counted, priced and traced before the error goes on
            if isinstance(exc.billed, ModelAnswer):
                self.account(request, exc.billed, time.perf_counter() - start, error=type(exc).__name__)
            raise
        seconds = time.perf_counter() - start
        # every answer, whatever served it (a cache written before secrets were cut out of
        # answers, a relay, a backend of the caller's), before it is traced or written
        data, model_name = redact_data(answer.data), redact(answer.model)
        if data != answer.data or model_name != answer.model:
            answer = answer.model_copy(update={"data": data, "model": model_name})
        self.account(request, answer, seconds)
        return answer

    def account(self, request: ModelRequest, answer: ModelAnswer, seconds: float = 0.0,
                error: str | None = None) -> None:
        """Count, price and trace one answer; ``error`` names what a billed, unusable reply raised."""
        if self.tracer is not None:
            self.tracer.call(request, answer, seconds, error)
        self.tally.add_call(request.stage, answer, prices_of(self.backend))


CUT_OFF = frozenset({"max_tokens", "length"})
"""The stop reasons of a reply cut off at its room: the Messages API's, Chat Completions'."""

CHARS_PER_TOKEN = 4
"""Without a tokenizer (a worst case, the estimate without the token-counting endpoint), a token is taken
to be about four characters."""


def worst_case(request: ModelRequest, model: str, settings: Settings,
               prices: Mapping[str, Price] | None = None) -> float | None:
    """The most one call of ``request`` can cost (``worst_of`` with its thinking room); None: no price."""
    thinking = SCREENING if request.stage == SCREEN_STAGE else THINKING.get(request.role)
    return worst_of(request_params(request, model, thinking, answer_tokens=settings.answer_tokens), prices)


def worst_of(params: dict[str, Any], prices: Mapping[str, Price] | None = None) -> float | None:
    """The most a request with these Messages API parameters can cost: its whole input at the highest input
    price (a cache write when it marks one) plus ``max_tokens`` of output; None for a model with no price."""
    tokens = math.ceil(len(json.dumps(params, ensure_ascii=False)) / CHARS_PER_TOKEN)
    contents = [message["content"] for message in params["messages"] if isinstance(message["content"], list)]
    blocks = [*params["system"], *(block for content in contents for block in content)]
    writes = any("cache_control" in block for block in blocks)
    usage = (Usage(cache_creation_input_tokens=tokens, output_tokens=params["max_tokens"]) if writes
             else Usage(input_tokens=tokens, output_tokens=params["max_tokens"]))
    return cost(params["model"], usage, prices=prices)


def cost_cap(settings: Settings, prices: Mapping[str, Price] | None = None) -> CostCap | None:
    """The run's cost cap, or None; a cap over a model with no price is refused up front."""
    if settings.max_cost is None:
        return None
    for role in ROLES:
        model = settings.model(role)
        if cost(model, Usage(), prices=prices) is None:
            raise UsageError(f"--max-cost (STAY_MAX_COST) cannot cap the {role} role's model {model!r}: it has no "
                             f"price on file; set STAY_MODEL_{role.upper()} to a priced model, or run without a cap")
    return CostCap(settings.max_cost, prices=prices)


@dataclass
class CostCap:
    """A run's cap in US dollars: each call's worst case is held, atomically, against it with what was paid
    and what calls in flight hold, and let go once its answer is counted."""

    limit: float
    prices: Mapping[str, Price] | None = None
    """The backend's price table the worst cases are priced at (None: Claude's)."""
    holds: list[float] = field(default_factory=list)
    """The worst case of each call in flight (a list, so nothing is left held by rounding)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def held(self) -> float:
        return math.fsum(self.holds)

    def hold(self, worst: float | None, where: str, model: str, tally: Tally, *,
             replacing: float | None = None) -> float:
        """Hold ``worst`` for the request ``where`` names, or raise ``CostCapReached``; ``replacing``: the same
        call's hold it takes the place of, let go only if ``worst`` fits without it."""
        with self.lock:
            with tally.lock:
                spent, unpriced = tally.cost, sorted(tally.unpriced)
            if worst is None or unpriced:
                raise CostCapReached(f"stopped before {where}: the cost cap cannot be "
                                     f"kept, a reply had no price on file ({', '.join(unpriced) or model}); "
                                     "rerun without --max-cost (STAY_MAX_COST) to go on")
            others = list(self.holds)
            if replacing is not None:
                others.remove(replacing)
            held = math.fsum(others)
            if spent + held + worst > self.limit:
                flight = f" (and ${held:.4f} held for calls in flight)" if held else ""
                raise CostCapReached(
                    f"stopped before {where} at the cost cap: ${spent:.4f} spent"
                    f"{flight} of ${self.limit:.4f}, ${max(0.0, self.limit - spent):.4f} left, and this call could "
                    f"cost up to ${worst:.4f}; rerun with a higher --max-cost (or STAY_MAX_COST) to go on: what "
                    "is finished is not paid again")
            self.holds[:] = [*others, worst]
            return worst

    def release(self, worst: float) -> None:
        with self.lock:
            self.holds.remove(worst)


def with_note(request: ModelRequest, name: str, value: object, text: str) -> ModelRequest:
    """The request with one more named input, shown last in its user message."""
    return request.model_copy(update={"inputs": {**request.inputs, name: value},
                                      "user": request.user + f"\n## {name}\n\n{text}\n"})


class Stop(Exception):
    """Ends a run early, where it must wait (a gate) or has nothing to do."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(reason)
        self.where = where
        self.reason = reason


@dataclass(frozen=True)
class BatchPlan:
    """The wave goes through Message Batches: the SDK client, the request cache, how often to poll."""

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
    """``stay revise --show``: a revision is kept as a proposal and shown, not written (``_state``)."""
    screen: bool = True
    """Screen the brief through the backend; False only from an explicit ``--no-screen``."""
    routes: Mapping[str, str] = field(default_factory=dict)
    """Router -> the successor this command goes on to (``_graph.route``)."""
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


def tokens_of(usage: Usage) -> str:
    return (f"{usage.input_tokens} input, {usage.cache_creation_input_tokens} cache-write, "
            f"{usage.cache_read_input_tokens} cache-read, {usage.output_tokens} output tokens")


@dataclass(frozen=True)
class Spent:
    """What a run has paid, in total and per stage, whether it went to the end or not."""

    calls: int
    """Model calls (a billed call that failed is counted too)."""
    usage: Usage
    cost: float | None
    """US dollars; None (unknown) when a call used a model with no price on file."""
    unpriced: tuple[str, ...] = ()
    """Models used that have no price on file (then ``cost`` is None)."""
    usage_by_stage: dict[str, Usage] = field(default_factory=dict)
    cost_by_stage: dict[str, float] = field(default_factory=dict)
    """US dollars per stage (priced calls only; see ``unpriced``)."""
    calls_by_stage: dict[str, int] = field(default_factory=dict)

    def lines(self, *, so_far: bool = False) -> list[str]:
        """``usage:`` lines, total then per stage; ``so_far`` for a run that did not end."""
        total = describe_cost(self.cost, set(self.unpriced)) + (" so far" if so_far else "")
        lines = [f"usage: {plural(self.calls, 'call')}; {self.tokens()}; {total}"]
        for stage, usage in sorted(self.usage_by_stage.items()):
            price = self.cost_by_stage.get(stage)
            # a stage's priced calls only: with an unpriced model its sum would look complete
            paid = "cost unknown" if price is None or self.unpriced else f"${price:.4f}"
            lines.append(f"usage: {stage}: {plural(self.calls_by_stage.get(stage, 0), 'call')}; "
                         f"{tokens_of(usage)}; {paid}")
        return lines

    def tokens(self) -> str:
        return tokens_of(self.usage)


@dataclass
class Tally:
    """What a run has done so far; wave threads add to it at once, so every change takes its lock."""

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

    # Wave threads finish in any order, and a running float sum depends on its order ($0.01234 or
    # $0.01234000001): math.fsum is exactly rounded, so the totals are the same in any order.

    @property
    def cost(self) -> float:
        """US dollars for the priced calls (``unpriced`` lists the models with no price)."""
        return math.fsum(price for prices in self.prices.values() for price in prices)

    @property
    def cost_by_stage(self) -> dict[str, float]:
        return {stage: math.fsum(prices) for stage, prices in self.prices.items()}

    def total(self) -> float | None:
        """What the run has paid so far, in US dollars; None while any call is unpriced (under the lock)."""
        with self.lock:
            return None if self.unpriced else self.cost

    def spent(self) -> Spent:
        """What the run has paid so far (under the lock: wave threads add to it)."""
        with self.lock:
            return Spent(self.calls, self.usage, None if self.unpriced else self.cost, tuple(sorted(self.unpriced)),
                         dict(sorted(self.usage_by_stage.items())), dict(sorted(self.cost_by_stage.items())),
                         dict(sorted(self.calls_by_stage.items())))

    def add_written(self, paths: list[str]) -> None:
        with self.lock:
            self.written.extend(paths)

    def settle(self, paths: Sequence[str], remaining: Sequence[Defect]) -> None:
        """The check at the write found ``remaining`` in ``paths``, replacing what it found there before."""
        with self.lock:
            for path in paths:
                self.unresolved.pop(path, None)
            for defect in remaining:
                self.unresolved[defect.path] = (*self.unresolved.get(defect.path, ()), defect)


@dataclass
class Walk:
    """What one walk carries from node to node, mutable and per run; a handler that changes it names ``walk``."""

    slug: str
    state: CourseState | None = None
    """The ledger, once the course exists (scaffold makes it for a new one)."""
    cancelled: threading.Event = field(default_factory=threading.Event)
    """Set when the run is interrupted: no wave task writes a file after it."""
    screened: bool = False
    """Input moderation passed this run's brief (recorded in the ledger by scaffold)."""
    unscreened: str | None = None
    """Why this run's brief was screened by nothing: said, and written in the run log."""
    wave: Wave | None = None
    """The wave's tasks, started by the wave nodes (or revise_files) and awaited by a barrier."""
    revisions: dict[str, str] = field(default_factory=dict)
    """The revisions still to send, and the note each write of one records."""
    threads: dict[str, list[ThreadNote]] = field(default_factory=dict)
    """Each revised file's reviewer thread so far: given to its request, recorded when it is written."""
    proposed: dict[str, str] | None = None
    """``revise --show``: the revised files' texts, kept instead of written; None for every other run."""

    @property
    def course(self) -> CourseState:
        """The ledger (a handler that names ``ledger`` gets this)."""
        if self.state is None:
            raise PipelineError(f"course '{self.slug}' is not loaded; this is a bug in stay")
        return self.state


@dataclass(frozen=True)
class Writer:
    """The one way a node's files reach the course: written, recorded in the ledger and the tally at once."""

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
        """Write and record files as one step (``CourseState.write``); False once the run is cancelled. Under
        ``revise --show`` a revised file is the run's proposal (``walk.proposed``), not written."""
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


@dataclass(frozen=True)
class Run:
    """A run's context as the runner holds it; handlers never receive it, only the collaborators their
    parameters name (``bind``)."""

    config: RunConfig
    reader: RunReader
    model: ModelGateway
    report: Reporter
    tally: Tally
    walk: Walk

    @property
    def writer(self) -> Writer:
        """The writer over this run's reader, tally and walk (it holds nothing of its own)."""
        return Writer(self.config.stages, self.reader, self.tally, self.walk)

    @classmethod
    def start(cls, config: RunConfig, backend: ModelClient, progress: Progress, brief: Brief | None, *,
              state: CourseState | None = None) -> Run:
        """A run's context, its collaborators made from the config and sharing one tally."""
        tally = Tally()
        report = Reporter(progress, tally.total)
        unbilled = isinstance(getattr(backend, "inner", backend), OfflineBackend)  # offline: nothing to cap
        model = ModelGateway(backend, config.settings, tally, report,
                             threading.Semaphore(config.settings.model_concurrency),
                             cap=None if unbilled else cost_cap(config.settings, prices_of(backend)))
        reader = RunReader(config.root, brief)
        walk = Walk(config.slug, state=state, proposed={} if config.show else None)
        return cls(config=config, reader=reader, model=model, report=report, tally=tally, walk=walk)

    @property
    def wave(self) -> Wave:
        """The run's wave, worked out on first use from every wave stage's declaration."""
        if self.walk.wave is None:
            self.walk.wave = _plan(self.config, self.reader, self.model, self.report, self.writer)
        return self.walk.wave


@dataclass(frozen=True)
class Note:
    """Something added to a request: the validator's defects, a reviewer's guidance."""

    name: str
    value: object
    text: str


@dataclass(frozen=True)
class Job:
    """One call of a stage: its request, and how its answer becomes its files."""

    stage: Stage
    paths: tuple[str, ...]
    """The files the answer becomes, in the order ``parse`` returns them."""
    request: ModelRequest
    parse: Callable[[ModelAnswer], list[Artefact]]


def job(config: RunConfig, reader: RunReader, stage: Stage, unit: Unit, notes: tuple[Note, ...] = ()) -> Job:
    """The call of ``stage`` for ``unit`` (a lesson, a module, or the course)."""
    layout = reader.layout
    if isinstance(unit, Module):
        paths = tuple(place.path(stage.output) for place in layout.lessons_of(unit))
    elif unit is not None:
        paths = (unit.path(stage.output),)
    else:
        paths = (stage.output,)
    artefact = paths[0] if len(paths) == 1 else f"{paths[0].rsplit('/', 1)[0]}/*{stage.output.split('}', 1)[1]}"
    inputs = stage_inputs(stage, unit, reader)
    request = stage.request(inputs, config.prompts, artefact)
    for note in notes:
        request = with_note(request, note.name, note.value, note.text)
    return Job(stage, paths, request, lambda answer: stage.artefacts(answer, inputs, artefact, config.limits))


def owner(config: RunConfig, reader: RunReader, ledger: CourseState, path: str) -> tuple[Stage, Unit]:
    """The stage that writes ``path``, and the lesson or module it writes it for."""
    graph = ledger.graph
    if path not in graph or graph.nodes[path].get("stage") not in {s.name for s in config.stages}:
        raise PipelineError(f"{path} is written by no stage of this course")
    stage = next(stage for stage in config.stages if stage.name == graph.nodes[path]["stage"])
    lesson = graph.nodes[path].get("unit")
    if stage.scope == "course" or lesson is None:
        return stage, None
    place = reader.layout.lesson(lesson)
    if place is None:
        raise PipelineError(f"{path}: lesson {lesson} is not in the curriculum")
    return stage, (place.module if stage.scope == "module" else place)


@dataclass(frozen=True)
class Fixer:
    """What asking a stage again for a file on disk works through (repair, revision, the check at the write),
    and recording what changed."""

    config: RunConfig
    reader: RunReader
    ledger: CourseState
    model: ModelGateway
    writer: Writer
    tally: Tally
    report: Reporter


def regenerate(fixer: Fixer, path: str, notes: tuple[Note, ...] = (), *, only: tuple[str, ...] = ()) -> list[str]:
    """Ask ``path``'s stage again and write its answer (only the files in ``only``); the paths written."""
    stage, unit = owner(fixer.config, fixer.reader, fixer.ledger, path)
    made = job(fixer.config, fixer.reader, stage, unit, notes)
    artefacts = fixer.model.produce(made.request, made.parse)
    keep = set(only) or set(made.paths)
    chosen = {target: artefact for target, artefact in zip(made.paths, artefacts, strict=True) if target in keep}
    return list(chosen) if fixer.writer.write(chosen) else []


CURRENT = "current_version"
DEFECTS = "defects_to_fix"
DIFF_LINES = 80
"""The most diff lines the run log keeps per fixed file: a local fix's hunks fit, a rewritten lesson's not."""


def as_it_stands(reader: RunReader, path: str) -> Note | None:
    """The file as it stands (None if missing): a lesson's body without its front matter (derived from the
    plan), any other file as its YAML data."""
    if not reader.exists(path):
        return None
    artefact = reader.load(path)
    if isinstance(artefact, LessonContent):
        return Note(CURRENT, artefact.body, fenced(artefact.body, "markdown"))
    data = to_data(artefact)
    return Note(CURRENT, data, "```yaml\n" + dump_yaml(data) + "```")


def fenced(text: str, info: str) -> str:
    """``text`` in a fence longer than any run of backticks in it, so its own fences cannot close it early."""
    fence = "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))
    return f"{fence}{info}\n{text}{'' if text.endswith(chr(10)) else chr(10)}{fence}"


def regeneration_notes(prompts: Prompts, current: Note | None, ask: Note) -> tuple[Note, ...]:
    """What regenerating a file adds to the inputs: the file as it stands, ``ask``, the instruction block
    (``ask`` alone for a file not on disk yet)."""
    if current is None:
        return (ask,)
    text = prompts.template(REGENERATE).strip()
    return current, ask, Note(REGENERATE, text, text)


def defects_note(defects: Sequence[Defect], current: Note | None) -> Note:
    """The validator's defects as a request input, each line followed by its quote from the file as it stands
    (``current``), so a model need not count paragraphs to find it."""
    quotes = [d.quote(current.value) if current else "" for d in defects]
    lines = [f"- {d.code} {d.path} {d.subject}: {d.message}" + "".join(f"\n  > {line}" for line in q.splitlines())
             for d, q in zip(defects, quotes, strict=True)]
    fields = [{**d.as_dict(), "quote": q} if q else d.as_dict() for d, q in zip(defects, quotes, strict=True)]
    return Note(DEFECTS, fields, "\n".join(lines))


@dataclass(frozen=True)
class Change:
    """What one regeneration did to one file."""

    path: str
    kept: int
    """Lines of the file as it stood that are in the new one, in order (difflib's matching blocks)."""
    lines: int
    """Lines the file had before."""
    diff: str
    """The unified diff, at most ``DIFF_LINES`` lines (a last line says how many were cut)."""

    @classmethod
    def of(cls, path: str, before: str, after: str) -> Change:
        old, new = before.splitlines(), after.splitlines()
        kept = sum(block.size for block in difflib.SequenceMatcher(None, old, new, autojunk=False)
                   .get_matching_blocks())
        diff = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", n=1, lineterm=""))
        if len(diff) > DIFF_LINES:
            diff = [*diff[:DIFF_LINES], f"... {plural(len(diff) - DIFF_LINES, 'more diff line')}"]
        return cls(path, kept, len(old), "\n".join(diff))

    @property
    def share(self) -> float:
        """The share of the old file's lines kept (1.0 for an empty file)."""
        return self.kept / self.lines if self.lines else 1.0

    def describe(self) -> str:
        return f"{self.kept} of {plural(self.lines, 'line')} kept ({self.share:.0%})"

    def log_lines(self) -> list[str]:
        """The change as the run log shows it: one line, then the diff, fenced."""
        head = f"- fixed {self.path}: {self.describe()}"
        if not self.diff:
            return [head]
        return [head, "", *fenced(self.diff, "diff").splitlines(), ""]


@dataclass(frozen=True)
class RepairRound:
    actionable_before: int
    actionable_after: int
    regenerated: tuple[str, ...]
    changes: tuple[Change, ...] = ()
    """What each regeneration changed: the share of its lines kept, and its diff."""

    @property
    def least_kept(self) -> Change | None:
        """The file of this round that kept the smallest share of its lines."""
        return min(self.changes, key=lambda c: (c.share, c.path), default=None)


@dataclass(frozen=True)
class RepairReport:
    """Why repair stopped, what each round did, and what is left for a person."""

    stop: str
    rounds: tuple[RepairRound, ...] = ()
    unrepaired: tuple[Defect, ...] = field(default=())
    """Defects left at the end, gated owners' among them: reported, never repaired."""
    edited: tuple[str, ...] = ()
    """Files with defects that were edited by hand, so left as they are for a person."""


def fix(fixer: Fixer, path: str, defects: Sequence[Defect]) -> Change | None:
    """Ask ``path``'s stage again with the defects and the file, write this file only and record the change;
    None when the run was cancelled before the write."""
    reader = fixer.reader
    before = dump(reader.load(path))
    current = as_it_stands(reader, path)
    notes = regeneration_notes(fixer.config.prompts, current, defects_note(defects, current))
    if path not in regenerate(fixer, path, notes, only=(path,)):
        return None
    change = Change.of(path, before, dump(reader.load(path)))
    with fixer.tally.lock:
        fixer.tally.changes.append(change)
    fixer.report.say(f"  {path}: {change.describe()}")
    return change


def check_written(fixer: Fixer, cancelled: threading.Event, paths: Sequence[str]) -> tuple[Defect, ...]:
    """Validate at the write: the FAILs in ``paths`` go back to their stage once, before any gate; what
    remains is recorded on the tally (``BuildResult.unresolved``) and returned."""
    if not paths or cancelled.is_set():
        return ()
    config, report, reject = fixer.config, fixer.report, fixer.model.reject_failed
    found = defects_in(config.root, config.settings, paths, fails_only=True)
    if found:
        reject(by_path(found), paths)
        for path, defects in by_path(found).items():
            codes = ", ".join(sorted({d.code for d in defects}))
            report.say(f"  {path}: {plural(len(defects), 'FAIL')} at the write ({codes}); asking once more "
                       "with the defects and the file")
            fix(fixer, path, defects)
        found = defects_in(config.root, config.settings, paths, fails_only=True)
        reject(by_path(found), paths)
        for path, defects in by_path(found).items():
            report.say(f"  {path}: {plural(len(defects), 'FAIL')} {'remains' if len(defects) == 1 else 'remain'} "
                       f"({', '.join(sorted({d.code for d in defects}))}); the gate lists them")
    fixer.tally.settle(paths, found)
    return found


def by_path(defects: Sequence[Defect], key: Callable[[Defect], str] = lambda d: d.path) -> dict[str, list[Defect]]:
    """The path ``key`` gives each defect (its own, unless given) -> its defects, in order."""
    grouped: dict[str, list[Defect]] = {}
    for defect in defects:
        grouped.setdefault(key(defect), []).append(defect)
    return grouped


def needs_writing(config: RunConfig, ledger: CourseState, report: Reporter, path: str, phase: str) -> bool:
    """Whether ``path`` (of ``phase``) must be written now. Says what it decided."""
    status = ledger.status(path)
    if not config.may_write(phase):
        if phase in GATED:
            require_current(config, path, status)
        return False
    if status.state == "current":
        return False
    if status.state == "edited":
        say_kept(config, report, path, status)
        return False
    return True


def why(status: Status) -> str:
    """Why a file is written: 'missing', or 'stale <- its changed inputs'."""
    return "missing" if status.state == "missing" else f"stale <- {', '.join(status.why)}"


def say_kept(config: RunConfig, report: Reporter, path: str, status: Status) -> None:
    if status.why:
        report.say(f"  {path}: kept (edited by hand), though {', '.join(status.why)} changed since; delete it to "
                   "regenerate it, or accept it with " + config.hint("adopt", config.slug))
    else:
        report.say(f"  {path}: kept (edited by hand)")


def require_current(config: RunConfig, path: str, status: Status) -> None:
    """In a phase the command does not author, a gated file must be there and up to date."""
    if status.state == "missing" or status.why:
        raise PipelineError(f"{path} is {why(status)}; stay {config.command} does not write it: run "
                            f"{config.hint('build', config.slug)} first")


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
    """The wave's tasks: started by the wave nodes, awaited by gather, stopped once the walk is cancelled."""

    model: ModelGateway
    report: Reporter
    writer: Writer
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
        settings = self.model.settings
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
        self.calls_before = self.writer.tally.calls
        self.total = len(self.lessons) + len(self.courses)
        self._report_lock = threading.Lock()
        self._order = [*self.lessons, *self.courses]
        # progress reports tasks in this order: the curriculum's, then the course's

    @property
    def empty(self) -> bool:
        return self.total == 0

    @property
    def in_flight(self) -> bool:
        """Tasks were started and not yet gathered (decided by the walk, not by a thread finishing)."""
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
        if self.writer.walk.cancelled.is_set():
            return None
        (made,) = self.model.produce(call.request, call.parse)
        return made

    def _progress(self, task: str, label: str) -> None:
        """Report ``task`` done in the wave's order, under the lock, so a course prints the same lines."""
        if self.writer.walk.cancelled.is_set():
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
        return WaveStats(len(self.lessons), self.writer.tally.calls - self.calls_before, self.lesson_gauge.most,
                         self.call_gauge.most, time.perf_counter() - self.started)

    def cancel(self, *, wait: bool) -> None:
        """No task writes after this returns, and pending tasks are dropped; ``wait`` waits for the running
        ones (Ctrl-C does not: ``then`` releases the course lock once they end)."""
        self.writer.walk.course.cancel(self.writer.walk.cancelled)
        self.lessons_pool.shutdown(wait=False, cancel_futures=True)
        self.calls_pool.shutdown(wait=False, cancel_futures=True)
        if wait:
            self._join()

    def _join(self) -> None:
        self.lessons_pool.shutdown(wait=True)
        self.calls_pool.shutdown(wait=True)
        self._joined.set()

    def then(self, release: Callable[[], None]) -> None:
        """Call ``release`` once every worker has ended, so no worker outlives the lock its run held."""
        if self._joined.is_set() or not self.futures:
            release()
            return

        def reap() -> None:
            self._join()
            release()

        threading.Thread(target=reap, name="stay-release", daemon=True).start()


def _plan(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, writer: Writer) -> Wave:
    ledger = writer.walk.course
    if not config.may_write("wave"):  # a command that does not author the wave says what it would write
        behind = [path for stage in config.stages if stage.phase == "wave" for path, _place in
                  reader.layout.outputs(stage) if ledger.status(path).state in ("missing", "stale")]
        if behind:
            report.say(f"wave: {plural(len(behind), 'file')} missing or stale; stay {config.command} does not "
                       f"write them ({config.hint('write', config.slug)} does)")
        return Wave(model, report, writer, {}, {})
    wave = Wave(model, report, writer, *wave_jobs(config, reader, lambda path: () if needs_writing(
        config, ledger, report, path, "wave") else None))
    if wave.empty:
        report.say("wave: every lesson and the capstone are current")
        return wave
    lessons, courses = wave.lessons, wave.courses
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


def wave_jobs(config: RunConfig, reader: RunReader,
              notes: Callable[[str], tuple[Note, ...] | None]) -> tuple[dict[str, list[Job]], dict[str, Job]]:
    """Each lesson's wave calls, then each course-scope wave stage's, for the files ``notes`` gives the notes
    of (None: that file is not asked for)."""
    stages = [stage for stage in config.stages if stage.phase == "wave"]
    lessons: dict[str, list[Job]] = {}
    for place in reader.layout.lessons():
        for stage in (s for s in stages if s.scope == "lesson"):
            given = notes(place.path(stage.output))
            if given is not None:
                lessons.setdefault(place.id, []).append(job(config, reader, stage, place, given))
    courses: dict[str, Job] = {}
    for stage in (s for s in stages if s.scope == "course"):
        given = notes(stage.output)
        if given is not None:
            courses[stage.name] = job(config, reader, stage, None, given)
    return lessons, courses


def review_stale(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, writer: Writer) -> None:
    """Review, concurrently within the wave's caps, each lesson whose review is missing or stale and whose
    files exist; after the wave's barrier, and by repair after a round, so a fix is confirmed."""
    stage = next((s for s in config.stages if s.phase == "review"), None)  # none: offline, or --no-review
    if stage is None:
        return
    reviewed = [file for _name, source in stage.inputs  # the plan is read from the plans, as ever
                if source is not LessonPlan and (file := lesson_file(source))]
    todo = [place for place in reader.layout.lessons() if all(reader.exists(place.path(f)) for f in reviewed)
            and needs_writing(config, writer.walk.course, report, place.path(stage.output), stage.phase)]
    if not todo:
        return
    # The validator's WARNs on the files the review reads go with each request, so the model judges the
    # lesson as a whole; computed from the review's ledger inputs, they need no edge of their own.
    warns = [d for d in course_report(config.root, config.settings).defects
             if d.severity == Severity.WARN and not d.code.startswith("rev")]
    lessons = {place.id: [job(config, reader, stage, place, (_warnings(place, reviewed, warns),))] for place in todo}
    wave = writer.walk.wave = Wave(model, report, writer, lessons, {})
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


def routed(config: RunConfig, reader: RunReader, defects: Sequence[Defect]) -> dict[str, list[Defect]]:
    """The leaf artefact each defect routes to -> its defects ('': those repair may not fix): repair regenerates
    wave stages' files only, of the lesson the defect's path belongs to (for ``ret001`` the lesson that
    introduced the term)."""
    layout = reader.layout
    outputs = {(stage.name, place.id if place else ""): path  # (stage, lesson id or '') -> the file it writes
               for stage in config.stages if stage.phase == "wave" for path, place in layout.outputs(stage)}
    prefixes = {place.id: place.path("{lesson}") for place in layout.lessons()}  # modules/<module dir>/<lesson id>
    glossary = reader.load_as(GLOSSARY, Glossary) if reader.exists(GLOSSARY) else Glossary(terms=[])
    introduced_in = {norm_term(t.term): t.introduced_in for t in reversed(glossary.terms)}

    def route(defect: Defect) -> str:
        if (defect.owner, "") in outputs:  # a course-scope wave stage: the capstone
            return outputs[(defect.owner, "")]
        if defect.code == "ret001":  # through the glossary, to the introducing lesson's quiz
            lesson = introduced_in.get(norm_term(defect.subject))
        else:
            lesson = next((i for i, prefix in prefixes.items() if defect.path.startswith(prefix + ".")), None)
        return outputs.get((defect.owner, lesson or ""), "")

    return by_path(defects, route)


def repair_course(fixer: Fixer) -> RepairReport:
    """Repair rounds until one of the four stops; the last validation is left on the tally."""
    config, reader, ledger, tally, say = fixer.config, fixer.reader, fixer.ledger, fixer.tally, fixer.report.say
    report = tally.validation if tally.validation is not None else course_report(config.root, config.settings)
    limit = config.settings.repair_rounds
    rounds: list[RepairRound] = []
    kept: set[str] = set()
    while True:
        if not report.defects:
            stop = "nothing remains"
            break
        todo = routed(config, reader, report.defects)
        todo.pop("", None)
        told = bool(kept)
        for path in sorted(todo):
            if ledger.status(path).state == "edited":  # a person's bytes are never overwritten
                found = todo.pop(path)
                if path not in kept:  # once, each defect as the validator words it
                    say(f"repair: {path}: edited by hand, so repair leaves it: fix it, or regenerate it "
                        f"(delete it, then {config.hint('write', config.slug)}); the validator found:")
                    for defect in found:
                        say(f"  {defect.line()}")
                kept.add(path)
        if kept and not told:
            say(f"repair: the house style they are checked against (banned phrases, word lists, limits): "
                f"{config.settings.resolved_data_dir() / 'house-style.yaml'}")
        if not todo:
            stop = "nothing actionable"
            break
        if len(rounds) >= limit:
            stop = "round limit"
            break
        before = sum(map(len, todo.values()))
        say(f"repair: round {len(rounds) + 1}: {plural(before, 'defect')} in {plural(len(todo), 'file')}")
        changes = [fix(fixer, path, todo[path]) for path in sorted(todo)]
        # a rewritten lesson's review is stale: reviewed again before the count, so a fixed
        # answer key is confirmed by the reviewer, not assumed
        review_stale(config, reader, fixer.model, fixer.report, fixer.writer)
        report = course_report(config.root, config.settings)  # the run's house style, as the validate node's
        left = routed(config, reader, report.defects)
        after = sum(len(found) for target, found in left.items() if target not in ("", *kept))
        # an answer whose file still holds what it was asked to fix is never served again
        fixer.model.reject_failed(left, {change.path for change in changes if change is not None})
        rounds.append(RepairRound(before, after, tuple(sorted(todo)), tuple(c for c in changes if c is not None)))
        if after >= before:
            stop = "a round reduced no count"
            break
    tally.validation = report
    say(f"repair: stopped ({stop}); {report.fails} FAIL, {report.warns} WARN remain")
    return RepairReport(stop, tuple(rounds), report.defects, tuple(sorted(kept)))
