"""What each node of the pipeline graph does. The runner calls ``HANDLERS[name](run)``.

A node does work; ``choose_entry`` alone only reads the run and names an edge. A
node authors its phase only when the command says so (``Run.may_write``); in the
other phases it checks that what is on disk is current and refuses otherwise. A
stage regenerates an artefact only when it is missing or stale. A file edited by
hand is never overwritten and never marked current by a build: it is kept, and
reported, until a person accepts it (``stay approve`` for a gated file, ``stay
adopt``) or removes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import yaml

from stay._display import plural
from stay._lock import CourseLock
from stay.artefacts import CourseManifest, Curriculum, Glossary, GlossaryTerm, dump, to_data, write
from stay.briefs import check_duration
from stay.errors import AnswerError, BriefRejected, PipelineError, TruncationError, UsageError
from stay.models import screening_of
from stay.pipeline._course_graph import artefact_graph
from stay.pipeline._fix import check_written
from stay.pipeline._gates import (
    design_ask,
    design_record,
    design_summary,
    plan_ask,
    plan_record,
    plan_summary,
)
from stay.pipeline._layout import GLOSSARY, norm_term
from stay.pipeline._ledger import STATE, same_bytes
from stay.pipeline._policy import needs_writing, say_kept, why
from stay.pipeline._produce import job, regenerate
from stay.pipeline._repair import repair_course
from stay.pipeline._revise import check_revisions, notes_for, pending, set_aside
from stay.pipeline._run import Run
from stay.pipeline._state import CourseState, load_manifest
from stay.pipeline._wave import wave_of
from stay.stages import REGISTRY, Stage
from stay.validate import validate_course


def entry(run: Run) -> None:
    run.say(f"stay {run.config.command}: {run.slug or 'new course'} (backend: {run.backend.name})")


def choose_entry(run: Run) -> str:
    from stay.pipeline._graph import DECLARATION

    return DECLARATION.commands[run.config.command].entry


# -- guards -------------------------------------------------------------------


def _guard(run: Run, gates: tuple[str, ...]) -> None:
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


def require_design(run: Run) -> None:
    _guard(run, ("design",))


def require_gates(run: Run) -> None:
    _guard(run, ("design", "plan"))


def repair_seed(run: Run) -> None:
    _guard(run, ("design", "plan"))


def revise_seed(run: Run) -> None:
    """``revise``: the course exists; each target's phase has the approvals it needs
    (declared on the node: a wave file both, a plan the design gate's, a design file
    none); an edited file is revised only when forced, and its bytes kept first."""
    _guard(run, ())
    check_revisions(run)
    set_aside(run, list(run.config.revisions))
    run.revisions = pending(run)


# -- intake, moderation, scaffold ---------------------------------------------


def intake(run: Run) -> None:
    """The brief was read and checked, and the slug made safe, before the run began;
    here its duration is checked against the run's own house style."""
    if run.brief is None:
        raise UsageError(f"stay {run.config.command} needs a brief file")
    check_duration(run.brief.time_available, f"course '{run.slug}' brief", run.config.limits)


def moderate(run: Run) -> None:
    """Screen the whole brief as one message: a topic and an audience that are each
    unremarkable can be a different thing together. A brief screened before (its hash
    is in the ledger) is not screened again. Fails open."""
    assert run.brief is not None
    if run.state is not None and run.course.screened(run.brief):
        return
    fields = {k: v for k, v in to_data(run.brief).items() if v and str(v).strip()}
    if not fields:
        return  # nothing to screen: no model call
    try:
        screening = screening_of(run.backend, yaml.safe_dump(fields, sort_keys=False, allow_unicode=True))
    except (TruncationError, AnswerError):
        raise  # the screen answered, but its verdict cannot be read: never taken as "not flagged"
    except Exception as exc:
        run.say(f"warning: input moderation failed ({type(exc).__name__}: {exc}); continuing")
        return
    if screening.answer is not None:
        run.account(screening.request, screening.answer)
    reason = screening.reason
    if reason:
        raise BriefRejected(f"Course brief rejected by input moderation: {reason}")
    run.screened = True


def scaffold(run: Run) -> None:
    """Create the course (taking its lock) or bring course.yaml's brief up to date."""
    assert run.brief is not None
    manifest_path = run.root / "course.yaml"
    if not run.may_write("design"):
        if load_manifest(run.root).brief != run.brief:
            raise PipelineError(f"the brief differs from course '{run.slug}''s; change it with "
                                f"{run.hint('build', 'BRIEF.yaml', '--slug', run.slug)}")
    elif manifest_path.exists():
        manifest = load_manifest(run.root)
        if manifest.brief != run.brief:
            manifest = manifest.model_copy(update={"brief": run.brief, "title": run.brief.title})
            write(manifest_path, manifest)
            run.tally.add_written(["course.yaml"])
            run.say("course.yaml: the brief changed; what depends on it is now stale")
    else:
        run.root.mkdir(parents=True, exist_ok=True)
        if run.course_lock is None:
            run.course_lock = CourseLock(run.root)
            run.course_lock.acquire()
        if manifest_path.exists():  # another run made it between our check and the lock
            raise UsageError(f"course '{run.slug}' already exists in {run.config.courses_arg}; continue it with "
                             f"{run.hint('build', run.slug)}")
        write(manifest_path, CourseManifest(schema_=1, slug=run.slug, title=run.brief.title, brief=run.brief,
                                            artefacts={}))
        run.tally.add_written(["course.yaml"])
        run.say(f"scaffold: {run.root}")
    if run.state is None:
        run.state = CourseState(run.root, artefact_graph(Curriculum(modules=[]), stages=run.config.stages), run.brief,
                                sources=run.config.sources, epoch=run.config.settings.source_date_epoch)
        run.state.hash_once()  # under the lock taken above
    else:
        run.state.brief = run.brief
    run.refresh_graph()
    if run.screened:
        run.course.mark_screened(run.brief)


# -- stages -------------------------------------------------------------------


def run_course_stage(run: Run, stage: Stage) -> None:
    """A course-scope stage (audience, curriculum, outcomes, assessment): regenerate its
    one file if it must be (the one policy, ``needs_writing``), then check it at the write:
    a FAIL goes back to the model once, with the file, before the gate."""
    path = stage.output
    if path in run.revisions:
        run.say(f"  {path}: revising with the reviewer's note")
        check_written(run, regenerate(run, path, notes_for(run, path)))
    elif needs_writing(run, path, stage.phase):
        run.say(f"  {path}: writing ({why(run.course.status(path))})")
        made = job(run, stage, None)
        (artefact,) = run.produce(made.request, made.parse)
        if run.write({path: artefact}):
            check_written(run, [path])
    elif run.course.status(path).state == "current":
        run.say(f"  {path}: current")
    run.refresh_graph()


def run_module_stage(run: Run, stage: Stage) -> None:
    """A module-scope stage (lesson planning): one call per module with a file to write,
    so the module's term budget is allocated, not audited after the fact. Only the files
    that must be written are; an edited one is kept. The module's plans are checked at
    the write, like a design file."""
    for module in run.layout.curriculum.modules:
        places = run.layout.lessons_of(module)
        for target in (p.path(stage.output) for p in places if p.path(stage.output) in run.revisions):
            run.say(f"  {target}: revising with the reviewer's note (the module's call, this file written)")
            check_written(run, regenerate(run, target, notes_for(run, target), only=(target,)))
            run.refresh_graph()
        todo = [place.path(stage.output) for place in places
                if needs_writing(run, place.path(stage.output), stage.phase)]
        if todo:
            run.say(f"  module {module.id}: planning {plural(len(places), 'lesson')}")
            made = job(run, stage, module)
            artefacts = run.produce(made.request, made.parse)
            # the module's plans in one step: one journal line before their renames, so a
            # crash between two of them leaves none unrecorded. A plan's own inputs do not
            # depend on plans' contents: one refresh, below
            if run.write({path: artefact for path, artefact in zip(made.paths, artefacts, strict=True)
                          if path in todo}):
                check_written(run, todo)
        else:
            run.say(f"  module {module.id}: plans current")
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
        run.say(f"wave: gathered {plural(wave.total, 'task')}")


def merge_glossary(run: Run) -> None:
    """glossary.yaml from every plan's new terms, in lesson order, then by term."""
    status = run.course.status(GLOSSARY)
    if not run.may_write("finish"):
        if (status.state == "missing" or status.why) and not run.revising:
            run.say(f"  {GLOSSARY}: {status.state}; stay {run.config.command} does not write it "
                    f"({run.hint('write', run.slug)} does)")
        return
    if status.state == "edited":
        say_kept(run, GLOSSARY, status)
        return
    plans = run.plans()
    terms: list[GlossaryTerm] = []
    seen: set[str] = set()
    for place in run.layout.lessons():
        plan = plans.get(place.id)
        for new in sorted(plan.new_terms if plan else [], key=lambda t: (t.term.casefold(), t.term)):
            if norm_term(new.term) not in seen:
                seen.add(norm_term(new.term))
                terms.append(GlossaryTerm(term=new.term, definition=new.definition, introduced_in=place.id))
    glossary = Glossary(terms=terms)
    if status.state != "current" or not same_bytes(run.root / GLOSSARY, dump(glossary)):
        run.write({GLOSSARY: glossary})


def land_manifest(run: Run) -> None:
    """Retire the files the curriculum no longer has (moved, never deleted), then write
    course.yaml's status projection."""
    if not run.may_write("finish"):
        return
    number = run.config.run_number
    retired = run.course.retire(f"run-{number}")
    for path in retired:
        run.say(f"  retired {path} (not in the curriculum) to {STATE}/retired/run-{number}/{path}")
    run.tally.retired += retired
    if run.course.project_statuses(load_manifest(run.root)):
        run.tally.add_written(["course.yaml"])
    run.tally.projected = len(run.tally.written)


def validate(run: Run) -> None:
    report = run.tally.validation = validate_course(run.root, data_dir=run.config.settings.resolved_data_dir())
    run.say(f"validate: {report.fails} FAIL, {report.warns} WARN, {plural(report.checks, 'check')}")


def repair(run: Run) -> None:
    """Repair runs only while both gate records hold, exactly like the wave."""
    if not run.may_write("repair"):
        return
    for gate in ("design", "plan"):
        holds, why = run.course.approval(gate)
        if not holds:
            raise PipelineError(f"repair needs the {gate} approval to hold: {why}; run "
                                f"{run.hint('approve', run.slug, gate)}")
    run.tally.repair = repair_course(run)


BASE_HANDLERS: Mapping[str, Callable[[Run], object]] = {
    "entry": entry, "choose_entry": choose_entry, "require_design": require_design, "require_gates": require_gates,
    "repair_seed": repair_seed, "revise_seed": revise_seed, "intake": intake, "moderate": moderate,
    "scaffold": scaffold,
    "design_summary": design_summary, "design_ask": design_ask, "design_record": design_record,
    "plan_summary": plan_summary, "plan_ask": plan_ask, "plan_record": plan_record, "write_lesson": write_lesson,
    "gather": gather, "merge_glossary": merge_glossary, "land_manifest": land_manifest, "validate": validate,
    "repair": repair,
}
"""The nodes that are not a stage's."""


def handlers(stages: Sequence[Stage] = REGISTRY) -> dict[str, Callable[[Run], object]]:
    """node name -> what it does: the fixed nodes, and one handler per stage node,
    derived from the stage declarations (a test holds the keys equal to the graph's nodes)."""
    found = dict(BASE_HANDLERS)
    for stage in stages:
        if stage.node_name in found:
            continue
        if stage.phase == "wave":
            found[stage.node_name] = _bind(start_course_task, stage)
        elif stage.scope == "module":
            found[stage.node_name] = _bind(run_module_stage, stage)
        else:
            found[stage.node_name] = _bind(run_course_stage, stage)
    return found


def _bind(handler: Callable[[Run, Stage], None], stage: Stage) -> Callable[[Run], None]:
    def run_stage(run: Run) -> None:
        handler(run, stage)

    run_stage.__name__ = f"{handler.__name__}[{stage.name}]"
    return run_stage


HANDLERS = handlers()
