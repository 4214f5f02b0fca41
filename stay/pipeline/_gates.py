"""The gates a run stops at for a person, and revise: regenerating approved files from a reviewer's notes."""

from __future__ import annotations

from collections.abc import Mapping

from stay._display import markdown_text
from stay._words import did_you_mean
from stay.artefacts import Assessment, Audience, Outcomes
from stay.errors import PipelineError, UsageError
from stay.models import OfflineBackend
from stay.pipeline._graph import DERIVED, GATE_NAMES, GateDecl, GateView, bounded, defect_lines, earlier
from stay.pipeline._layout import GLOSSARY, A, RunReader, defects_in
from stay.pipeline._run import (
    Fixer,
    ModelGateway,
    Note,
    RunConfig,
    Stop,
    Tally,
    Walk,
    Wave,
    Writer,
    as_it_stands,
    check_written,
    regenerate,
    regeneration_notes,
    wave_jobs,
)
from stay.pipeline._state import (
    AUTO_APPROVED,
    RETIRED,
    STATE,
    THREAD,
    CourseState,
    note_sha,
    open_proposal,
    thread_text,
    write_if_changed,
)
from stay.pipeline._trace import Reporter
from stay.validate import Severity


def summary(config: RunConfig, reader: RunReader, ledger: CourseState, tally: Tally, gate: GateDecl) -> None:
    """Write the gate's page (its declared page, then the defects that remain); an approval that holds
    keeps the summary shown when it was asked."""
    name, slug = gate.name, config.slug
    if ledger.approval(name)[0]:
        return
    covered = ledger.covered(name)
    lines = [f"# The {name} gate: {slug}", ""]
    lines += gate.page(GateView(reader.curriculum(), _loaded(reader, "audience.yaml", Audience),
                                _loaded(reader, "outcomes.yaml", Outcomes),
                                _loaded(reader, "assessment.yaml", Assessment), reader.plans))
    defects = defects_in(config.root, config.settings, covered)
    unsigned = set(_unsigned(ledger, name))
    blocking = any(d.severity == Severity.FAIL and d.path in unsigned for d in defects)
    lines += [*defect_lines(defects, refused=blocking), ""]
    rows = [f"- {stage.name}: {', '.join(markdown_text(ref) for ref in config.prompts.reference_set(stage))}"
            for stage in config.stages if stage.phase == gate.closes]  # the references each stage read
    if rows:
        lines += ["## References each stage read", "", *rows, ""]
    statuses = ledger.statuses()
    unusual = [f"- {path}: {statuses[path].state}" for path in covered if statuses[path].state != "current"]
    if unusual:
        lines += ["## Files not as the pipeline last wrote them", "", *unusual, ""]
    previous = ledger.gates().get(name)
    lines += ["## Since the previous answer", ""]
    if previous is None:
        lines.append("This gate has not been answered before.")
    else:
        moved = [p for p in covered if previous.get("covered", {}).get(p) != ledger.current_hash(p)]
        verdict = "approved" if previous.get("approved") else "declined"
        lines.append(f"Last {verdict} at {markdown_text(previous.get('at'))} by {markdown_text(previous.get('by'))}.")
        lines += [f"- changed: {p}" for p in moved] or ["Nothing it covers has changed since."]
    # No --courses-dir here: this file is committed beside the course, and must read the
    # same wherever the course is checked out.
    lines += ["", f"Approve with `stay approve {slug} {name}`, or decline with "
              f"`stay approve {slug} {name} --decline --note \"why\"`.", ""]
    if write_if_changed(config.root / STATE / f"{name}-gate.md", "\n".join(lines)):
        tally.add_written([f"{STATE}/{name}-gate.md"])


def _loaded(reader: RunReader, path: str, kind: type[A]) -> A | None:
    """A design file the page shows, or None while it is not written."""
    return reader.load_as(path, kind) if reader.exists(path) else None


def _unsigned(state: CourseState, gate: str) -> list[str]:
    """The files ``--yes`` would sign for the gate: an earlier gate's approval that holds accepted its files,
    FAILs included, so they are not refused again."""
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
                                f"{'; '.join(bounded(fails))}. Review {STATE}/{name}-gate.md, fix the files "
                                f"(by hand, or with {hint('revise', slug, 'FILE', '--note', repr('...'))}) "
                                f"and build again, or approve them as they are with "
                                f"{hint('approve', slug, name)}")
        report.say(f"{name} gate: {AUTO_APPROVED}")
        return
    raise Stop(f"{name} gate", f"{why}; review {STATE}/{name}-gate.md (or {hint('view', slug)} for a review "
                              f"page), then run {hint('approve', slug, name)} (or build with {config.yes_option})")


def record(config: RunConfig, ledger: CourseState, tally: Tally, gate: GateDecl) -> None:
    name = gate.name
    if not ledger.approval(name)[0] and config.yes:
        unready = ledger.unready(name)
        if unready:
            raise PipelineError(f"cannot approve the {name} gate: {', '.join(unready)}; run "
                                f"{config.hint('build', config.slug)} first")
        ledger.answer(name, approved=True, by=AUTO_APPROVED, accept_edits=False)
        tally.add_written([f"{STATE}/gates.json"])


def resolve_targets(state: CourseState, targets: list[str], stage_names: set[str]) -> list[str]:
    """Course files from what a person named (a path, a lesson id, a stage name); unique, in graph order."""
    graph = state.graph
    staged = [n for n in graph if graph.nodes[n].get("stage") in stage_names]
    found: list[str] = []
    for target in targets:
        clean = target.strip().removeprefix("./")
        if clean in (GLOSSARY, "course.yaml"):
            what = "merged from the plans" if clean == GLOSSARY else "the manifest"
            raise UsageError(f"{clean} is not written by a stage ({what}); revise the plans or the brief instead")
        if clean in graph and graph.nodes[clean].get("stage") == DERIVED:
            (source,) = graph.predecessors(clean)
            raise UsageError(f"{clean} is written from {source} as it stands; revise {source} instead")
        if clean in graph and clean in staged:
            matched = [clean]
        elif clean in stage_names:
            matched = [n for n in staged if graph.nodes[n]["stage"] == clean]
        else:
            matched = [n for n in staged if graph.nodes[n].get("unit") == clean and graph.nodes[n]["phase"] == "wave"]
        if not matched:
            units = (str(graph.nodes[n]["unit"]) for n in staged if graph.nodes[n].get("unit"))
            names = [*staged, *stage_names, *units]  # what the three kinds of TARGET can name
            raise UsageError(f"'{target[:60]}' names no artefact of course '{state.slug}'"
                             f"{did_you_mean(clean, names)}: give a file path "
                             "(e.g. modules/m01-.../m01-l02.quiz.yaml), a lesson id (m01-l02) or a stage name "
                             f"({', '.join(sorted(stage_names))})")
        found += [m for m in matched if m not in found]
    return found


def declined_note(state: CourseState, path: str) -> str:
    """The note of a decline of the gate that covers ``path`` ('' when there is none)."""
    for gate in GATE_NAMES:
        entry = state.gates().get(gate)
        if path in state.covered(gate) and entry and not entry.get("approved") and entry.get("note"):
            return str(entry["note"])
    return ""


def check_revisions(config: RunConfig, course: CourseState, by_phase: Mapping[str, tuple[str, ...]]) -> None:
    """The approvals each target's phase needs hold, and an edited file is revised only when forced."""
    for path, note in config.revisions.items():
        phase = course.graph.nodes[path]["phase"]
        course.require(by_phase[phase], f"revising {path} (a {phase} file)",
                       lambda gate: f"{config.hint('approve', config.slug, gate)} first")
        if course.status(path).state == "edited" and not config.force:
            raise PipelineError(f"{path} was edited by hand: revise it with --force (its current bytes are kept "
                                f"in {RETIRED}/), or edit it yourself")
        if not note.strip():
            raise UsageError(f"no note to revise {path} with: give --note TEXT (or decline its gate with a note)")


def pending(config: RunConfig, course: CourseState, report: Reporter) -> dict[str, str]:
    """The revisions still to send: not a note already applied, nor (``--show``) one the open proposal answers."""
    todo = {}
    for path, note in config.revisions.items():
        entry = course.ledger().get(path, {})
        applied = entry.get("revision", {}).get("sha") if isinstance(entry.get("revision"), dict) else None
        if applied == note_sha(note) and course.status(path).state == "current":
            report.say(f"  {path}: already revised with this note; nothing to send")
            continue
        shown = open_proposal(course, path) if config.show else None
        if shown is not None and shown.note == note:
            report.say(f"  {path}: this note's proposal is shown already; nothing to send")
            continue
        todo[path] = note
    return todo


def notes_for(config: RunConfig, reader: RunReader, walk: Walk, path: str) -> tuple[Note, ...]:
    """The inputs a revision adds: the file, the reviewer's thread so far, the note, the instruction block."""
    note = config.revisions[path]
    notes = regeneration_notes(config.prompts, as_it_stands(reader, path), Note("reviewer_note", note, note))
    thread = walk.threads.get(path)
    if not thread:
        return notes
    said = Note(THREAD, [item.model_dump() for item in thread], thread_text(thread))
    at = next(n for n, made in enumerate(notes) if made.name == "reviewer_note")
    return (*notes[:at], said, *notes[at:])


# -- revise's own nodes --------------------------------------------------------------


def revise_files(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, writer: Writer,
                 walk: Walk, fixer: Fixer) -> None:
    """The named design files and plans first, in stage order, each checked at the write (a plan is
    regenerated by its module's call); then every named wave file's call, started together."""
    todo = walk.revisions
    if todo and isinstance(getattr(model.backend, "inner", model.backend), OfflineBackend):
        how = "proposed as" if config.show else "written from"
        report.say(f"  offline: the offline backend cannot act on a note; each file is {how} its template "
                   "again (revise with a model backend, e.g. --backend anthropic, to apply the note)")
    for stage in (s for s in config.stages if s.phase != "wave"):
        how = " (the module's call, this file written)" if stage.scope == "module" else ""
        for path, _place in reader.layout.outputs(stage):
            if path in todo:
                report.say(f"  {path}: revising with the reviewer's note{how}")
                only = (path,) if stage.scope == "module" else ()
                made = regenerate(fixer, path, notes_for(config, reader, walk, path), only=only)
                if not config.show:
                    check_written(fixer, walk.cancelled, made)
                writer.refresh_graph()

    def revising(path: str) -> tuple[Note, ...] | None:
        if path not in todo:
            return None
        report.say(f"  {path}: revising with the reviewer's note")
        return notes_for(config, reader, walk, path)

    wave = walk.wave = Wave(model, report, writer, *wave_jobs(config, reader, revising))
    wave.start_lessons()
    for name in wave.courses:
        wave.start_course(name)
