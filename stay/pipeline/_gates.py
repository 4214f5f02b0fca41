"""The gate nodes: each gate is a summary (what it is about to ask about, written to
``.state/<gate>-gate.md``), an ask (stop unless the approval holds; ``--yes`` answers a
gate nobody answered, never a person's decline), and a record (``--yes``'s answer,
written with the hash of every file the gate covers)."""

from __future__ import annotations

from stay._display import plural
from stay.artefacts import Audience
from stay.errors import PipelineError
from stay.pipeline._ledger import AUTO_APPROVED, STATE, write_if_changed
from stay.pipeline._run import Run, Stop


def _summary(run: Run, gate: str) -> None:
    """Write what the gate is about to ask about. When its approval already holds there
    is nothing to ask, and the summary that was shown when it was asked stays."""
    if run.revising:
        return  # revise asks no gate: what it changes retires an approval by itself
    state = run.course
    if state.approval(gate)[0]:
        return
    statuses = state.statuses()
    covered = state.covered(gate)
    lines = [f"# The {gate} gate: {run.slug}", "", "## What was built", ""]
    lines += [f"- {path}: {statuses[path].state}" for path in covered]
    curriculum = run.curriculum()
    audience_file = run.root / "audience.yaml"
    if curriculum is not None and audience_file.is_file():
        audience = run.load("audience.yaml")
        assert isinstance(audience, Audience)
        budget = audience.time_budget_minutes
        total = sum(lesson.minutes for module in curriculum.modules for lesson in module.lessons)
        lessons = sum(len(module.lessons) for module in curriculum.modules)
        lines += ["", "## Time", "",
                  f"{plural(len(curriculum.modules), 'module')}, {plural(lessons, 'lesson')}, {total} minutes "
                  f"against a budget of {budget} ({round(100 * total / budget)}%)."]
    previous = state.gates().get(gate)
    lines += ["", "## Since the previous answer", ""]
    if previous is None:
        lines.append("This gate has not been answered before.")
    else:
        moved = [p for p in covered if previous.get("covered", {}).get(p) != state.current_hash(p)]
        verdict = "approved" if previous.get("approved") else "declined"
        lines.append(f"Last {verdict} at {previous.get('at')} by {previous.get('by')}.")
        lines += [f"- changed: {p}" for p in moved] or ["Nothing it covers has changed since."]
    # No --courses-dir here: this file is committed beside the course, and must read the
    # same wherever the course is checked out.
    lines += ["", f"Approve with `stay approve {run.slug} {gate}`, or decline with "
              f"`stay approve {run.slug} {gate} --decline --note \"why\"`.", ""]
    if write_if_changed(run.root / STATE / f"{gate}-gate.md", "\n".join(lines)):
        run.tally.add_written([f"{STATE}/{gate}-gate.md"])


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
