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

import functools
from collections.abc import Callable

import yaml

from stay.artefacts import (
    Assessment,
    Audience,
    CourseManifest,
    Curriculum,
    Glossary,
    GlossaryTerm,
    LessonPlan,
    Outcomes,
    dump,
    load,
    to_data,
    write,
)
from stay.briefs import check_duration
from stay.errors import AnswerError, BriefRejected, PipelineError, TruncationError, UsageError
from stay.models import screening_of
from stay.pipeline._course_graph import course_graph, lesson_paths
from stay.pipeline._lock import CourseLock
from stay.pipeline._repair import repair_course
from stay.pipeline._run import Run, Stop
from stay.pipeline._state import AUTO_APPROVED, STATE, CourseState, Status, load_manifest, write_if_changed
from stay.pipeline._wave import run_wave
from stay.stages import assessment as assessment_stage
from stay.stages import audience as audience_stage
from stay.stages import curriculum as curriculum_stage
from stay.stages import outcomes as outcomes_stage
from stay.stages import plan as plan_stage
from stay.validate import validate_course


def entry(run: Run) -> None:
    run.say(f"stay {run.command}: {run.slug or 'new course'} (backend: {run.backend.name})")


def choose_entry(run: Run) -> str:
    from stay.pipeline._graph import DECLARATION

    return DECLARATION.commands[run.command].entry


# -- guards -------------------------------------------------------------------


def _guard(run: Run, gates: tuple[str, ...]) -> None:
    """The course exists and every named gate's approval holds; else refuse, naming
    the gate and the command that unblocks it. Nothing has been written yet."""
    if run.state is None or not (run.root / "course.yaml").is_file():
        raise UsageError(f"there is no course '{run.slug}' in {run.courses_arg}; start one with "
                         f"{run.hint('new', 'BRIEF.yaml')}")
    for gate in gates:
        holds, why = run.course.approval(gate)
        if not holds:
            raise PipelineError(f"stay {run.command} needs the {gate} approval to hold: {why}; run "
                                f"{run.hint('build', run.slug)}, then {run.hint('approve', run.slug, gate)}")


def require_design(run: Run) -> None:
    _guard(run, ("design",))


def require_gates(run: Run) -> None:
    _guard(run, ("design", "plan"))


def repair_seed(run: Run) -> None:
    _guard(run, ("design", "plan"))


# -- intake, moderation, scaffold ---------------------------------------------


def intake(run: Run) -> None:
    """The brief was read and checked, and the slug made safe, before the run began;
    here its duration is checked against the run's own house style."""
    if run.brief is None:
        raise UsageError(f"stay {run.command} needs a brief file")
    if run.house_limits is not None:
        check_duration(run.brief.time_available, f"course '{run.slug}' brief", run.house_limits)


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
            run.written.append("course.yaml")
            run.say("course.yaml: the brief changed; what depends on it is now stale")
    else:
        run.root.mkdir(parents=True, exist_ok=True)
        if run.course_lock is None:
            run.course_lock = CourseLock(run.root)
            run.course_lock.acquire()
        if manifest_path.exists():  # another run made it between our check and the lock
            raise UsageError(f"course '{run.slug}' already exists in {run.courses_arg}; continue it with "
                             f"{run.hint('build', run.slug)}")
        write(manifest_path, CourseManifest(schema_=1, slug=run.slug, title=run.brief.title, brief=run.brief,
                                            artefacts={}))
        run.written.append("course.yaml")
        run.say(f"scaffold: {run.root}")
    if run.state is None:
        run.state = CourseState(run.root, course_graph(Curriculum(modules=[])), run.brief)
    else:
        run.state.brief = run.brief
    run.refresh_graph()
    if run.screened:
        run.course.mark_screened(run.brief)


# -- stages -------------------------------------------------------------------


def regenerate_if_needed(run: Run, path: str, phase: str, make: Callable[[], object]) -> bool:
    """The one policy for every single-file artefact: regenerate it if missing or stale
    (only in a phase the command authors), keep it if edited by hand, and in a phase the
    command only checks, refuse a file that is not there or behind its inputs. Returns
    whether it wrote the file."""
    status = run.course.status(path)
    if not run.may_write(phase):
        require_current(run, path, status)
        return False
    if status.state == "current":
        run.say(f"  {path}: current")
        return False
    if status.state == "edited":
        say_kept(run, path, status)
        return False
    reason = "missing" if status.state == "missing" else f"stale <- {', '.join(status.why)}"
    run.say(f"  {path}: writing ({reason})")
    artefact = make()
    if run.cancelled.is_set():
        return False
    write(run.root / path, artefact)  # type: ignore[arg-type]
    run.wrote([path])
    return True


def say_kept(run: Run, path: str, status: Status) -> None:
    if status.why:
        run.say(f"  {path}: kept (edited by hand), though {', '.join(status.why)} changed since; delete it to "
                "regenerate it, or accept it with " + run.hint("adopt", run.slug))
    else:
        run.say(f"  {path}: kept (edited by hand)")


def require_current(run: Run, path: str, status: Status) -> None:
    """In a phase the command does not author, a file must be there and up to date."""
    if status.state == "missing" or status.why:
        what = "missing" if status.state == "missing" else f"stale <- {', '.join(status.why)}"
        raise PipelineError(f"{path} is {what}; stay {run.command} does not write it: run "
                            f"{run.hint('build', run.slug)} first")


def audience(run: Run) -> None:
    assert run.brief is not None
    brief = run.brief

    def make() -> Audience:
        return run.produce(audience_stage.request(brief, run.prompts), audience_stage.artefact)

    regenerate_if_needed(run, audience_stage.PATH, "design", make)


def curriculum(run: Run) -> None:
    assert run.brief is not None
    brief = run.brief

    def make() -> Curriculum:
        audience = load(run.root / "audience.yaml", Audience)
        return run.produce(curriculum_stage.request(brief, audience, run.prompts), curriculum_stage.artefact)

    regenerate_if_needed(run, curriculum_stage.PATH, "design", make)
    run.refresh_graph()


def outcomes(run: Run) -> None:
    def make() -> Outcomes:
        return run.produce(outcomes_stage.request(
            load(run.root / "audience.yaml", Audience), load(run.root / "curriculum.yaml", Curriculum),
            run.prompts), outcomes_stage.artefact)

    regenerate_if_needed(run, outcomes_stage.PATH, "design", make)


def assessment(run: Run) -> None:
    def make() -> Assessment:
        return run.produce(assessment_stage.request(
            load(run.root / "curriculum.yaml", Curriculum), load(run.root / "outcomes.yaml", Outcomes),
            run.prompts), assessment_stage.artefact)

    regenerate_if_needed(run, assessment_stage.PATH, "design", make)


# -- gates ------------------------------------------------------------------


def _summary(run: Run, gate: str) -> None:
    """Write what the gate is about to ask about. When its approval already holds there
    is nothing to ask, and the summary that was shown when it was asked stays."""
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
        budget = load(audience_file, Audience).time_budget_minutes
        total = sum(lesson.minutes for module in curriculum.modules for lesson in module.lessons)
        lessons = sum(len(module.lessons) for module in curriculum.modules)
        lines += ["", "## Time", "",
                  f"{len(curriculum.modules)} modules, {lessons} lessons, {total} minutes against a "
                  f"budget of {budget} ({round(100 * total / budget)}%)."]
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
        run.written.append(f"{STATE}/{gate}-gate.md")


def _ask(run: Run, gate: str) -> None:
    holds, why = run.course.approval(gate)
    if holds:
        run.say(f"{gate} gate: approved")
        return
    if run.yes:
        run.say(f"{gate} gate: {AUTO_APPROVED}")
        return
    raise Stop(f"{gate} gate", f"{why}; review {STATE}/{gate}-gate.md, then run "
                              f"{run.hint('approve', run.slug, gate)} (or build with --yes)")


def _record(run: Run, gate: str) -> None:
    state = run.course
    holds, _why = state.approval(gate)
    if not holds and run.yes:
        unready = state.unready(gate)
        if unready:
            raise PipelineError(f"cannot approve the {gate} gate: {', '.join(unready)}; run "
                                f"{run.hint('build', run.slug)} first")
        state.answer(gate, approved=True, by=AUTO_APPROVED, accept_edits=False)
        run.written.append(f"{STATE}/gates.json")


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


# -- planning ---------------------------------------------------------------


def plan_modules(run: Run) -> None:
    curriculum = load(run.root / "curriculum.yaml", Curriculum)
    state = run.course
    earlier: list[LessonPlan] = []
    for module in curriculum.modules:
        paths = [f"modules/{module.id}-{module.slug}/{lesson.id}.plan.yaml" for lesson in module.lessons]
        statuses = {path: state.status(path) for path in paths}
        if not run.may_write("plan"):
            for path, status in statuses.items():
                require_current(run, path, status)
        todo = [p for p, status in statuses.items() if status.state in ("missing", "stale")]
        for path, status in statuses.items():
            if status.state == "edited":
                say_kept(run, path, status)
        if todo and run.may_write("plan"):
            run.say(f"  module {module.id}: planning {len(module.lessons)} lessons")
            request = plan_stage.request(module, curriculum, load(run.root / "outcomes.yaml", Outcomes),
                                         load(run.root / "assessment.yaml", Assessment), earlier,
                                         run.prompts)
            plans = run.produce(request, functools.partial(plan_stage.artefact, module=module))
            for path, plan in zip(paths, plans, strict=True):
                if path in todo:
                    write(run.root / path, plan)
            run.refresh_graph()
            run.wrote(todo)
        else:
            run.say(f"  module {module.id}: plans current")
        written = run.plans()
        earlier += [written[lesson.id] for lesson in module.lessons if lesson.id in written]
    run.refresh_graph()


# -- the wave and after -----------------------------------------------------


def write_lesson(run: Run) -> None:
    run_wave(run)


def write_capstone(run: Run) -> None:
    """Runs inside ``run_wave``, beside the lessons; nothing more to do here."""


def gather(run: Run) -> None:
    run.say("wave: gathered")


def merge_glossary(run: Run) -> None:
    """glossary.yaml from every plan's new terms, in lesson order, then by term."""
    path = "glossary.yaml"
    status = run.course.status(path)
    if not run.may_write("finish"):
        if status.state == "missing" or status.why:
            run.say(f"  {path}: {status.state}; stay {run.command} does not write it "
                    f"({run.hint('write', run.slug)} does)")
        return
    if status.state == "edited":
        say_kept(run, path, status)
        return
    curriculum = load(run.root / "curriculum.yaml", Curriculum)
    plans = run.plans()
    terms: list[GlossaryTerm] = []
    seen: set[str] = set()
    for lesson_id, _module_dir, _prefix in lesson_paths(curriculum):
        plan = plans.get(lesson_id)
        for new in sorted(plan.new_terms if plan else [], key=lambda t: (t.term.casefold(), t.term)):
            key = " ".join(new.term.casefold().split())
            if key not in seen:
                seen.add(key)
                terms.append(GlossaryTerm(term=new.term, definition=new.definition,
                                          introduced_in=lesson_id))
    if write_if_changed(run.root / path, dump(Glossary(terms=terms))) or status.state != "current":
        run.wrote([path])


def land_manifest(run: Run) -> None:
    """Retire the files the curriculum no longer has (moved, never deleted), then write
    course.yaml's status projection."""
    if not run.may_write("finish"):
        return
    retired = run.course.retire(f"run-{run.run_number}")
    for path in retired:
        run.say(f"  retired {path} (not in the curriculum) to {STATE}/retired/run-{run.run_number}/{path}")
    run.retired += retired
    if run.course.project_statuses(load_manifest(run.root)):
        run.written.append("course.yaml")


def validate(run: Run) -> None:
    run.validation = validate_course(run.root)
    report = run.validation
    run.say(f"validate: {report.fails} FAIL, {report.warns} WARN, {report.checks} checks")


def repair(run: Run) -> None:
    """Repair runs only while both gate records hold, exactly like the wave."""
    for gate in ("design", "plan"):
        holds, why = run.course.approval(gate)
        if not holds:
            raise PipelineError(f"repair needs the {gate} approval to hold: {why}; run "
                                f"{run.hint('approve', run.slug, gate)}")
    run.repair = repair_course(run)


HANDLERS: dict[str, Callable[[Run], object]] = {
    "entry": entry, "choose_entry": choose_entry, "intake": intake, "moderate": moderate,
    "scaffold": scaffold, "audience": audience, "curriculum": curriculum, "outcomes": outcomes,
    "assessment": assessment, "design_summary": design_summary, "design_ask": design_ask,
    "design_record": design_record, "require_design": require_design, "plan_modules": plan_modules,
    "plan_summary": plan_summary, "plan_ask": plan_ask, "plan_record": plan_record,
    "require_gates": require_gates, "write_lesson": write_lesson, "write_capstone": write_capstone,
    "gather": gather, "merge_glossary": merge_glossary, "land_manifest": land_manifest,
    "validate": validate, "repair_seed": repair_seed, "repair": repair,
}
"""node name -> what it does; a test holds its keys equal to the graph's nodes."""
