"""The model gateway: every model call of a run, under its caps, counted, priced, traced.

One of the four collaborators a node handler works through (``stay.pipeline._run``).
A call waits for one of the run's model slots (``STAY_MODEL_CONCURRENCY``), is timed,
has any secret cut out of its answer before anything else sees it, and is added to the
run's tally and trace. ``produce`` is the one way an answer becomes artefacts.
Under a cost cap (``--max-cost``, ``STAY_MAX_COST``) a request is sent only when its
worst case fits in what is left (``CostCap``): a stage's call, the input screen
(``screening``), and a retry its backend sends (``stay.models.hold_more``).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from stay._secrets import redact, redact_data
from stay.artefacts import Artefact
from stay.errors import AnswerError, CostCapReached, ModelError, TruncationError, Unreachable, UsageError
from stay.models import (
    SCREEN_STAGE,
    SCREENING,
    THINKING,
    ModelClient,
    Price,
    Rejecting,
    Screening,
    cost,
    holding,
    prices_of,
    request_params,
    screen_request,
    screening_of,
)
from stay.requests import ROLES, ModelAnswer, ModelRequest, Usage
from stay.settings import Settings

if TYPE_CHECKING:
    from stay.pipeline._reporter import Reporter
    from stay.pipeline._run import Tally
    from stay.pipeline._trace import Tracer
    from stay.validate import Defect


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
    """A Gauge during the wave (stay.pipeline._wave); a no-op elsewhere."""
    tracer: Tracer | None = None
    cap: CostCap | None = None
    answered: dict[str, tuple[ModelRequest, str]] = field(default_factory=dict)
    """A request's ``artefact`` (its file, or its module's files as a pattern) -> the request,
    and model, whose answer this run last parsed into it: what ``reject_failed`` rejects."""
    unreachable: Unreachable | None = None
    """The first ``Unreachable`` of this run (its screen's, say): every later call says it at
    once instead of trying the service again (and waiting for its connect timeout again)."""

    def produce(self, request: ModelRequest, parse: Callable[[ModelAnswer], list[Artefact]]) -> list[Artefact]:
        """Ask, and parse the answer into artefacts. An answer that does not fit its
        schema is asked for once more, with the validation errors attached; a second
        misfit is reported (AnswerError, naming the stage, the file and the field)."""
        try:
            return self.checked(request, parse)
        except AnswerError as exc:
            self.report.say(f"  {request.artefact}: the answer did not fit its schema; asking once more")
            note = f"Your previous answer did not fit the output schema: {exc}. Answer again."
            return self.checked(with_note(request, "schema_errors", [str(exc)], note), parse)

    def checked(self, request: ModelRequest, parse: Callable[[ModelAnswer], list[Artefact]]) -> list[Artefact]:
        """Ask and parse (the schema, then the stage's checks). An answer that fails is
        rejected where the backend keeps answers (the request cache), so no rerun or
        replay is served it again: "ask again" means the model is asked."""
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
        """The validator's check of files this run wrote (``written``): the answer a file in
        ``failed`` was written from is rejected where the backend keeps answers, as a schema
        misfit is (``checked``), so no rerun, repair or replay is served it again."""
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
        """The input screen of ``text``, under the cost cap as any call is (its worst case at
        the screen's own thinking room), its billed reply counted, verdict or not."""
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
        """The call made inside is told (``stay.models.hold_more``) of every further request
        its backend sends (a retry with more room, a JSON-mode answer asked again), and of
        the reply before it that was paid for: that reply is counted at once, as the call it
        was (whatever then becomes of the next). Under a cost cap, the call's worst case is
        held before it is made, a further request's before that is sent (the paid reply's
        hold let go, its real price now in the tally), and a first request sent with more
        room than held for (the room an earlier run's cut-off needed: ``hold_instead``) held
        in the first one's place; all let go only once the answer's real price is in the
        tally, so the two are never both missing at once. Taken once a slot is, so calls
        waiting for one hold nothing."""
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
        """Count, price (at the batch price when a batch paid) and trace one answer;
        ``error`` names what a billed reply that could not be used raised."""
        if self.tracer is not None:
            self.tracer.call(request, answer, seconds, error)
        self.tally.add_call(request.stage, answer, prices_of(self.backend))


CUT_OFF = frozenset({"max_tokens", "length"})
"""The stop reasons of a reply cut off at its room: the Messages API's, Chat Completions'."""

CHARS_PER_TOKEN = 4
"""How a worst case counts a request's input: one token per 4 characters of the request
as it is sent (its JSON: instructions, inputs, schema), as the offline estimate counts."""


def worst_case(request: ModelRequest, model: str, settings: Settings,
               prices: Mapping[str, Price] | None = None) -> float | None:
    """The most one call of ``request`` can cost: ``worst_of`` its parameters as sent, with
    its thinking room (the screen's own, ``SCREENING``, or its role's); None for a model
    with no price in ``prices`` (the backend's; None: Claude's)."""
    thinking = SCREENING if request.stage == SCREEN_STAGE else THINKING.get(request.role)
    return worst_of(request_params(request, model, thinking, answer_tokens=settings.answer_tokens), prices)


def worst_of(params: dict[str, Any], prices: Mapping[str, Price] | None = None) -> float | None:
    """The most one request with these Messages API parameters can cost: its whole input
    (counted from the parameters as sent) at the highest price input is billed at (a
    cache write, when the request marks a prefix for the cache; else full input price,
    never a cache read), plus ``max_tokens`` of output (the answer's room and the
    thinking room); None for a model with no price in ``prices`` (None: Claude's). Another
    backend's wire format differs, but its input is the same text and schema, counted alike."""
    tokens = math.ceil(len(json.dumps(params, ensure_ascii=False)) / CHARS_PER_TOKEN)
    contents = [message["content"] for message in params["messages"] if isinstance(message["content"], list)]
    blocks = [*params["system"], *(block for content in contents for block in content)]
    writes = any("cache_control" in block for block in blocks)
    usage = (Usage(cache_creation_input_tokens=tokens, output_tokens=params["max_tokens"]) if writes
             else Usage(input_tokens=tokens, output_tokens=params["max_tokens"]))
    return cost(params["model"], usage, prices=prices)


def cost_cap(settings: Settings, prices: Mapping[str, Price] | None = None) -> CostCap | None:
    """The run's cost cap, or None without one. A cap over a model with no price in the
    backend's ``prices`` (None: Claude's) is refused up front: what cannot be priced cannot
    be capped (a backend that declares no prices cannot be capped at all)."""
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
    """A run's cap in US dollars. Before each call its worst case is held against the cap,
    atomically, with what the run has paid and what calls in flight hold: a call that
    would not fit is not made (``CostCapReached``). Once its answer is counted, what was
    held is let go, so only the real price stays spent."""

    limit: float
    prices: Mapping[str, Price] | None = None
    """The backend's price table the worst cases are priced at (None: Claude's)."""
    holds: list[float] = field(default_factory=list)
    """The worst case of each call in flight (a list, not a running sum, so that once all
    are let go nothing is left held by rounding)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def held(self) -> float:
        return math.fsum(self.holds)

    def hold(self, worst: float | None, where: str, model: str, tally: Tally, *,
             replacing: float | None = None) -> float:
        """Hold ``worst`` (one request's worst case, priced at ``prices``) for the request
        ``where`` names, or raise ``CostCapReached`` when it would not fit (or cannot be priced).
        ``replacing``: a hold of the same call's that ``worst`` takes the place of (its
        request was never sent), let go only if ``worst`` fits without it."""
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
    """The request with one more named input, shown last in its user message: the
    validator's defects to fix, a schema error to mend, a reviewer's note."""
    return request.model_copy(update={"inputs": {**request.inputs, name: value},
                                      "user": request.user + f"\n## {name}\n\n{text}\n"})
