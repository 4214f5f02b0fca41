"""The gate nodes, one handler per kind, bound to its gate (``_gate_decl.GATES``) by
the node: each gate is a summary (what it is about to ask about, written to
``.state/<gate>-gate.md``), an ask (stop unless the approval holds; ``--yes`` answers a
gate nobody answered, never a person's decline, and never one whose files hold a FAIL
no person has signed), and a record (``--yes``'s answer, written with the hash of every
file the gate covers)."""

from __future__ import annotations

from typing import TypeVar

from stay._display import markdown_text
from stay.artefacts import Artefact, Assessment, Audience, Outcomes
from stay.errors import PipelineError
from stay.pipeline import _gate_page as page
from stay.pipeline._checks import defects_in
from stay.pipeline._gate_decl import GateDecl, earlier
from stay.pipeline._ledger import AUTO_APPROVED, STATE, write_if_changed
from stay.pipeline._run import Run, Stop
from stay.validate import Severity

A = TypeVar("A", bound=Artefact)


def summary(run: Run, declared: GateDecl) -> None:
    """Write what the gate is about to ask about (its declared page, then the defects
    that remain). When its approval already holds there is nothing to ask, and the
    summary that was shown when it was asked stays."""
    gate, state = declared.name, run.course
    if state.approval(gate)[0]:
        return
    covered = state.covered(gate)
    lines = [f"# The {gate} gate: {run.slug}", ""]
    view = page.GateView(run.reader.curriculum(), _loaded(run, "audience.yaml", Audience),
                         _loaded(run, "outcomes.yaml", Outcomes), _loaded(run, "assessment.yaml", Assessment),
                         run.reader.plans)
    lines += declared.page(view)
    defects = defects_in(run, covered)
    unsigned = set(_unsigned(run, gate))
    blocking = any(d.severity == Severity.FAIL and d.path in unsigned for d in defects)
    lines += [*page.defect_lines(defects, refused=blocking), ""]
    statuses = state.statuses()
    unusual = [f"- {path}: {statuses[path].state}" for path in covered if statuses[path].state != "current"]
    if unusual:
        lines += ["## Files not as the pipeline last wrote them", "", *unusual, ""]
    previous = state.gates().get(gate)
    lines += ["## Since the previous answer", ""]
    if previous is None:
        lines.append("This gate has not been answered before.")
    else:
        moved = [p for p in covered if previous.get("covered", {}).get(p) != state.current_hash(p)]
        verdict = "approved" if previous.get("approved") else "declined"
        lines.append(f"Last {verdict} at {markdown_text(previous.get('at'))} by {markdown_text(previous.get('by'))}.")
        lines += [f"- changed: {p}" for p in moved] or ["Nothing it covers has changed since."]
    # No --courses-dir here: this file is committed beside the course, and must read the
    # same wherever the course is checked out.
    lines += ["", f"Approve with `stay approve {run.slug} {gate}`, or decline with "
              f"`stay approve {run.slug} {gate} --decline --note \"why\"`.", ""]
    if write_if_changed(run.root / STATE / f"{gate}-gate.md", "\n".join(lines)):
        run.tally.add_written([f"{STATE}/{gate}-gate.md"])


def _loaded(run: Run, path: str, kind: type[A]) -> A | None:
    """A design file the page shows, or None while it is not written."""
    if not (run.root / path).is_file():
        return None
    artefact = run.reader.load(path)
    assert isinstance(artefact, kind)
    return artefact


def _unsigned(run: Run, gate: str) -> list[str]:
    """The files ``--yes`` would sign for the gate. A person's approval of an earlier gate
    that still holds has accepted that gate's files as they are, FAILs included, so a
    later gate's ``--yes`` does not refuse them again."""
    state = run.course
    answers = state.gates()
    signed = {path for before in earlier(gate) if state.approval(before)[0]
              and answers.get(before, {}).get("by") != AUTO_APPROVED for path in state.covered(before)}
    return [path for path in state.covered(gate) if path not in signed]


def ask(run: Run, gate: str) -> None:
    holds, why = run.course.approval(gate)
    if holds:
        run.report.say(f"{gate} gate: approved")
        return
    if run.config.yes:
        declined = run.course.standing_decline(gate)
        if declined is not None:  # --yes answers gates nobody answered, never a person's "no"
            said = f" ({declined!r})" if declined else ""
            raise Stop(f"{gate} gate", f"the {gate} gate was declined{said} and nothing it covers has changed "
                                      f"since: edit the files, revise them with "
                                      f"{run.hint('revise', run.slug, 'TARGET', '--note', repr('...'))}, or approve "
                                      f"with {run.hint('approve', run.slug, gate)}")
        fails = defects_in(run, _unsigned(run, gate), fails_only=True)
        if fails:  # --yes signs for nobody: a FAIL it approved would be paid for in the wave, unseen
            raise PipelineError(f"--yes does not approve the {gate} gate: its files hold {len(fails)} FAIL: "
                                f"{'; '.join(page.bounded(fails))}. Review {STATE}/{gate}-gate.md, fix the files "
                                f"(by hand, or with {run.hint('revise', run.slug, 'FILE', '--note', repr('...'))}) "
                                f"and build again, or approve them as they are with "
                                f"{run.hint('approve', run.slug, gate)}")
        run.report.say(f"{gate} gate: {AUTO_APPROVED}")
        return
    raise Stop(f"{gate} gate", f"{why}; review {STATE}/{gate}-gate.md, then run "
                              f"{run.hint('approve', run.slug, gate)} (or build with --yes)")


def record(run: Run, gate: str) -> None:
    state = run.course
    holds, _why = state.approval(gate)
    if not holds and run.config.yes:
        unready = state.unready(gate)
        if unready:
            raise PipelineError(f"cannot approve the {gate} gate: {', '.join(unready)}; run "
                                f"{run.hint('build', run.slug)} first")
        state.answer(gate, approved=True, by=AUTO_APPROVED, accept_edits=False)
        run.tally.add_written([f"{STATE}/gates.json"])
