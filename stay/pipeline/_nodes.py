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
from stay._words import no_course
from stay.artefacts import Artefact, CourseManifest, Curriculum, Glossary, GlossaryTerm, dump, to_data, write
from stay.briefs import check_duration
from stay.errors import BriefRejected, CourseNotFound, ModelUnavailable, PipelineError, UsageError
from stay.pipeline._checks import course_report
from stay.pipeline._course_graph import artefact_graph
from stay.pipeline._dag import Dag
from stay.pipeline._fix import Fixer, by_path, check_written
from stay.pipeline._gates import ask, record, summary
from stay.pipeline._gateway import ModelGateway
from stay.pipeline._graph import assemble
from stay.pipeline._inject import Handler, bind
from stay.pipeline._layout import GLOSSARY, norm_term
from stay.pipeline._ledger import STATE, same_bytes
from stay.pipeline._policy import needs_writing, say_kept, why
from stay.pipeline._produce import job
from stay.pipeline._reader import RunReader
from stay.pipeline._repair import repair_course
from stay.pipeline._reporter import Reporter
from stay.pipeline._retire_copy import keep_edited
from stay.pipeline._revise import check_revisions, pending, revise_files, revise_gather, threads
from stay.pipeline._run import RunConfig, Tally, Walk, Writer
from stay.pipeline._state import CourseState, load_manifest
from stay.pipeline._wave import review_stale, wave_of
from stay.stages import Stage
from stay.validate import Severity

Node = Mapping[str, Any]
"""A graph node's attributes, as a handler that names ``node`` is given them."""


def entry(config: RunConfig, model: ModelGateway, report: Reporter) -> None:
    report.say(f"stay {config.command}: {config.slug or 'new course'} (backend: {model.backend.name})")


def choose(config: RunConfig, name: str) -> str:
    """A router's answer: the successor this run's command goes on to (the runner follows it)."""
    return config.routes[name]


# -- guards -------------------------------------------------------------------


def require(config: RunConfig, walk: Walk, node: Node) -> None:
    """The course exists and every gate the node requires has its approval holding; else
    refuse, naming the gate and the command that unblocks it. Nothing has been written yet."""
    course = _existing(config, walk)
    for gate in node["requires"]:
        holds, why = course.approval(gate)
        if not holds:
            raise PipelineError(f"stay {config.command} needs the {gate} approval to hold: {why}; run "
                                f"{config.hint('build', config.slug)}, then "
                                f"{config.hint('approve', config.slug, gate)}")


def _existing(config: RunConfig, walk: Walk) -> CourseState:
    """The ledger of a course that exists, or a refusal saying how to start one."""
    if walk.state is None or not (config.root / "course.yaml").is_file():
        raise CourseNotFound(f"{no_course(config.slug, config.courses_arg)}; start one with "
                             f"{config.hint('new', 'BRIEF.yaml')}", path=config.root)
    return walk.state


def revise_seed(config: RunConfig, walk: Walk, report: Reporter, node: Node) -> None:
    """``revise``: the course exists; each target's phase has the approvals it needs
    (the node's ``requires_by_phase``: a wave file both, a plan the design gate's, a
    design file none); an edited file is revised only when forced, and its bytes kept first."""
    course = _existing(config, walk)
    check_revisions(config, course, node["requires_by_phase"])
    if not config.show:  # a shown revision replaces nothing: --keep keeps an edited file's bytes
        keep_edited(course, list(config.revisions), config.run_number, report.say)
    walk.revisions = pending(config, course, report)
    walk.threads = threads(course, list(walk.revisions))


# -- intake, moderation, scaffold ---------------------------------------------


def intake(config: RunConfig, reader: RunReader) -> None:
    """The brief was read and checked, and the slug made safe, before the run began;
    here its duration is checked against the run's own house style."""
    if reader.brief is None:
        raise UsageError(f"stay {config.command} needs a brief file")
    check_duration(reader.brief.time_available, f"course '{config.slug}' brief", config.limits)


def moderate(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, walk: Walk) -> None:
    """Screen the whole brief as one message: a topic and an audience that are each
    unremarkable can be a different thing together. A brief screened before (its hash
    is in the ledger) is not screened again. Fails open only when the service is
    unreachable (``ModelUnavailable``, a timeout, no connection): anything else, a
    configuration error (a mistyped ``STAY_MODEL_ANALYSIS``, a rejected key) or a verdict
    that cannot be read, is an error, and the brief is not built unscreened. A brief
    screened by nothing (``--no-screen``, fail-open, a replay with no verdict) is said and
    recorded in the run log, never skipped in silence."""
    brief = reader.brief
    assert brief is not None
    if walk.state is not None and walk.state.screened(brief):
        return
    if not config.screen:
        _unscreened(report, walk, "--no-screen was given")
        return
    fields = {k: v for k, v in to_data(brief).items() if v and str(v).strip()}
    if not fields:
        return  # nothing to screen: no model call
    text = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True)
    try:
        screening = model.screening(text)  # held under the cost cap and counted, as any call
    except (ModelUnavailable, TimeoutError, ConnectionError) as exc:  # what happened, not the rerun it advises
        what = exc.what if isinstance(exc, ModelUnavailable) else str(exc)
        report.say(f"warning: input moderation failed ({type(exc).__name__}: {what}); the brief is not screened, "
                   "continuing without it (the run log records it)")
        walk.unscreened = f"input moderation failed ({type(exc).__name__})"
        return
    reason = screening.reason
    if reason:
        raise BriefRejected(f"Course brief rejected by input moderation: {reason}")
    if screening.skipped is not None:
        _unscreened(report, walk, screening.skipped)
        return
    walk.screened = True


def _unscreened(report: Reporter, walk: Walk, why: str) -> None:
    report.say(f"input moderation: the brief is screened by nothing ({why})")
    walk.unscreened = why


def scaffold(config: RunConfig, reader: RunReader, report: Reporter, tally: Tally, writer: Writer, walk: Walk,
             node: Node) -> None:
    """Create the course (under the lock the runner took) or bring course.yaml's brief up to date; a
    command that does not author the node's phase only checks the brief is the course's."""
    brief = reader.brief
    assert brief is not None
    root, slug, hint = config.root, config.slug, config.hint
    manifest_path = root / "course.yaml"
    if not config.may_write(node["phase"]):
        if load_manifest(root).brief != brief:
            raise PipelineError(f"the brief differs from course '{slug}''s; change it with "
                                f"{hint('build', 'BRIEF.yaml', '--slug', slug)}")
    elif manifest_path.exists():
        manifest = load_manifest(root)
        if manifest.brief != brief:
            manifest = manifest.model_copy(update={"brief": brief, "title": brief.title})
            write(manifest_path, manifest)
            tally.add_written(["course.yaml"])
            report.say("course.yaml: the brief changed; what depends on it is now stale")
    else:  # a new course: the runner made its directory and holds its lock since before intake
        write(manifest_path, CourseManifest(schema_=1, slug=slug, title=brief.title, brief=brief, artefacts={}))
        tally.add_written(["course.yaml"])
        report.say(f"scaffold: {root}")
    if walk.state is None:
        walk.state = CourseState(root, artefact_graph(Curriculum(modules=[]), stages=config.stages), brief,
                                 sources=config.sources, epoch=config.settings.source_date_epoch)
        walk.state.hash_once()  # under the lock taken above
    else:
        walk.state.brief = brief
    writer.refresh_graph()
    if walk.screened:
        walk.course.mark_screened(brief)


# -- stages -------------------------------------------------------------------


def run_course_stage(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter,
                     ledger: CourseState, writer: Writer, walk: Walk, fixer: Fixer, stage: Stage) -> None:
    """A course-scope stage (audience, curriculum, outcomes, assessment): regenerate its
    one file if it must be (the one policy, ``needs_writing``), then check it at the write:
    a FAIL goes back to the model once, with the file, before the gate."""
    path = stage.output
    if needs_writing(config, ledger, report, path, stage.phase):
        report.say(f"  {path}: writing ({why(ledger.status(path))})")
        made = job(config, reader, stage, None)
        (artefact,) = model.produce(made.request, made.parse)
        if writer.write({path: artefact}):
            check_written(fixer, walk.cancelled, [path])
    elif ledger.status(path).state == "current":
        report.say(f"  {path}: current")
    writer.refresh_graph()
    if stage.kind.derived is not Artefact.derived and reader.exists(path):
        write_derived(config, reader, report, ledger, writer, path, stage.phase)


def write_derived(config: RunConfig, reader: RunReader, report: Reporter, ledger: CourseState, writer: Writer,
                  path: str, phase: str) -> None:
    """The files written from ``path`` as it stands (example.yaml's data files): each one
    missing or stale is written, one edited by hand is kept, as for any other file."""
    derived = reader.load(path).derived()
    todo = {target: made for target, made in derived.items()
            if needs_writing(config, ledger, report, target, phase)}
    for target in todo:
        report.say(f"  {target}: writing ({why(ledger.status(target))}), from {path}")
    if todo:
        writer.write(todo)


def run_module_stage(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter,
                     ledger: CourseState, writer: Writer, walk: Walk, fixer: Fixer, stage: Stage) -> None:
    """A module-scope stage (lesson planning): one call per module with a file to write,
    so the module's term budget is allocated, not audited after the fact. Only the files
    that must be written are; an edited one is kept. The module's plans are checked at
    the write, like a design file."""
    for module in reader.layout.curriculum.modules:
        places = reader.layout.lessons_of(module)
        todo = [place.path(stage.output) for place in places
                if needs_writing(config, ledger, report, place.path(stage.output), stage.phase)]
        if todo:
            report.say(f"  module {module.id}: planning {plural(len(places), 'lesson')}")
            made = job(config, reader, stage, module)
            artefacts = model.produce(made.request, made.parse)
            # the module's plans in one step: one journal line before their renames, so a
            # crash between two of them leaves none unrecorded. A plan's own inputs do not
            # depend on plans' contents: one refresh, below
            if writer.write({path: artefact for path, artefact in zip(made.paths, artefacts, strict=True)
                             if path in todo}):
                check_written(fixer, walk.cancelled, todo)
        else:
            report.say(f"  module {module.id}: plans current")
    writer.refresh_graph()


# -- the wave and after -----------------------------------------------------


def write_lesson(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter,
                 writer: Writer) -> None:
    """Start every lesson's calls (its lesson-scope wave stages); gather waits for them."""
    wave_of(config, reader, model, report, writer).start_lessons()


def start_course_task(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter,
                      writer: Writer, stage: Stage) -> None:
    """Start a course-scope wave stage's one call (the capstone) beside the lessons."""
    wave_of(config, reader, model, report, writer).start_course(stage.name)


def gather(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, writer: Writer,
           tally: Tally) -> None:
    """The barrier: wait for every task the wave nodes started; the first failure is
    raised once all have ended."""
    wave = wave_of(config, reader, model, report, writer)
    if not wave.empty:
        tally.wave = wave.wait()
        report.say(f"wave: gathered {plural(wave.total, 'task')}")


def review(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, writer: Writer) -> None:
    """After the barrier: the judging model reviews every lesson whose review is stale."""
    review_stale(config, reader, model, report, writer)


def merge_glossary(config: RunConfig, reader: RunReader, report: Reporter, ledger: CourseState, writer: Writer,
                   node: Node) -> None:
    """glossary.yaml from every plan's new terms, in lesson order, then by term."""
    status = ledger.status(GLOSSARY)
    if not config.may_write(node["phase"]):
        if status.state == "missing" or status.why:
            report.say(f"  {GLOSSARY}: {status.state}; stay {config.command} does not write it "
                       f"({config.hint('write', config.slug)} does)")
        return
    if status.state == "edited":
        say_kept(config, report, GLOSSARY, status)
        return
    plans = reader.plans()
    terms: list[GlossaryTerm] = []
    seen: set[str] = set()
    for place in reader.layout.lessons():
        plan = plans.get(place.id)
        for new in sorted(plan.new_terms if plan else [], key=lambda t: (t.term.casefold(), t.term)):
            if norm_term(new.term) not in seen:
                seen.add(norm_term(new.term))
                terms.append(GlossaryTerm(term=new.term, definition=new.definition, introduced_in=place.id))
    glossary = Glossary(terms=terms)
    if status.state != "current" or not same_bytes(config.root / GLOSSARY, dump(glossary)):
        writer.write({GLOSSARY: glossary})


def land_manifest(config: RunConfig, report: Reporter, ledger: CourseState, tally: Tally, node: Node) -> None:
    """Retire the files the curriculum no longer has (moved, never deleted), then write
    course.yaml's status projection."""
    if not config.may_write(node["phase"]):
        return
    number = config.run_number
    retired = ledger.retire(f"run-{number}")
    for path in retired:
        report.say(f"  retired {path} (not in the curriculum) to {STATE}/retired/run-{number}/{path}")
    tally.retired += retired
    if ledger.project_statuses(load_manifest(config.root)):
        tally.add_written(["course.yaml"])
    tally.projected = len(tally.written)


def validate(config: RunConfig, model: ModelGateway, report: Reporter, tally: Tally) -> None:
    """Validate the course; the answers of files this run wrote that hold a FAIL are rejected."""
    found = tally.validation = course_report(config.root, config.settings)
    model.reject_failed(by_path([d for d in found.defects if d.severity == Severity.FAIL]), set(tally.written))
    report.say(f"validate: {found.fails} FAIL, {found.warns} WARN, {plural(found.checks, 'check')}")


def repair(config: RunConfig, ledger: CourseState, tally: Tally, fixer: Fixer, node: Node) -> None:
    """Repair runs only while the gates it requires (the node's: every gate) hold,
    exactly like the wave, and only in a command that authors its phase."""
    if not config.may_write(node["phase"]):
        return
    for gate in node["requires"]:
        holds, why = ledger.approval(gate)
        if not holds:
            raise PipelineError(f"repair needs the {gate} approval to hold: {why}; run "
                                f"{config.hint('approve', config.slug, gate)}")
    tally.repair = repair_course(fixer)


FIXED: Mapping[str, Callable[..., object]] = {
    "entry": entry, "intake": intake, "moderate": moderate, "write_lesson": write_lesson, "gather": gather,
    "validate": validate, "revise_files": revise_files, "revise_gather": revise_gather,
    "scaffold": scaffold, "merge_glossary": merge_glossary, "land_manifest": land_manifest,
}
"""The nodes whose work is their own: every other node's handler is chosen by its
node's kind (a router, a guard, a gate, repair) or its stage."""


def handlers(pipeline: Dag) -> dict[str, Handler]:
    """node name -> what it does, read from the graph: each node's handler is chosen by
    its name or kind, then bound (``_inject.bind``) to the collaborators and the node
    attributes its parameters name (a guard reads the gates its node requires, a gate
    node its gate, a stage node its stage). A test holds the keys equal to the graph's
    nodes."""
    chosen: dict[str, Callable[..., object]] = {}
    for name, attrs in pipeline.nodes(data=True):
        kind = attrs["kind"]
        if name in FIXED:
            chosen[name] = FIXED[name]
        elif attrs.get("requires_by_phase"):
            chosen[name] = revise_seed
        elif kind in BY_KIND:
            chosen[name] = BY_KIND[kind]
        elif attrs["stages"]:
            stage = pipeline.graph["stages"][attrs["stages"][0]]
            chosen[name] = start_course_task if stage.phase == "wave" else \
                run_module_stage if stage.scope == "module" else run_course_stage
    return bind(pipeline, chosen)


BY_KIND: Mapping[str, Callable[..., object]] = {
    "router": choose, "gate-summary": summary, "gate-ask": ask, "gate-record": record, "guard": require,
    "repair": repair, "review": review,
}
"""The handler of a node of each of these kinds (a guard with ``requires_by_phase`` is revise's)."""

HANDLERS = handlers(assemble())
