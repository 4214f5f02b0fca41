"""The gate nodes: each gate is a summary (what it is about to ask about, written to
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
from stay.pipeline._ledger import AUTO_APPROVED, STATE, write_if_changed
from stay.pipeline._run import Run, Stop
from stay.validate import Severity

A = TypeVar("A", bound=Artefact)


def _summary(run: Run, gate: str) -> None:
    """Write what the gate is about to ask about (``_gate_page``: what a reviewer reviews,
    and the defects that remain). When its approval already holds there is nothing to
    ask, and the summary that was shown when it was asked stays."""
    if run.revising:
        return  # revise asks no gate: what it changes retires an approval by itself
    state = run.course
    if state.approval(gate)[0]:
        return
    covered = state.covered(gate)
    lines = [f"# The {gate} gate: {run.slug}", ""]
    curriculum = run.curriculum()
    audience = _loaded(run, "audience.yaml", Audience)
    outcomes = _loaded(run, "outcomes.yaml", Outcomes)
    assessment = _loaded(run, "assessment.yaml", Assessment)
    if gate == "design":
        if curriculum is not None:
            lines += [*page.curriculum_lines(curriculum, audience), ""]
        if outcomes is not None:
            lines += [*page.outcome_lines(outcomes, assessment), ""]
        if assessment is not None:
            lines += [*page.assessment_lines(assessment, outcomes), ""]
    elif curriculum is not None:
        lines += ["## Time", "", *page.time_lines(curriculum, audience), "",
                  *page.plan_lines(curriculum, run.plans()), ""]
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
    artefact = run.load(path)
    assert isinstance(artefact, kind)
    return artefact


def _unsigned(run: Run, gate: str) -> list[str]:
    """The files ``--yes`` would sign for the gate. A person's approval of the design gate
    that still holds has accepted the design files as they are, FAILs included, so the
    plan gate's ``--yes`` does not refuse them again."""
    state = run.course
    covered = state.covered(gate)
    design = state.gates().get("design", {})
    if gate == "plan" and state.approval("design")[0] and design.get("by") != AUTO_APPROVED:
        signed = set(state.covered("design"))
        return [path for path in covered if path not in signed]
    return covered


def _ask(run: Run, gate: str) -> None:
    if run.revising:
        return
    holds, why = run.course.approval(gate)
    if holds:
        run.say(f"{gate} gate: approved")
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
        run.say(f"{gate} gate: {AUTO_APPROVED}")
        return
    raise Stop(f"{gate} gate", f"{why}; review {STATE}/{gate}-gate.md, then run "
                              f"{run.hint('approve', run.slug, gate)} (or build with --yes)")


def _record(run: Run, gate: str) -> None:
    if run.revising:
        return
    state = run.course
    holds, _why = state.approval(gate)
    if not holds and run.config.yes:
        unready = state.unready(gate)
        if unready:
            raise PipelineError(f"cannot approve the {gate} gate: {', '.join(unready)}; run "
                                f"{run.hint('build', run.slug)} first")
        state.answer(gate, approved=True, by=AUTO_APPROVED, accept_edits=False)
        run.tally.add_written([f"{STATE}/gates.json"])


def design_summary(run: Run) -> None:
    _summary(run, "design")


def design_ask(run: Run) -> None:
    _ask(run, "design")


def design_record(run: Run) -> None:
    _record(run, "design")


def plan_summary(run: Run) -> None:
    _summary(run, "plan")


def plan_ask(run: Run) -> None:
    _ask(run, "plan")


def plan_record(run: Run) -> None:
    _record(run, "plan")
