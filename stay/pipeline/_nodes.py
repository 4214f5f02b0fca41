"""What each node of the pipeline graph does. The runner calls ``handlers(graph)[name](run)``,
each handler bound from its node: a guard to the gates the node requires, a gate node
to its gate, a stage node to its stage, a writing node to its phase.

A node does work; a router only reads the run and names the edge the runner takes. A
node authors its phase only when the command says so (``Run.may_write``); in the
other phases it checks that what is on disk is current and refuses otherwise. A
stage regenerates an artefact only when it is missing or stale. A file edited by
hand is never overwritten and never marked current by a build: it is kept, and
reported, until a person accepts it (``stay approve`` for a gated file, ``stay
adopt``) or removes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import yaml

from stay._display import plural
from stay._lock import CourseLock
from stay.artefacts import CourseManifest, Curriculum, Glossary, GlossaryTerm, dump, to_data, write
from stay.briefs import check_duration
from stay.errors import AnswerError, BriefRejected, PipelineError, TruncationError, UsageError
from stay.models import screening_of
from stay.pipeline._checks import validation
from stay.pipeline._course_graph import artefact_graph
from stay.pipeline._dag import Dag
from stay.pipeline._fix import check_written
from stay.pipeline._gates import ask, record, summary
from stay.pipeline._graph import assemble
from stay.pipeline._layout import GLOSSARY, norm_term
from stay.pipeline._ledger import STATE, same_bytes
from stay.pipeline._policy import needs_writing, say_kept, why
from stay.pipeline._produce import job
from stay.pipeline._repair import repair_course
from stay.pipeline._revise import check_revisions, pending, revise_files, revise_gather, set_aside
from stay.pipeline._run import Run
from stay.pipeline._state import CourseState, load_manifest
from stay.pipeline._wave import wave_of
from stay.stages import Stage


def entry(run: Run) -> None:
    run.report.say(f"stay {run.config.command}: {run.slug or 'new course'} (backend: {run.model.backend.name})")


def choose(run: Run, router: str) -> str:
    """A router's answer: the successor this run's command goes on to (the runner follows it)."""
    return run.config.routes[router]


# -- guards -------------------------------------------------------------------


def require(run: Run, gates: tuple[str, ...]) -> None:
    """The course exists and every named gate's approval holds; else refuse, naming
    the gate and the command that unblocks it. Nothing has been written yet."""
    if run.state is None or not (run.root / "course.yaml").is_file():
        raise UsageError(f"there is no course '{run.slug}' in {run.config.courses_arg}; start one with "
                         f"{run.hint('new', 'BRIEF.yaml')}")
    for gate in gates:
        holds, why = run.course.approval(gate)
        if not holds:
            raise PipelineError(f"stay {run.config.command} needs the {gate} approval to hold: {why}; run "
                                f"{run.hint('build', run.slug)}, then {run.hint('approve', run.slug, gate)}")


def revise_seed(run: Run, by_phase: Mapping[str, tuple[str, ...]]) -> None:
    """``revise``: the course exists; each target's phase has the approvals it needs
    (``by_phase``, the node's: a wave file both, a plan the design gate's, a design file
    none); an edited file is revised only when forced, and its bytes kept first."""
    require(run, ())
    check_revisions(run, by_phase)
    set_aside(run, list(run.config.revisions))
    run.revisions = pending(run)


# -- intake, moderation, scaffold ---------------------------------------------


def intake(run: Run) -> None:
    """The brief was read and checked, and the slug made safe, before the run began;
    here its duration is checked against the run's own house style."""
    if run.reader.brief is None:
        raise UsageError(f"stay {run.config.command} needs a brief file")
    check_duration(run.reader.brief.time_available, f"course '{run.slug}' brief", run.config.limits)


def moderate(run: Run) -> None:
    """Screen the whole brief as one message: a topic and an audience that are each
    unremarkable can be a different thing together. A brief screened before (its hash
    is in the ledger) is not screened again. Fails open."""
    assert run.reader.brief is not None
    if run.state is not None and run.course.screened(run.reader.brief):
        return
    fields = {k: v for k, v in to_data(run.reader.brief).items() if v and str(v).strip()}
    if not fields:
        return  # nothing to screen: no model call
    try:
        screening = screening_of(run.model.backend, yaml.safe_dump(fields, sort_keys=False, allow_unicode=True))
    except (TruncationError, AnswerError):
        raise  # the screen answered, but its verdict cannot be read: never taken as "not flagged"
    except Exception as exc:
        run.report.say(f"warning: input moderation failed ({type(exc).__name__}: {exc}); continuing")
        return
    if screening.answer is not None:
        run.model.account(screening.request, screening.answer)
    reason = screening.reason
    if reason:
        raise BriefRejected(f"Course brief rejected by input moderation: {reason}")
    run.screened = True


def scaffold(run: Run, phase: str) -> None:
    """Create the course (taking its lock) or bring course.yaml's brief up to date; a
    command that does not author the node's ``phase`` only checks the brief is the course's."""
    brief = run.reader.brief
    assert brief is not None
    manifest_path = run.root / "course.yaml"
    if not run.may_write(phase):
        if load_manifest(run.root).brief != brief:
            raise PipelineError(f"the brief differs from course '{run.slug}''s; change it with "
                                f"{run.hint('build', 'BRIEF.yaml', '--slug', run.slug)}")
    elif manifest_path.exists():
        manifest = load_manifest(run.root)
        if manifest.brief != brief:
            manifest = manifest.model_copy(update={"brief": brief, "title": brief.title})
            write(manifest_path, manifest)
            run.tally.add_written(["course.yaml"])
            run.report.say("course.yaml: the brief changed; what depends on it is now stale")
    else:
        run.root.mkdir(parents=True, exist_ok=True)
        if run.course_lock is None:
            run.course_lock = CourseLock(run.root)
            run.course_lock.acquire()
        if manifest_path.exists():  # another run made it between our check and the lock
            raise UsageError(f"course '{run.slug}' already exists in {run.config.courses_arg}; continue it with "
                             f"{run.hint('build', run.slug)}")
        write(manifest_path, CourseManifest(schema_=1, slug=run.slug, title=brief.title, brief=brief, artefacts={}))
        run.tally.add_written(["course.yaml"])
        run.report.say(f"scaffold: {run.root}")
    if run.state is None:
        run.state = CourseState(run.root, artefact_graph(Curriculum(modules=[]), stages=run.config.stages), brief,
                                sources=run.config.sources, epoch=run.config.settings.source_date_epoch)
        run.state.hash_once()  # under the lock taken above
    else:
        run.state.brief = brief
    run.refresh_graph()
    if run.screened:
        run.course.mark_screened(brief)


# -- stages -------------------------------------------------------------------


def run_course_stage(run: Run, stage: Stage) -> None:
    """A course-scope stage (audience, curriculum, outcomes, assessment): regenerate its
    one file if it must be (the one policy, ``needs_writing``), then check it at the write:
    a FAIL goes back to the model once, with the file, before the gate."""
    path = stage.output
    if needs_writing(run, path, stage.phase):
        run.report.say(f"  {path}: writing ({why(run.course.status(path))})")
        made = job(run, stage, None)
        (artefact,) = run.model.produce(made.request, made.parse)
        if run.write({path: artefact}):
            check_written(run, [path])
    elif run.course.status(path).state == "current":
        run.report.say(f"  {path}: current")
    run.refresh_graph()


def run_module_stage(run: Run, stage: Stage) -> None:
    """A module-scope stage (lesson planning): one call per module with a file to write,
    so the module's term budget is allocated, not audited after the fact. Only the files
    that must be written are; an edited one is kept. The module's plans are checked at
    the write, like a design file."""
    for module in run.reader.layout.curriculum.modules:
        places = run.reader.layout.lessons_of(module)
        todo = [place.path(stage.output) for place in places
                if needs_writing(run, place.path(stage.output), stage.phase)]
        if todo:
            run.report.say(f"  module {module.id}: planning {plural(len(places), 'lesson')}")
            made = job(run, stage, module)
            artefacts = run.model.produce(made.request, made.parse)
            # the module's plans in one step: one journal line before their renames, so a
            # crash between two of them leaves none unrecorded. A plan's own inputs do not
            # depend on plans' contents: one refresh, below
            if run.write({path: artefact for path, artefact in zip(made.paths, artefacts, strict=True)
                          if path in todo}):
                check_written(run, todo)
        else:
            run.report.say(f"  module {module.id}: plans current")
    run.refresh_graph()


# -- the wave and after -----------------------------------------------------


def write_lesson(run: Run) -> None:
    """Start every lesson's calls (its lesson-scope wave stages); gather waits for them."""
    wave_of(run).start_lessons()


def start_course_task(run: Run, stage: Stage) -> None:
    """Start a course-scope wave stage's one call (the capstone) beside the lessons."""
    wave_of(run).start_course(stage.name)


def gather(run: Run) -> None:
    """The barrier: wait for every task the wave nodes started; the first failure is
    raised once all have ended."""
    wave = wave_of(run)
    if not wave.empty:
        run.tally.wave = wave.wait()
        run.report.say(f"wave: gathered {plural(wave.total, 'task')}")


def merge_glossary(run: Run, phase: str) -> None:
    """glossary.yaml from every plan's new terms, in lesson order, then by term."""
    status = run.course.status(GLOSSARY)
    if not run.may_write(phase):
        if status.state == "missing" or status.why:
            run.report.say(f"  {GLOSSARY}: {status.state}; stay {run.config.command} does not write it "
                           f"({run.hint('write', run.slug)} does)")
        return
    if status.state == "edited":
        say_kept(run, GLOSSARY, status)
        return
    plans = run.reader.plans()
    terms: list[GlossaryTerm] = []
    seen: set[str] = set()
    for place in run.reader.layout.lessons():
        plan = plans.get(place.id)
        for new in sorted(plan.new_terms if plan else [], key=lambda t: (t.term.casefold(), t.term)):
            if norm_term(new.term) not in seen:
                seen.add(norm_term(new.term))
                terms.append(GlossaryTerm(term=new.term, definition=new.definition, introduced_in=place.id))
    glossary = Glossary(terms=terms)
    if status.state != "current" or not same_bytes(run.root / GLOSSARY, dump(glossary)):
        run.write({GLOSSARY: glossary})


def land_manifest(run: Run, phase: str) -> None:
    """Retire the files the curriculum no longer has (moved, never deleted), then write
    course.yaml's status projection."""
    if not run.may_write(phase):
        return
    number = run.config.run_number
    retired = run.course.retire(f"run-{number}")
    for path in retired:
        run.report.say(f"  retired {path} (not in the curriculum) to {STATE}/retired/run-{number}/{path}")
    run.tally.retired += retired
    if run.course.project_statuses(load_manifest(run.root)):
        run.tally.add_written(["course.yaml"])
    run.tally.projected = len(run.tally.written)


def validate(run: Run) -> None:
    report = run.tally.validation = validation(run)
    run.report.say(f"validate: {report.fails} FAIL, {report.warns} WARN, {plural(report.checks, 'check')}")


def repair(run: Run, node: tuple[str, tuple[str, ...]]) -> None:
    """Repair runs only while the gates it requires (the node's: every gate) hold,
    exactly like the wave, and only in a command that authors its phase."""
    phase, requires = node
    if not run.may_write(phase):
        return
    for gate in requires:
        holds, why = run.course.approval(gate)
        if not holds:
            raise PipelineError(f"repair needs the {gate} approval to hold: {why}; run "
                                f"{run.hint('approve', run.slug, gate)}")
    run.tally.repair = repair_course(run)


Handler = Callable[[Run], object]

FIXED: Mapping[str, Handler] = {
    "entry": entry, "intake": intake, "moderate": moderate, "write_lesson": write_lesson, "gather": gather,
    "validate": validate, "revise_files": revise_files, "revise_gather": revise_gather,
}
"""The nodes whose work is their own: every other node's handler is derived from its
node (a router, a guard, a gate, repair, a node that authors a phase) or its stage."""

PHASED: Mapping[str, Callable[[Run, str], object]] = {
    "scaffold": scaffold, "merge_glossary": merge_glossary, "land_manifest": land_manifest,
}
"""Nodes that write only when the command authors their node's phase."""

def handlers(pipeline: Dag) -> dict[str, Handler]:
    """node name -> what it does, read from the graph: a guard is bound to the gates its
    node requires, a gate node to its gate, a stage node to its stage (a test holds the
    keys equal to the graph's nodes)."""
    gates = {gate.name: gate for gate in pipeline.graph["gates"]}
    found: dict[str, Handler] = {}
    for name, attrs in pipeline.nodes(data=True):
        kind = attrs["kind"]
        if name in FIXED:
            found[name] = FIXED[name]
        elif kind == "router":
            found[name] = _bind(choose, name)
        elif kind == "gate-summary":
            found[name] = _bind(summary, gates[attrs["gate"]])
        elif kind in ("gate-ask", "gate-record"):
            found[name] = _bind(ask if kind == "gate-ask" else record, attrs["gate"])
        elif attrs.get("requires_by_phase"):
            found[name] = _bind(revise_seed, attrs["requires_by_phase"])
        elif kind == "guard":
            found[name] = _bind(require, attrs["requires"])
        elif name in PHASED:
            found[name] = _bind(PHASED[name], attrs["phase"])
        elif kind == "repair":
            found[name] = _bind(repair, (attrs["phase"], attrs["requires"]))
        elif attrs["stages"]:
            found[name] = _stage_handler(pipeline.graph["stages"][attrs["stages"][0]])
    return found


def _stage_handler(stage: Stage) -> Handler:
    if stage.phase == "wave":
        return _bind(start_course_task, stage)
    return _bind(run_module_stage if stage.scope == "module" else run_course_stage, stage)


def _bind(handler: Callable[[Run, Any], object], what: Any) -> Handler:
    def run_node(run: Run) -> object:
        return handler(run, what)

    run_node.__name__ = f"{handler.__name__}[{getattr(what, 'name', what)}]"
    return run_node


HANDLERS = handlers(assemble())
