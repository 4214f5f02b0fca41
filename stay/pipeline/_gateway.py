"""The model gateway: every model call of a run, under its caps, counted, priced, traced.

One of the four collaborators a node handler works through (``stay.pipeline._run``).
A call waits for one of the run's model slots (``STAY_MODEL_CONCURRENCY``), is timed,
has any secret cut out of its answer before anything else sees it, and is added to the
run's tally and trace. ``produce`` is the one way an answer becomes artefacts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stay._secrets import redact, redact_data
from stay.artefacts import Artefact
from stay.errors import AnswerError, ModelError
from stay.models import ModelClient, Rejecting
from stay.requests import ModelAnswer, ModelRequest
from stay.settings import Settings

if TYPE_CHECKING:
    from stay.pipeline._reporter import Reporter
    from stay.pipeline._run import Tally
    from stay.pipeline._trace import Tracer


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
        try:
            return parse(answer)
        except AnswerError as exc:
            if isinstance(self.backend, Rejecting):
                self.backend.reject(request, self.settings.model(request.role), str(exc))
            raise

    def ask(self, request: ModelRequest) -> ModelAnswer:
        """One model call, under the model-call cap, counted and priced."""
        model = self.settings.model(request.role)
        with self.slots, self.in_flight:
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
        self.tally.add_call(request.stage, answer)


def with_note(request: ModelRequest, name: str, value: object, text: str) -> ModelRequest:
    """The request with one more named input, shown last in its user message: the
    validator's defects to fix, a schema error to mend, a reviewer's note."""
    return request.model_copy(update={"inputs": {**request.inputs, name: value},
                                      "user": request.user + f"\n## {name}\n\n{text}\n"})
