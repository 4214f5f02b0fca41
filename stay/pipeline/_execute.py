"""A started run, walked through the pipeline's nodes: each node's handler under its
span, a checkpoint after each, then the run log, the trace and the result, whether the
run completed, stopped at a gate or failed.

Split from ``stay.pipeline._runner``, which checks and prepares a command's run (the
course, the backend, the lock) and hands it here; the handler table is read once a process.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from stay._display import plural
from stay.models import describe_cost, prices_of
from stay.pipeline._dag import Dag
from stay.pipeline._graph import CommandDecl
from stay.pipeline._keep import revised_reason, shown
from stay.pipeline._nodes import handlers
from stay.pipeline._progress import clock
from stay.pipeline._result import SPENT, BuildResult, Spent
from stay.pipeline._run import Run, Stop
from stay.pipeline._run_log import log_run
from stay.pipeline._state import load_manifest
from stay.pipeline._trace import Tracer, lesson_files
from stay.pipeline._walk import walk

_handlers = functools.cache(handlers)
"""The handler table of each pipeline (``_pipeline``'s, one per stage list): handlers'
parameters are read once a process, not once a run."""


def _walk(run: Run, pipeline: Dag, declared: CommandDecl,
          on_node: Callable[[str], None] | None) -> BuildResult:
    config = run.config
    table = _handlers(pipeline)
    otlp = config.settings.otlp
    tracer = run.model.tracer = Tracer(config.slug, config.command, run.model.backend.name,  # minted before the run
                                       capture=otlp is not None and otlp.capture_content,
                                       prices=prices_of(run.model.backend))
    stopped: str | None = None
    failed: str | None = None
    reason = "done"
    try:
        answers: dict[str, str] = {}
        for name in walk(pipeline, config.command, answers.__getitem__):  # a router's edge is its answer
            kind = pipeline.nodes[name]["kind"]
            if kind == "stage":
                run.report.say(f"[{name}]")
            with tracer.span(name, kind, pipeline.nodes[name]["stages"]):
                answer = table[name](run)
            if kind == "router":
                answers[name] = str(answer)
            if run.walk.state is not None and not (run.walk.wave is not None and run.walk.wave.in_flight):
                # hashes.json once per node, the journal in between; while the wave is in flight the
                # journal alone: whether a task had written yet would decide the write, not the walk
                run.course.checkpoint()
            if on_node:
                on_node(name)
        if pipeline.nodes[declared.last]["kind"] == "gate-summary":
            gate = declared.last.removesuffix("_summary")
            raise Stop(f"{gate} gate", f"stay {config.command} stops at the {gate} gate; review .state/{gate}-gate.md "
                       f"(or {config.hint('view', config.slug)} for a review page), then "
                       f"{config.hint('approve', config.slug, gate)}")
    except Stop as stop:
        stopped, reason = stop.where, stop.reason  # said once, by whoever reads the result
    except BaseException as exc:
        # the run log must not call a refused, failed or interrupted run "completed"
        failed = type(exc).__name__ + (f": {exc}" if str(exc) else "")
        setattr(exc, SPENT, _spent(run))  # what it paid before it stopped: the command line says it
        if run.walk.wave is not None:  # no task may write after the run has failed or been stopped, and
            run.walk.wave.cancel(wait=isinstance(exc, Exception))  # none outlives it but after a Ctrl-C
        run.report.end(f"failed: {failed}", "failed")
        raise
    finally:
        tally = run.tally
        if run.walk.state is not None and (config.root / "course.yaml").is_file():
            run.course.checkpoint()
            if tally.projected != len(tally.written):  # else land_manifest's projection is still true
                run.course.project_statuses(load_manifest(config.root))
            log_run(config.root, config.command, run.model.backend.name, tally.written, stopped, tally.retired,
                    tally.revised, [line for change in tally.changes for line in change.log_lines()], failed,
                    run.walk.unscreened)
            if tally.validation is not None:
                tracer.scores(tally.validation)
            # the error's type only (``failed`` is "Type: message"): the root span is marked with it
            tracer.flush(config.root, stopped, otlp=config.settings.otlp,
                         error=None if failed is None else failed.partition(":")[0],
                         lessons=lesson_files(config.stages, run.reader))
    if config.command == "plan" and stopped is None:
        reason = f"planned; write the course with {config.hint('write', config.slug)}"
    diff = ""
    if config.command == "revise" and stopped is None:
        if config.show:
            diff, reason = shown(run)
        else:
            reason = _revised(run)
    tally = run.tally
    spent = _spent(run)
    priced = describe_cost(None if tally.unpriced else tally.cost, tally.unpriced)  # "$x" or "cost unknown (...)"
    run.report.say(f"{plural(tally.calls, 'model call')}, {plural(len(set(tally.written)), 'file')} written in "
                   f"{clock(time.monotonic() - run.report.started)}; "
                   f"{'cost ' + priced if priced.startswith('$') else priced}")
    result = BuildResult(slug=config.slug, course_dir=config.root, command=config.command, stopped_at=stopped,
                         reason=reason, validation=tally.validation, repair=tally.repair,
                         written=tuple(sorted(set(tally.written))), calls=spent.calls, usage=spent.usage,
                         wave=tally.wave, trace_id=tracer.trace_id, cost=spent.cost,
                         usage_by_stage=spent.usage_by_stage, unpriced=spent.unpriced,
                         cost_by_stage=spent.cost_by_stage, calls_by_stage=spent.calls_by_stage,
                         retired=tuple(sorted(tally.retired)), diff=diff, not_reviewed=config.not_reviewed,
                         unresolved=tuple(d for path in sorted(tally.unresolved) for d in tally.unresolved[path]))
    run.report.end(result.outcome, "complete" if result.complete else "stopped")
    return result


def _spent(run: Run) -> Spent:
    """What the run has paid so far, from its tally (under its lock: wave threads add to it)."""
    tally = run.tally
    with tally.lock:
        return Spent(tally.calls, tally.usage, None if tally.unpriced else tally.cost, tuple(sorted(tally.unpriced)),
                     dict(sorted(tally.usage_by_stage.items())), dict(sorted(tally.cost_by_stage.items())),
                     dict(sorted(tally.calls_by_stage.items())))


def _revised(run: Run) -> str:
    """What a revision did, and what a person should do next."""
    return revised_reason(run.course, sorted(run.tally.revised), run.config.hint, run.config.slug,
                          run.tally.written)
