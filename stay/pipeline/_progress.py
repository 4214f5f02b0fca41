"""Progress: what a run says while it works, to a terminal or a notebook, and the reporter nodes say it through."""

from __future__ import annotations

import html
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from stay._display import clock, plural, terminal_text
from stay._secrets import redact

Progress = Callable[[str], None]
"""Where a run's progress lines go (default: stderr, or a bar in a notebook)."""

Ending = Literal["complete", "stopped", "failed"]
"""How a run ended, as its last update says."""


@dataclass(frozen=True)
class ProgressUpdate:
    """One thing a run says: the time since it started, its cost so far, and ``done`` of ``total``."""

    text: str
    elapsed: float
    """Seconds since the run started."""
    cost: float | None
    """US dollars the run has paid so far; None when a model it used has no price."""
    done: int | None = None
    total: int | None = None
    final: Ending | None = None
    """Set on a run's last update only: a bar closes in that state; a terminal is never sent it."""

    @property
    def counted(self) -> bool:
        return self.done is not None and self.total is not None

    def line(self) -> str:
        """The terminal's line: counted work as ``  [ 7/12] m02-l01: ...  (4.2 s, $0.0123)``."""
        if self.done is None or self.total is None:
            return self.text
        width = len(str(self.total))
        return f"  [{self.done:>{width}}/{self.total}] {self.text}  ({clock(self.elapsed)}, {money(self.cost)})"


@runtime_checkable
class ProgressSink(Protocol):
    """A progress sink that draws updates itself (a notebook's bar); any other gets ``line()``."""

    def __call__(self, line: str) -> None: ...

    def update(self, update: ProgressUpdate) -> None: ...


def money(cost: float | None) -> str:
    return "cost unknown" if cost is None else f"${cost:.4f}"


def print_progress(line: str) -> None:
    """The terminal sink: one line on stderr, flushed, redacted and escaped for a terminal."""
    sys.stderr.write(terminal_text(redact(line)) + "\n")
    sys.stderr.flush()


_KERNEL_SHELLS = frozenset({"ipykernel.zmqshell.ZMQInteractiveShell", "google.colab._shell.Shell"})
"""The shells that draw HTML, as tqdm.auto tells them: ipykernel's, and Colab's subclass of it."""


def in_notebook() -> bool:
    """Whether this process is a notebook's kernel, by its IPython shell's classes' names: IPython is looked
    up, never imported, so a script pays nothing for the check."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and any(f"{cls.__module__}.{cls.__qualname__}" in _KERNEL_SHELLS
                                     for cls in type(shell).__mro__)


def default_progress() -> Progress:
    return NotebookProgress() if in_notebook() else print_progress


def _ipython_show() -> Callable[[str], None]:
    """Show HTML in the cell, then replace it in place on every later call."""
    import importlib

    ipython: Any = importlib.import_module("IPython.display")  # only in a notebook, where it is installed
    handle: Any = None

    def show(markup: str) -> None:
        nonlocal handle
        if handle is None:
            handle = ipython.display(ipython.HTML(markup), display_id=True)
        else:
            handle.update(ipython.HTML(markup))

    return show


@dataclass
class NotebookProgress:
    """A progress bar in the notebook cell that runs the build, redrawn in place: the wave's lessons,
    elapsed time, running cost and latest lines. ``show`` gets the HTML (default: an IPython display handle)."""

    show: Callable[[str], None] | None = None
    keep: int = 4
    """How many of the latest lines to show under the bar."""
    lines: list[str] = field(default_factory=list)
    latest: ProgressUpdate | None = None
    counted: ProgressUpdate | None = None
    """The latest counted update: what the bar shows."""
    ended: Ending | None = None
    """How the run ended, once its final update came: the bar is then drawn for good."""

    def __call__(self, line: str) -> None:
        """A line from outside a run (the backend announcing itself): shown as it is."""
        if self.ended is None:
            self._add(line)
            self._draw()

    def update(self, update: ProgressUpdate) -> None:
        if self.ended is not None:  # one run's bar: nothing redraws it once it has ended
            return
        self.ended = update.final
        self.latest = update
        if update.counted:
            self.counted = update
        self._add(update.text)
        self._draw()

    def html(self) -> str:
        counted = self.counted
        if counted is None or counted.done is None or counted.total is None:
            # no value: the browser draws it indeterminate (a spinner) until the run ends;
            # then it is full for a complete run, empty for one that stopped or failed
            full = int(self.ended == "complete")
            bar = "<progress></progress>" if self.ended is None else f'<progress value="{full}" max="1"></progress>'
            count = ""
        else:
            bar = f'<progress value="{counted.done}" max="{counted.total}"></progress>'
            count = f"{counted.done}/{plural(counted.total, 'task')} · "
        latest = self.latest
        where = f"{clock(latest.elapsed)} · {money(latest.cost)}" if latest is not None else "starting"
        if self.ended is not None:
            where = f"{where} · {self.ended}"
        text = "\n".join(html.escape(line) for line in self.lines)
        state = "" if self.ended is None else f' data-ended="{self.ended}"'
        return (f'<div class="stay-progress"{state}>{bar} <span>{html.escape(count + where)}</span>'
                f'<pre style="margin:0.2em 0">{text}</pre></div>')

    def _add(self, line: str) -> None:
        self.lines = [*self.lines, line][-max(self.keep, 1):]

    def _draw(self) -> None:
        if self.show is None:
            self.show = _ipython_show()
        self.show(self.html())


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
        """The run's last word, to a sink that draws (a bar closes on it); a plain callable is not sent it."""
        if isinstance(self.progress, ProgressSink):
            self.progress.update(ProgressUpdate(redact(outcome), self.elapsed(), self.cost(), final=ending))

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _emit(self, update: ProgressUpdate) -> None:
        if isinstance(self.progress, ProgressSink):
            self.progress.update(update)
        else:
            self.progress(update.line())
