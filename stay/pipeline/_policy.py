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
from stay.pipeline._reporter import Reporter
from stay.pipeline._run import RunConfig
from stay.pipeline._state import CourseState


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
        what = "missing" if status.state == "missing" else f"stale <- {', '.join(status.why)}"
        raise PipelineError(f"{path} is {what}; stay {config.command} does not write it: run "
                            f"{config.hint('build', config.slug)} first")
