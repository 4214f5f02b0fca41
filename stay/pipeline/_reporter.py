"""The reporter: what a run says, with the time since it started and what it has cost.

One of the four collaborators a node handler works through (``stay.pipeline._run``):
the course reader reads, the model gateway asks, the ledger records, and this says.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from stay._secrets import redact
from stay.pipeline._progress import Ending, Progress, ProgressSink, ProgressUpdate


@dataclass
class Reporter:
    progress: Progress
    cost: Callable[[], float | None] = lambda: None
    """What the run has paid so far (None when a model it used has no price)."""
    started: float = field(default_factory=time.monotonic)
    """When the run began: progress counts elapsed time from here."""

    def say(self, line: str) -> None:
        # any sink, a notebook's too, gets no secret (a warning may quote an exception)
        self._emit(ProgressUpdate(redact(line), self.elapsed(), self.cost()))

    def tick(self, label: str, done: int, total: int) -> None:
        """Counted work finished: ``[done/total] label``, with the elapsed time and cost."""
        self._emit(ProgressUpdate(label, self.elapsed(), self.cost(), done, total))

    def end(self, outcome: str, ending: Ending) -> None:
        """The run's last word, to a sink that draws (a bar closes on it); a plain callable
        is not sent it, as whoever reads the result says the outcome (once)."""
        if isinstance(self.progress, ProgressSink):
            self.progress.update(ProgressUpdate(redact(outcome), self.elapsed(), self.cost(), final=ending))

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _emit(self, update: ProgressUpdate) -> None:
        if isinstance(self.progress, ProgressSink):
            self.progress.update(update)
        else:
            self.progress(update.line())
