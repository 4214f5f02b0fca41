"""Acting on a review: regenerate named artefacts with a reviewer's note.

``stay revise SLUG TARGET... --note TEXT`` walks the graph like every command, behind
its guard (``revise_seed``), which asks for the approvals the targets' phases need (the
node declares them: a wave file both gates', a plan the design gate's, a design file
none). After intake, moderation and scaffold's check, ``choose_work`` sends it to its own
nodes, not along the spine: ``revise_files`` asks each target's stage again with two
more inputs, the file as it is now and the note as reviewer guidance (design and plan
files in stage order, each checked at the write; the wave files started together), and
``revise_gather`` waits for those, before ``validate``. Nothing else is written: no gate
is asked, dependents become stale by the usual rule, and revising a gated file retires
that gate's approval, as any change does.

The note and its hash are recorded in the ledger with the revised file and in the run
log; a later rebuild therefore keeps the revision (the file is current), and the same
note is never sent twice for the same file. A file edited by hand is revised only when
forced, and its bytes are kept in ``.state/retired/`` first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from stay._display import plural
from stay._words import did_you_mean
from stay.errors import PipelineError, UsageError
from stay.models import OfflineBackend
from stay.pipeline._course_graph import DERIVED
from stay.pipeline._fix import Fixer, as_it_stands, check_written, regeneration_notes
from stay.pipeline._gate_decl import GATE_NAMES
from stay.pipeline._gateway import ModelGateway
from stay.pipeline._layout import GLOSSARY
from stay.pipeline._ledger import RETIRED
from stay.pipeline._produce import Job, Note, job, regenerate
from stay.pipeline._reader import RunReader
from stay.pipeline._reporter import Reporter
from stay.pipeline._run import RunConfig, Tally, Walk, Writer
from stay.pipeline._state import CourseState
from stay.pipeline._thread import THREAD, ThreadNote, open_proposal, thread_so_far, thread_text
from stay.pipeline._wave import Wave


def note_digest(note: str) -> str:
    return hashlib.sha256(note.encode("utf-8")).hexdigest()[:16]


def resolve_targets(state: CourseState, targets: list[str], stage_names: set[str]) -> list[str]:
    """Course files from what a person named: a file path, a lesson id (its lesson-scope
    files) or a stage name (every file of that stage); unique, in graph order."""
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
    """The guard's work: the approvals each target's phase needs (``by_phase``, the
    guard node's declaration) hold, and an edited file is revised only when forced."""
    for path, note in config.revisions.items():
        phase = course.graph.nodes[path]["phase"]
        for gate in by_phase[phase]:
            holds, why = course.approval(gate)
            if not holds:
                raise PipelineError(f"revising {path} (a {phase} file) needs the {gate} approval to hold: {why}; "
                                    f"run {config.hint('approve', config.slug, gate)} first")
        status = course.status(path)
        if status.state == "edited" and not config.force:
            raise PipelineError(f"{path} was edited by hand: revise it with --force (its current bytes are kept "
                                f"in {RETIRED}/), or edit it yourself")
        if not note.strip():
            raise UsageError(f"no note to revise {path} with: give --note TEXT (or decline its gate with a note)")


def pending(config: RunConfig, course: CourseState, report: Reporter) -> dict[str, str]:
    """The revisions still to send: a note already applied to a file is not sent twice,
    nor (``--show``) a note the open proposal for the file as it is already answers."""
    todo = {}
    for path, note in config.revisions.items():
        entry = course.ledger().get(path, {})
        applied = entry.get("revision", {}).get("sha") if isinstance(entry.get("revision"), dict) else None
        if applied == note_digest(note) and course.status(path).state == "current":
            report.say(f"  {path}: already revised with this note; nothing to send")
            continue
        shown = open_proposal(course, path) if config.show else None
        if shown is not None and shown.note == note:
            report.say(f"  {path}: this note's proposal is shown already; nothing to send")
            continue
        todo[path] = note
    return todo


def threads(course: CourseState, paths: list[str]) -> dict[str, list[ThreadNote]]:
    """Each file's reviewer thread so far (``_thread``), for the files that have one."""
    return {path: thread for path in paths if (thread := thread_so_far(course, path))}


def notes_for(config: RunConfig, reader: RunReader, walk: Walk, path: str) -> tuple[Note, ...]:
    """The inputs a revision adds: the file as it stands, the reviewer's thread on it so
    far (when there is one), the reviewer's note, and the instruction block every
    regeneration of an existing file gets."""
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
    """The named design and plan files first, in stage order (a later stage's request
    reads what an earlier one just wrote), each checked at the write: a plan is
    regenerated by its module's call, and only it written. Then every named wave file's
    call is started, together, as the wave's are; ``revise_gather`` waits for them.
    Under ``--show`` nothing is written (``Writer.write`` keeps the answers as
    proposals), so there is no check at the write."""
    todo = walk.revisions
    if todo and isinstance(getattr(model.backend, "inner", model.backend), OfflineBackend):
        how = "proposed as" if config.show else "written from"
        report.say(f"  offline: the offline backend cannot act on a note; each file is {how} its template "
                   "again (revise with a model backend, e.g. --backend anthropic, to apply the note)")
    for stage in (s for s in config.stages if s.phase != "wave"):
        if stage.scope == "module":
            layout = reader.layout
            targets = [(place.path(stage.output), " (the module's call, this file written)")
                       for module in layout.curriculum.modules for place in layout.lessons_of(module)]
        else:
            targets = [(stage.output, "")]
        for path, how in targets:
            if path in todo:
                report.say(f"  {path}: revising with the reviewer's note{how}")
                only = (path,) if stage.scope == "module" else ()
                made = regenerate(fixer.again, path, notes_for(config, reader, walk, path), only=only)
                if not config.show:
                    check_written(fixer, walk.cancelled, made)
                writer.refresh_graph()
    wave_stages = [s for s in config.stages if s.phase == "wave"]
    lessons: dict[str, list[Job]] = {}
    courses: dict[str, Job] = {}
    for place in reader.layout.lessons():
        for stage in (s for s in wave_stages if s.scope == "lesson"):
            path = place.path(stage.output)
            if path in todo:
                report.say(f"  {path}: revising with the reviewer's note")
                lessons.setdefault(place.id, []).append(job(config, reader, stage, place,
                                                            notes_for(config, reader, walk, path)))
    for stage in (s for s in wave_stages if s.scope == "course"):
        if stage.output in todo:
            report.say(f"  {stage.output}: revising with the reviewer's note")
            courses[stage.name] = job(config, reader, stage, None, notes_for(config, reader, walk, stage.output))
    wave = walk.wave = Wave(model, report, writer, config.settings, lessons, courses)
    wave.start_lessons()
    for name in courses:
        wave.start_course(name)


def revise_gather(walk: Walk, tally: Tally, report: Reporter) -> None:
    """Wait for the revised wave files; the first failure is raised once all have ended."""
    wave = walk.wave
    if wave is not None and not wave.empty:
        tally.wave = wave.wait()
        report.say(f"wave: gathered {plural(wave.total, 'task')}")
