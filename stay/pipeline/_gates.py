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
from stay.pipeline._reader import RunReader
from stay.pipeline._reporter import Reporter
from stay.pipeline._run import RunConfig, Stop, Tally
from stay.pipeline._state import CourseState
from stay.validate import Severity

A = TypeVar("A", bound=Artefact)


def summary(config: RunConfig, reader: RunReader, ledger: CourseState, tally: Tally, gate: GateDecl) -> None:
    """Write what the gate is about to ask about (its declared page, then the defects
    that remain). When its approval already holds there is nothing to ask, and the
    summary that was shown when it was asked stays."""
    state, name, slug = ledger, gate.name, config.slug
    if state.approval(name)[0]:
        return
    covered = state.covered(name)
    lines = [f"# The {name} gate: {slug}", ""]
    view = page.GateView(reader.curriculum(), _loaded(reader, "audience.yaml", Audience),
                         _loaded(reader, "outcomes.yaml", Outcomes), _loaded(reader, "assessment.yaml", Assessment),
                         reader.plans)
    lines += gate.page(view)
    defects = defects_in(config.root, config.settings, covered)
    unsigned = set(_unsigned(state, name))
    blocking = any(d.severity == Severity.FAIL and d.path in unsigned for d in defects)
    lines += [*page.defect_lines(defects, refused=blocking), ""]
    lines += reference_lines(config, gate)
    statuses = state.statuses()
    unusual = [f"- {path}: {statuses[path].state}" for path in covered if statuses[path].state != "current"]
    if unusual:
        lines += ["## Files not as the pipeline last wrote them", "", *unusual, ""]
    previous = state.gates().get(name)
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
    lines += ["", f"Approve with `stay approve {slug} {name}`, or decline with "
              f"`stay approve {slug} {name} --decline --note \"why\"`.", ""]
    if write_if_changed(config.root / STATE / f"{name}-gate.md", "\n".join(lines)):
        tally.add_written([f"{STATE}/{name}-gate.md"])


def reference_lines(config: RunConfig, gate: GateDecl) -> list[str]:
    """The reference documents each stage of the gate's phase read, as their front matter
    attached them before the run (``Prompts.reference_set``): a reviewer sees what a
    document dropped into the prompts directory reached."""
    rows = [f"- {stage.name}: {', '.join(markdown_text(name) for name in config.prompts.reference_set(stage))}"
            for stage in config.stages if stage.phase == gate.closes]
    return ["## References each stage read", "", *rows, ""] if rows else []


def _loaded(reader: RunReader, path: str, kind: type[A]) -> A | None:
    """A design file the page shows, or None while it is not written."""
    if not reader.exists(path):
        return None
    artefact = reader.load(path)
    assert isinstance(artefact, kind)
    return artefact


def _unsigned(state: CourseState, gate: str) -> list[str]:
    """The files ``--yes`` would sign for the gate. A person's approval of an earlier gate
    that still holds has accepted that gate's files as they are, FAILs included, so a
    later gate's ``--yes`` does not refuse them again."""
    answers = state.gates()
    signed = {path for before in earlier(gate) if state.approval(before)[0]
              and answers.get(before, {}).get("by") != AUTO_APPROVED for path in state.covered(before)}
    return [path for path in state.covered(gate) if path not in signed]


def ask(config: RunConfig, ledger: CourseState, report: Reporter, gate: GateDecl) -> None:
    name, slug, hint = gate.name, config.slug, config.hint
    holds, why = ledger.approval(name)
    if holds:
        report.say(f"{name} gate: approved")
        return
    if config.yes:
        declined = ledger.standing_decline(name)
        if declined is not None:  # --yes answers gates nobody answered, never a person's "no"
            said = f" ({declined!r})" if declined else ""
            raise Stop(f"{name} gate", f"the {name} gate was declined{said} and nothing it covers has changed "
                                      f"since: edit the files, revise them with "
                                      f"{hint('revise', slug, 'TARGET', '--note', repr('...'))}, or approve "
                                      f"with {hint('approve', slug, name)}")
        fails = defects_in(config.root, config.settings, _unsigned(ledger, name), fails_only=True)
        if fails:  # --yes signs for nobody: a FAIL it approved would be paid for in the wave, unseen
            raise PipelineError(f"{config.yes_option} does not approve the {name} gate: its files hold "
                                f"{len(fails)} FAIL: "
                                f"{'; '.join(page.bounded(fails))}. Review {STATE}/{name}-gate.md, fix the files "
                                f"(by hand, or with {hint('revise', slug, 'FILE', '--note', repr('...'))}) "
                                f"and build again, or approve them as they are with "
                                f"{hint('approve', slug, name)}")
        report.say(f"{name} gate: {AUTO_APPROVED}")
        return
    raise Stop(f"{name} gate", f"{why}; review {STATE}/{name}-gate.md (or {hint('view', slug)} for a review "
                              f"page), then run {hint('approve', slug, name)} (or build with {config.yes_option})")


def record(config: RunConfig, ledger: CourseState, tally: Tally, gate: GateDecl) -> None:
    name = gate.name
    holds, _why = ledger.approval(name)
    if not holds and config.yes:
        unready = ledger.unready(name)
        if unready:
            raise PipelineError(f"cannot approve the {name} gate: {', '.join(unready)}; run "
                                f"{config.hint('build', config.slug)} first")
        ledger.answer(name, approved=True, by=AUTO_APPROVED, accept_edits=False)
        tally.add_written([f"{STATE}/gates.json"])
