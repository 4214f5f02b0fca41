"""The one policy for "regenerate if needed", used by every node that writes artefacts.

An artefact is written when it is missing or stale, and only in a phase the command
authors. A file edited by hand is never overwritten and never marked current: it is
kept, and said so. In a phase the command does not author, a design or plan file must
already be there and current (else the command refuses, naming what to run); a wave
or finishing file that is not is only reported, since validate will say so.
"""

from __future__ import annotations

from stay.errors import PipelineError
from stay.pipeline._gate_decl import GATED
from stay.pipeline._ledger import Status
from stay.pipeline._run import Run


def needs_writing(run: Run, path: str, phase: str) -> bool:
    """Whether ``path`` (of ``phase``) must be written now. Says what it decided."""
    status = run.course.status(path)
    if not run.may_write(phase):
        if phase in GATED:
            require_current(run, path, status)
        return False
    if status.state == "current":
        return False
    if status.state == "edited":
        say_kept(run, path, status)
        return False
    return True


def why(status: Status) -> str:
    """Why a file is written: 'missing', or 'stale <- its changed inputs'."""
    return "missing" if status.state == "missing" else f"stale <- {', '.join(status.why)}"


def say_kept(run: Run, path: str, status: Status) -> None:
    if status.why:
        run.report.say(f"  {path}: kept (edited by hand), though {', '.join(status.why)} changed since; delete it to "
                       "regenerate it, or accept it with " + run.hint("adopt", run.slug))
    else:
        run.report.say(f"  {path}: kept (edited by hand)")


def require_current(run: Run, path: str, status: Status) -> None:
    """In a phase the command does not author, a gated file must be there and up to date."""
    if status.state == "missing" or status.why:
        what = "missing" if status.state == "missing" else f"stale <- {', '.join(status.why)}"
        raise PipelineError(f"{path} is {what}; stay {run.config.command} does not write it: run "
                            f"{run.hint('build', run.slug)} first")
