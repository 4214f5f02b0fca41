"""Running a command: the nodes, binding them to the run, walking the graph, keeping proposals, the result."""

from __future__ import annotations

import functools
import inspect
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

import yaml

from stay._display import Table, clock, html_block, markdown_block, plural
from stay._lock import CourseLock
from stay._words import command_hint, no_course
from stay.artefacts import Artefact, Brief, CourseManifest, Curriculum, Glossary, GlossaryTerm, dump, to_data, write
from stay.briefs import (
    DEFAULT_LIMITS,
    DurationLimits,
    check_duration,
    check_slug,
    course_dir,
    house_limits,
    load_brief,
    title_slug,
)
from stay.errors import (
    BriefRejected,
    CourseNotFound,
    GraphError,
    ModelUnavailable,
    PipelineError,
    StayError,
    UsageError,
)
from stay.models import (
    AnthropicBackend,
    CachedBackend,
    ModelClient,
    OfflineBackend,
    RequestCache,
    Usage,
    can_screen,
    describe_cost,
    prices_of,
)
from stay.pipeline._commands import (
    SPENT,
    announce,
    default_backend,
    open_course,
    open_course_named,
    os_errors,
    with_backend_models,
)
from stay.pipeline._gates import (
    ask,
    check_revisions,
    declined_note,
    pending,
    record,
    resolve_targets,
    revise_files,
    summary,
)
from stay.pipeline._graph import GATE_NAMES, CommandDecl, Dag, artefact_graph, assemble, checked, declare, route, walk
from stay.pipeline._layout import GLOSSARY, RunReader, course_report, norm_term
from stay.pipeline._run import (
    BatchPlan,
    Fixer,
    ModelGateway,
    RepairReport,
    Run,
    RunConfig,
    Spent,
    Stop,
    Tally,
    Walk,
    Wave,
    WaveStats,
    Writer,
    by_path,
    check_written,
    cost_cap,
    needs_writing,
    regenerate,
    repair_course,
    review_stale,
    say_kept,
    why,
)
from stay.pipeline._state import (
    RETIRED,
    STATE,
    CourseState,
    Proposal,
    Sources,
    bounded,
    current_text,
    diff_of,
    drop_proposal,
    keep_edited,
    kept_notes,
    load_manifest,
    log_run,
    next_run_number,
    note_sha,
    open_proposal,
    read_proposal,
    recorded_thread,
    same_bytes,
    thread_so_far,
    write_proposal,
)
from stay.pipeline._trace import Progress, Reporter, Tracer, default_progress, lesson_files
from stay.settings import BackendName, Settings
from stay.stages import REGISTRY, Prompts, Stage
from stay.stages.capstone import RUBRIC_LEVELS
from stay.validate import OWNER_HEAD, CourseReport, Defect, HouseData, Severity, owner_rows


def spent_of(error: BaseException) -> Spent | None:
    """What the run that raised ``error`` had paid when it stopped, if a run raised it."""
    spent = getattr(error, SPENT, None)
    return spent if isinstance(spent, Spent) else None


@dataclass(frozen=True, kw_only=True)
class BuildResult(Spent):
    """Where a run stopped and why, what it wrote and paid, and the validation report."""

    slug: str
    course_dir: Path
    command: str
    stopped_at: str | None
    """None when the run went to the end; else where it waits, e.g. 'design gate'."""
    reason: str
    validation: CourseReport | None
    repair: RepairReport | None
    written: tuple[str, ...]
    wave: WaveStats | None = None
    """Lessons, calls and the most in flight at each level, when a wave ran."""
    trace_id: str = ""
    """The id of this run's trace in <course>/.runs/traces/."""
    retired: tuple[str, ...] = ()
    """Files no longer in the curriculum, moved to .state/retired/run-<n>/ by this run."""
    unresolved: tuple[Defect, ...] = ()
    """FAILs the check at the write left in the files this run wrote: what the gate's reviewer must see."""
    diff: str = ""
    """``revise --show``: the unified diff each proposal would make (nothing was written)."""
    not_reviewed: str = ""
    """Why no lesson was reviewed by the judging model; '' when the review ran."""

    def unresolved_by_file(self) -> dict[str, tuple[str, ...]]:
        """File -> the codes of its unresolved FAILs, in report order."""
        return {path: tuple(d.code for d in found) for path, found in by_path(self.unresolved).items()}

    @property
    def complete(self) -> bool:
        return self.stopped_at is None

    @property
    def outcome(self) -> str:
        """One line: where the run stopped and why, or that it went to the end."""
        if self.stopped_at is not None:
            return f"stopped at the {self.stopped_at}: {self.reason}"
        return "complete" if self.reason == "done" else self.reason

    def summary(self) -> str:
        """What ``stay build`` prints on stdout."""
        lines = [f"{self.slug}: {self.course_dir}", *self.lines()]
        lines += [f"unresolved at the write: {path}: {', '.join(codes)}"
                  for path, codes in self.unresolved_by_file().items()]
        if self.stopped_at is not None:
            lines.append(self.outcome)
            return "\n".join(lines) + "\n"
        if self.diff:  # revise --show: what the proposals would change, before what to do with them
            lines.append(self.diff.rstrip("\n"))
        if self.reason != "done":  # what plan and revise did, and the command to run next
            lines.append(self.reason)
        if (report := self.validation) is not None:
            lines.append(f"validation: {report.fails} FAIL, {report.warns} WARN ({plural(report.checks, 'check')})")
            if self.not_reviewed:  # never a pass it did not make
                lines.append(f"review: not run, so no lesson was reviewed ({self.not_reviewed})")
            if self.repair is not None:
                lines.append(f"repair: stopped because {self.repair.stop}")
                for n, r in enumerate(self.repair.rounds, 1):  # the least kept of each round
                    change = r.least_kept
                    if change is not None:
                        lines.append(f"repair: round {n}: {change.path}: {change.describe()}")
        return "\n".join(lines) + "\n"

    # -- in a notebook -------------------------------------------------------------------

    def _display(self) -> tuple[str, list[Table], str]:
        """A summary line, the tables and a closing line."""
        head = f"stay {self.command} {self.slug}: {self.outcome}"
        run: list[tuple[object, ...]] = [
            ("course", str(self.course_dir)),
            ("model calls", self.calls),
            ("files written", len(self.written)),
            ("tokens", self.tokens()),
            ("cost", describe_cost(self.cost, set(self.unpriced))),
        ]
        if self.retired:
            run.append(("files retired", len(self.retired)))
        if self.wave is not None:
            run.append(("wave", f"{plural(self.wave.lessons, 'lesson')}, {plural(self.wave.calls, 'call')} "
                                f"in {self.wave.seconds:.1f} s"))
        if self.trace_id:
            run.append(("trace", self.trace_id))
        if self.not_reviewed:
            run.append(("review", f"not run ({self.not_reviewed})"))
        tables: list[Table] = [(("run", "value"), run, set())]
        tail = "Not validated: the run stopped before the validator."
        if (report := self.validation) is not None:
            run.append(("validation", f"{report.fails} FAIL, {report.warns} WARN, {plural(report.checks, 'check')}"))
            owners = owner_rows(report.defects)
            if owners:
                tables.append((OWNER_HEAD, owners, {1, 2}))
            tail = "" if owners else "No defects."
        if self.repair is not None:
            run.append(("repair", f"{plural(len(self.repair.rounds), 'round')}, stopped because {self.repair.stop}; "
                                  f"{plural(len(self.repair.unrepaired), 'defect')} left"))
        if self.unresolved:
            tables.append((("file", "unresolved at the write"),
                           [(path, ", ".join(codes)) for path, codes in self.unresolved_by_file().items()], set()))
        if self.repair is not None and any(r.changes for r in self.repair.rounds):
            tables.append((("round", "repaired file", "lines kept", "of", "share"),
                           [(n, c.path, c.kept, c.lines, f"{c.share:.0%}")
                            for n, r in enumerate(self.repair.rounds, 1) for c in r.changes], {0, 2, 3, 4}))
        stages, costs = self.usage_by_stage, self.cost_by_stage
        if stages:
            rows: list[tuple[object, ...]] = [
                (stage, u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens, u.output_tokens,
                 f"${costs[stage]:.4f}" if stage in costs else "unknown")
                for stage, u in sorted(stages.items())]
            tables.append((("stage", "input", "cache writes", "cache reads", "output", "cost"), rows,
                           {1, 2, 3, 4, 5}))
        return head, tables, tail

    def _repr_html_(self) -> str:
        return html_block("stay-build-result", *self._display())

    def _repr_markdown_(self) -> str:
        return markdown_block(*self._display())


Handler = Callable[[Run], object]
"""What the runner calls for a node: the bound handler, given the run it is part of."""

FROM_RUN: Mapping[str, Callable[[Run], object]] = {  # the wave is planned when a node first asks for it
    **{name: attrgetter(name) for name in ("config", "reader", "model", "report", "tally", "writer", "walk", "wave")},
    "ledger": attrgetter("walk.course"),  # read at the call: scaffold makes a new course's
    "fixer": lambda run: Fixer(run.config, run.reader, run.walk.course, run.model, run.writer, run.tally, run.report),
}
"""The run's collaborators, by the parameter name that asks for one."""


def _stage(pipeline: Dag, name: str, attrs: Mapping[str, Any]) -> object:
    if not attrs["stages"]:
        raise LookupError("the node makes no stage's requests")
    return pipeline.graph["stages"][attrs["stages"][0]]


def _gate(pipeline: Dag, name: str, attrs: Mapping[str, Any]) -> object:
    found = {gate.name: gate for gate in pipeline.graph["gates"]}.get(attrs["gate"])
    if found is None:
        raise LookupError("the node is part of no declared gate")
    return found


FROM_NODE: Mapping[str, Callable[[Dag, str, Mapping[str, Any]], object]] = {
    "name": lambda pipeline, name, attrs: name,
    "node": lambda pipeline, name, attrs: attrs,
    "stage": _stage,
    "gate": _gate,
}
"""What a node declares, by parameter name: bound once, when the table is built."""


def bind(pipeline: Dag, chosen: Mapping[str, Callable[..., object]]) -> dict[str, Handler]:
    """node name -> its handler, each parameter bound to what it names; every problem raised at once."""
    table: dict[str, Handler] = {}
    problems: list[str] = []
    for name, handler in chosen.items():
        attrs = pipeline.nodes[name]
        fixed: dict[str, object] = {}
        wanted: list[tuple[str, Callable[[Run], object]]] = []
        for parameter in inspect.signature(handler).parameters:
            if parameter in FROM_RUN:
                wanted.append((parameter, FROM_RUN[parameter]))
            elif parameter in FROM_NODE:
                try:
                    fixed[parameter] = FROM_NODE[parameter](pipeline, name, attrs)
                except LookupError as exc:
                    problems.append(f"node {name}: {handler.__name__} asks for '{parameter}', but {exc}")
            else:
                problems.append(f"node {name}: {handler.__name__} asks for '{parameter}', which is neither a "
                                f"collaborator ({', '.join(FROM_RUN)}) nor a node's ({', '.join(FROM_NODE)})")
        table[name] = _bound(handler, fixed, tuple(wanted))
    if problems:
        raise GraphError("the pipeline's handlers cannot be bound: " + "; ".join(problems))
    return table


def _bound(handler: Callable[..., object], fixed: Mapping[str, object],
           wanted: tuple[tuple[str, Callable[[Run], object]], ...]) -> Handler:
    def run_node(run: Run) -> object:
        return handler(**fixed, **{parameter: get(run) for parameter, get in wanted})

    run_node.__name__ = _label(handler, fixed)
    run_node.__wrapped__ = handler  # type: ignore[attr-defined]  # what it binds, for inspection
    return run_node


def _label(handler: Callable[..., object], fixed: Mapping[str, object]) -> str:
    """``ask[design]``: the handler, and what its node bound it to (a stage, a gate, the gate a node names or
    the gates it requires or its phase, else the node's name)."""
    what = next((fixed[key] for key in ("stage", "gate") if key in fixed), None)
    if what is None and "node" in fixed:
        node = fixed["node"]
        assert isinstance(node, Mapping)
        what = node["gate"] or ",".join(node["requires"]) or node["phase"] or None
    if what is None and "name" in fixed:
        what = fixed["name"]
    if what is None:
        return handler.__name__
    return f"{handler.__name__}[{getattr(what, 'name', what)}]"


Node = Mapping[str, Any]
"""A graph node's attributes, as a handler that names ``node`` is given them."""


def entry(config: RunConfig, model: ModelGateway, report: Reporter) -> None:
    report.say(f"stay {config.command}: {config.slug or 'new course'} (backend: {model.backend.name})")


def choose(config: RunConfig, name: str) -> str:
    """A router's answer: the successor this run's command goes on to (the runner follows it)."""
    return config.routes[name]


# -- guards -------------------------------------------------------------------


def require(config: RunConfig, walk: Walk, node: Node) -> None:
    """The course exists and every gate the node requires holds; else refuse, naming what unblocks it."""
    _existing(config, walk).require(node["requires"], f"stay {config.command}", lambda gate: (
        f"{config.hint('build', config.slug)}, then {config.hint('approve', config.slug, gate)}"))


def _existing(config: RunConfig, walk: Walk) -> CourseState:
    """The ledger of a course that exists, or a refusal saying how to start one."""
    if walk.state is None or not (config.root / "course.yaml").is_file():
        raise CourseNotFound(f"{no_course(config.slug, config.courses_arg)}; start one with "
                             f"{config.hint('new', 'BRIEF.yaml')}", path=config.root)
    return walk.state


def revise_seed(config: RunConfig, walk: Walk, report: Reporter, node: Node) -> None:
    """``revise``: the course exists, each target's phase has the approvals it needs, and an edited file is
    revised only when forced (its bytes kept first)."""
    course = _existing(config, walk)
    check_revisions(config, course, node["requires_by_phase"])
    if not config.show:  # a shown revision replaces nothing: --keep keeps an edited file's bytes
        keep_edited(course, list(config.revisions), config.run_number, report.say)
    walk.revisions = pending(config, course, report)
    walk.threads = {}
    for path in walk.revisions:
        thread = thread_so_far(course, path)
        if thread:
            walk.threads[path] = thread


# -- intake, moderation, scaffold ---------------------------------------------


def intake(config: RunConfig, reader: RunReader) -> None:
    """The brief's duration checked against the run's own house style."""
    if reader.brief is None:
        raise UsageError(f"stay {config.command} needs a brief file")
    check_duration(reader.brief.time_available, f"course '{config.slug}' brief", config.limits)


def moderate(config: RunConfig, reader: RunReader, model: ModelGateway, report: Reporter, walk: Walk) -> None:
    """Screen the whole brief as one message (a topic and an audience fine apart can be another thing
    together), unless screened before. Fails open only when the service is unreachable; a brief screened by
    nothing is said and recorded in the run log."""
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
    """Create the course or bring course.yaml's brief up to date; a command that does not author the
    node's phase only checks the brief is the course's."""
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


def run_course_stage(config: RunConfig, reader: RunReader, report: Reporter, ledger: CourseState, writer: Writer,
                     walk: Walk, fixer: Fixer, stage: Stage) -> None:
    """A course-scope stage: regenerate its one file if it must be, then check it at the write."""
    path = stage.output
    if needs_writing(config, ledger, report, path, stage.phase):
        report.say(f"  {path}: writing ({why(ledger.status(path))})")
        if regenerate(fixer, path):
            check_written(fixer, walk.cancelled, [path])
    elif ledger.status(path).state == "current":
        report.say(f"  {path}: current")
    writer.refresh_graph()
    if stage.kind.derived is not Artefact.derived and reader.exists(path):
        # the files written from it as it stands (example.yaml's data files), as for any other file
        todo = {target: made for target, made in reader.load(path).derived().items()
                if needs_writing(config, ledger, report, target, stage.phase)}
        for target in todo:
            report.say(f"  {target}: writing ({why(ledger.status(target))}), from {path}")
        if todo:
            writer.write(todo)


def run_module_stage(config: RunConfig, reader: RunReader, report: Reporter, ledger: CourseState, writer: Writer,
                     walk: Walk, fixer: Fixer, stage: Stage) -> None:
    """A module-scope stage: one call per module with a file to write (its term budget is allocated, not
    audited after), only the files that must be written; checked at the write."""
    for module in reader.layout.curriculum.modules:
        places = reader.layout.lessons_of(module)
        todo = [place.path(stage.output) for place in places
                if needs_writing(config, ledger, report, place.path(stage.output), stage.phase)]
        if todo:
            report.say(f"  module {module.id}: planning {plural(len(places), 'lesson')}")
            # the module's plans in one step (one journal line: a crash leaves none unrecorded); a plan's
            # inputs do not depend on plans' contents: one refresh, below
            if regenerate(fixer, todo[0], only=tuple(todo)):
                check_written(fixer, walk.cancelled, todo)
        else:
            report.say(f"  module {module.id}: plans current")
    writer.refresh_graph()


# -- the wave and after -----------------------------------------------------


def write_lesson(wave: Wave) -> None:
    """Start every lesson's calls (its lesson-scope wave stages); gather waits for them."""
    wave.start_lessons()


def start_course_task(wave: Wave, stage: Stage) -> None:
    """Start a course-scope wave stage's one call (the capstone) beside the lessons."""
    wave.start_course(stage.name)


def gather(wave: Wave, tally: Tally, report: Reporter) -> None:
    """The barrier: wait for every task the wave nodes (or ``revise_files``) started."""
    if not wave.empty:
        tally.wave = wave.wait()
        report.say(f"wave: gathered {plural(wave.total, 'task')}")


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
    terms: dict[str, GlossaryTerm] = {}  # norm(term) -> its first introduction
    for place in reader.layout.lessons():
        plan = plans.get(place.id)
        for new in sorted(plan.new_terms if plan else [], key=lambda t: (t.term.casefold(), t.term)):
            if (key := norm_term(new.term)) not in terms:
                terms[key] = GlossaryTerm(term=new.term, definition=new.definition, introduced_in=place.id)
    glossary = Glossary(terms=list(terms.values()))
    if status.state != "current" or not same_bytes(config.root / GLOSSARY, dump(glossary)):
        writer.write({GLOSSARY: glossary})


def land_manifest(config: RunConfig, report: Reporter, ledger: CourseState, tally: Tally, node: Node) -> None:
    """Retire the files the curriculum no longer has (moved, never deleted), then project the statuses."""
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
    """Repair runs only while the gates its node requires hold, in a command that authors its phase."""
    if not config.may_write(node["phase"]):
        return
    ledger.require(node["requires"], "repair", lambda gate: config.hint("approve", config.slug, gate))
    tally.repair = repair_course(fixer)


FIXED: Mapping[str, Callable[..., object]] = {
    "entry": entry, "intake": intake, "moderate": moderate, "write_lesson": write_lesson, "gather": gather,
    "validate": validate, "revise_files": revise_files, "revise_gather": gather,
    "scaffold": scaffold, "merge_glossary": merge_glossary, "land_manifest": land_manifest,
}
"""The nodes whose work is their own; every other node's handler is chosen by its kind or its stage."""


def handlers(pipeline: Dag) -> dict[str, Handler]:
    """node name -> what it does: a handler chosen by the node's name or kind, then bound (``bind``)."""
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
    "repair": repair, "review": review_stale,
}
"""The handler of a node of each of these kinds (a guard with ``requires_by_phase`` is revise's)."""

HANDLERS = handlers(assemble())


_handlers = functools.cache(handlers)
"""The handler table of each pipeline: handlers' parameters are read once a process, not once a run."""


def _walk(run: Run, pipeline: Dag, declared: CommandDecl,
          on_node: Callable[[str], None] | None) -> BuildResult:
    config = run.config
    tally = run.tally
    table = _handlers(pipeline)
    otlp = config.settings.otlp
    tracer = run.model.tracer = Tracer(config.slug, config.command, run.model.backend.name,  # minted before the run
                                       capture=otlp is not None and otlp.capture_content,
                                       prices=prices_of(run.model.backend))
    stopped: str | None = None
    failed: str | None = None
    reason = "done"
    try:
        answers: dict[str, str] = {}
        for name in walk(pipeline, config.command, answers.__getitem__):  # a router's edge is its answer
            kind = pipeline.nodes[name]["kind"]
            if kind == "stage":
                run.report.say(f"[{name}]")
            with tracer.span(name, kind, pipeline.nodes[name]["stages"]):
                answer = table[name](run)
            if kind == "router":
                answers[name] = str(answer)
            if run.walk.state is not None and not (run.walk.wave is not None and run.walk.wave.in_flight):
                # hashes.json once per node, the journal in between; while the wave is in flight the
                # journal alone: whether a task had written yet would decide the write, not the walk
                run.walk.course.checkpoint()
            if on_node:
                on_node(name)
        if pipeline.nodes[declared.last]["kind"] == "gate-summary":
            gate = declared.last.removesuffix("_summary")
            raise Stop(f"{gate} gate", f"stay {config.command} stops at the {gate} gate; review .state/{gate}-gate.md "
                       f"(or {config.hint('view', config.slug)} for a review page), then "
                       f"{config.hint('approve', config.slug, gate)}")
    except Stop as stop:
        stopped, reason = stop.where, stop.reason  # said once, by whoever reads the result
    except BaseException as exc:
        # the run log must not call a refused, failed or interrupted run "completed"
        failed = type(exc).__name__ + (f": {exc}" if str(exc) else "")
        setattr(exc, SPENT, tally.spent())  # what it paid before it stopped: the command line says it
        if run.walk.wave is not None:  # no task may write after the run has failed or been stopped, and
            run.walk.wave.cancel(wait=isinstance(exc, Exception))  # none outlives it but after a Ctrl-C
        run.report.end(f"failed: {failed}", "failed")
        raise
    finally:
        if run.walk.state is not None and (config.root / "course.yaml").is_file():
            run.walk.course.checkpoint()
            if tally.projected != len(tally.written):  # else land_manifest's projection is still true
                run.walk.course.project_statuses(load_manifest(config.root))
            log_run(config.root, config.command, run.model.backend.name, tally.written, stopped, tally.retired,
                    tally.revised, [line for change in tally.changes for line in change.log_lines()], failed,
                    run.walk.unscreened)
            if tally.validation is not None:
                tracer.scores(tally.validation)
            # the error's type only (``failed`` is "Type: message"): the root span is marked with it
            tracer.flush(config.root, stopped, otlp=config.settings.otlp,
                         error=None if failed is None else failed.partition(":")[0],
                         lessons=lesson_files(config.stages, run.reader))
    if config.command == "plan" and stopped is None:
        reason = f"planned; write the course with {config.hint('write', config.slug)}"
    diff = ""
    if config.command == "revise" and stopped is None:
        if config.show:
            diff, reason = shown(run)
        else:
            reason = revised_reason(run.walk.course, sorted(tally.revised), config.hint, config.slug, tally.written)
    spent = tally.spent()
    priced = describe_cost(spent.cost, set(spent.unpriced))  # "$x" or "cost unknown (...)"
    run.report.say(f"{plural(tally.calls, 'model call')}, {plural(len(set(tally.written)), 'file')} written in "
                   f"{clock(time.monotonic() - run.report.started)}; "
                   f"{'cost ' + priced if priced.startswith('$') else priced}")
    result = BuildResult(**vars(spent), slug=config.slug, course_dir=config.root, command=config.command,
                         stopped_at=stopped, reason=reason, validation=tally.validation, repair=tally.repair,
                         written=tuple(sorted(set(tally.written))), wave=tally.wave, trace_id=tracer.trace_id,
                         retired=tuple(sorted(tally.retired)), diff=diff, not_reviewed=config.not_reviewed,
                         unresolved=tuple(d for path in sorted(tally.unresolved) for d in tally.unresolved[path]))
    run.report.end(result.outcome, "complete" if result.complete else "stopped")
    return result


def shown(run: Run) -> tuple[str, str]:
    """After a ``--show`` walk: each target's proposal kept, and their diff with what to do next."""
    config, course, proposed = run.config, run.walk.course, run.walk.proposed or {}
    diffs: list[str] = []
    paths: list[str] = []
    for path, note in config.revisions.items():
        if path in proposed:
            earlier = open_proposal(course, path)  # the open proposal this one sets aside
            aside = [] if earlier is None else earlier.replaced()
            write_proposal(config.root, Proposal(path=path, base=course.current_hash(path), note=note,
                                                 text=proposed[path], set_aside=tuple(bounded(aside))))
        proposal = open_proposal(course, path)
        if proposal is None:  # already revised with this note: nothing was asked
            continue
        paths.append(path)
        diffs.append(diff_of(path, current_text(course, path), proposal.text)
                     or f"(the proposal for {path} changes nothing in it)\n")
    if not paths:
        return "", "nothing to show: every file already has this note"
    keep = config.hint("revise", config.slug, *paths, "--keep")
    again = config.hint("revise", config.slug, *paths, "--note", repr("..."), "--show")
    return "".join(diffs), (f"shown, not written: {', '.join(paths)} (the proposal is in .state/proposals/); "
                            f"keep it with {keep}, or try another note with {again}")


def keep_proposals(slug: str, targets: Sequence[str], *, courses_dir: str | os.PathLike[str], force: bool,
                   settings: Settings | None, stages: tuple[Stage, ...], progress: Progress) -> BuildResult:
    """Write each target's shown proposal as ``revise`` would have; refused, before anything is written,
    for a target with no proposal or a stale one."""
    state = open_course_named(slug, courses_dir, settings, stages)
    paths = resolve_targets(state, list(targets), {stage.name for stage in stages})
    root, courses_arg = state.root, os.fspath(courses_dir)
    # the approvals a revision of each phase needs, as revise's guard node declares them
    by_phase = next(attrs["requires_by_phase"] for _name, attrs in _pipeline(stages).nodes(data=True)
                    if attrs.get("requires_by_phase"))
    with os_errors(), CourseLock(root):
        kept = {path: _keepable(state, path, slug, courses_arg, force) for path in paths}
        for path in paths:
            phase = state.graph.nodes[path]["phase"]
            state.require(by_phase[phase], f"keeping the proposal for {path} (a {phase} file)",
                          lambda gate: f"{command_hint(courses_arg, 'approve', slug, gate)} first")
        keep_edited(state, paths, next_run_number(root), progress)  # forced: kept first, as a revise keeps them
        texts = {path: proposal.text for path, proposal in kept.items()}
        written = [path for path in paths if not same_bytes(root / path, texts[path])]
        notes = {path: proposal.note for path, proposal in kept.items()}
        earlier = {path: kept_notes(state, path) + list(proposal.set_aside) for path, proposal in kept.items()}
        threads = {path: recorded_thread(earlier[path], notes[path]) for path in paths if earlier[path]}
        state.write(texts, revisions=notes, threads=threads)
        state.checkpoint()
        for path in paths:
            drop_proposal(root, path)
            progress(f"  {path}: kept the proposal shown with note {note_sha(notes[path])}")
        state.project_statuses(load_manifest(root))
        log_run(root, "revise --keep", "no model call", written, None, revised=notes)
        reason = revised_reason(state, sorted(paths), lambda *words: command_hint(courses_arg, *words), slug,
                                written)
    return BuildResult(slug=slug, course_dir=root, command="revise", stopped_at=None, reason=reason,
                       validation=None, repair=None, written=tuple(sorted(written)), calls=0, usage=Usage(), cost=0.0)


def _keepable(state: CourseState, path: str, slug: str, courses_arg: str, force: bool) -> Proposal:
    """``path``'s proposal, if it can be kept: made against the file as it is now."""
    again = command_hint(courses_arg, "revise", slug, path, "--note", repr("..."), "--show")
    proposal = read_proposal(state.root, path)
    if proposal is None:
        raise UsageError(f"no proposal to keep for {path}: show one first with {again}")
    if proposal.base != state.current_hash(path):
        raise UsageError(f"the proposal for {path} is stale: the file changed since it was shown; "
                         f"show a new one with {again}")
    if state.status(path).state == "edited" and not force:
        raise PipelineError(f"{path} was edited by hand: keep the proposal with --force (its current bytes are "
                            f"kept in {RETIRED}/), or edit it yourself")
    return proposal


def revised_reason(course: CourseState, revised: list[str], hint: Callable[..., str], slug: str,
                   written: Collection[str]) -> str:
    """What writing the ``revised`` files did, and what next; a file whose bytes did not change says so."""
    if not revised:
        return "nothing to revise: every file already has this note"
    unchanged = [path for path in revised if path not in written]
    revised = [path for path in revised if path in written]
    if not revised:
        return (f"unchanged: {', '.join(unchanged)}: its new text is the file as it stood, so no byte changed "
                "(the note is recorded, and not sent again for this file)")
    answers = course.gates()
    retired = [gate for gate in GATE_NAMES  # an approval the revision retired, not a decline
               if answers.get(gate, {}).get("approved") and any(p in course.covered(gate) for p in revised)
               and not course.approval(gate)[0]]
    stale = sorted({d for p in revised for d in course.graph.successors(p) if course.status(d).state == "stale"})
    said = f"revised {', '.join(revised)}"
    if retired:
        said += f"; the {' and '.join(retired)} " + ("approvals no longer hold" if len(retired) > 1
                                                       else "approval no longer holds")
    if stale:
        said += f"; {plural(len(stale), 'file')} now stale"
    if retired or stale:
        said += f": run {hint('build', slug)} to regenerate and review"
    return said


def _house_limits(settings: Settings) -> DurationLimits:
    """The run's duration limits, once its rubric levels are checked to be the capstone schema's (built from
    the packaged house style: other levels would fail every capstone after it was paid for)."""
    try:
        data = HouseData.load(settings.resolved_data_dir())
    except StayError:
        return DEFAULT_LIMITS  # without readable data files the validator will say so
    levels = tuple(data["rubric.levels"])
    if levels != RUBRIC_LEVELS:
        where = Path(settings.resolved_data_dir()) / "house-style.yaml"
        raise UsageError(f"{where}: rubric.levels is {list(levels)}, but the capstone's answer schema asks for "
                         f"{list(RUBRIC_LEVELS)} (the packaged house style); use those levels, or a data "
                         "directory whose rubric levels match")
    return house_limits(data)


Command = Literal["new", "build", "plan", "write", "repair", "revise"]


@os_errors()
def run_command(command: Command, target: Brief | str | os.PathLike[str], *,
                courses_dir: str | os.PathLike[str] = "courses", yes: bool = False,
                settings: Settings | None = None, backend: ModelClient | BackendName | None = None,
                prompts_dir: str | os.PathLike[str] | None = None, cache: bool | None = None,
                progress: Progress | None = None, slug: str | None = None,
                on_node: Callable[[str], None] | None = None, replay: bool = False, batch: bool = False,
                stages: Sequence[Stage] | None = None, revisions: Mapping[str, str] | None = None,
                force: bool = False, screen: bool = True, show: bool = False, review: bool = True) -> BuildResult:
    """Run one command on ``target``: a Brief, a brief file, or a course slug; the rest as ``build_course``."""
    settings = (settings or Settings.from_env()).replace(
        backend=backend if isinstance(backend, str) else None,
        prompts_dir=Path(prompts_dir) if prompts_dir is not None else None, cache=cache)
    client = backend if isinstance(backend, ModelClient) else None
    say = progress or default_progress()
    stages = tuple(REGISTRY if stages is None else stages)
    pipeline = _pipeline(stages)
    declared: CommandDecl | None = pipeline.graph["commands"].get(command)
    if declared is None:
        raise UsageError(f"unknown command '{command}'; the commands are {', '.join(pipeline.graph['commands'])}")
    courses_arg = os.fspath(courses_dir)
    hint = functools.partial(command_hint, courses_arg)
    brief, slug = _resolve(command, target, Path(courses_dir), slug)
    root = course_dir(courses_dir, slug)
    exists = (root / "course.yaml").is_file()
    if command == "new" and exists:
        if (root / STATE).is_dir():
            raise UsageError(f"course '{slug}' already exists in {courses_arg}; continue it with "
                             f"{hint('build', slug)}")
        # No .state/: not a course a build started here (a checkout's committed sample, a
        # course copied in), so never point at building over it
        raise UsageError(f"course '{slug}' already exists in {courses_arg} and was not built there by stay (it "
                         "has no .state/); build yours in another directory with --courses-dir DIR, or under "
                         "another name with --slug NAME")
    if command not in ("new", "build") and not exists:
        raise CourseNotFound(f"{no_course(slug, courses_arg)}; start one with {hint('new', 'BRIEF.yaml')}",
                             path=root)
    prompts = Prompts.load(settings.prompts_dir, stages, settings.data_dir)
    limits = _house_limits(settings)
    if brief is not None:
        check_duration(brief.time_available, f"course '{slug}' brief", limits)
    chosen = client if client is not None else default_backend(settings, say)
    settings = with_backend_models(settings, chosen)
    stages, not_reviewed = reviewing(stages, chosen, review)
    if not_reviewed:  # the run's graph has no review node, and its ledger no review file
        pipeline = _pipeline(stages)
    sources = Sources(prompts, settings.models, stages, chosen.name)
    # Every id and path on disk is checked before anything is written or locked.
    state = open_course(root, sources, settings, stages) if exists else None
    if client is None:  # once the course on disk is known to be readable: a refusal is the one line
        announce(settings, chosen, say)
    if screen and declared.entry == "intake" and not can_screen(chosen) and not (
            state is not None and brief is not None and state.screened(brief)):
        raise UsageError(f"the {chosen.name} backend cannot screen a brief (its features lack 'screen'); give "
                         "--no-screen (build_course(..., screen=False)) to build with no input moderation, which "
                         "the run log records, or choose a backend that screens")
    if batch and not isinstance(chosen, AnthropicBackend):
        raise UsageError("--batch needs the anthropic backend (Message Batches are an API feature)")
    if batch and settings.max_cost is not None:  # a batch sends the whole wave at once: no call to stop before
        raise UsageError("--batch cannot keep to --max-cost (STAY_MAX_COST): a batch sends every wave call at "
                         "once; drop one of them")
    if not isinstance(chosen, OfflineBackend):  # an offline run is not billed: nothing to cap
        cost_cap(settings, prices_of(chosen))  # a cap over an unpriced model, refused before anything is paid
    if client is None and not replay and isinstance(chosen, AnthropicBackend):
        chosen.check_models(settings.models)  # a mistyped id, before anything is paid or locked
    # A new course is locked from its first byte, before its brief is screened: a second
    # build of it is refused here, at whatever point it arrives (issue 37)
    lock = CourseLock(root, create=not exists)
    lock.acquire()
    if not exists and (root / "course.yaml").exists():  # another run made and finished it since
        lock.release()
        raise UsageError(f"course '{slug}' was created in {courses_arg} by another stay command while this one "
                         f"started; continue it with {hint('build', slug)}")
    if state is not None:
        state.hash_once()  # the run holds the lock: no one else writes its files
    run: Run | None = None
    try:
        batching = None
        caching = settings.cache if settings.cache is not None else not isinstance(chosen, OfflineBackend)
        if replay or batch or caching:
            request_cache = RequestCache(root / ".runs" / "cache")
            if isinstance(chosen, AnthropicBackend) and batch:
                batching = BatchPlan(chosen.client, request_cache, settings.batch_poll_seconds, chosen)
            chosen = CachedBackend(chosen, request_cache, replay=replay)
        config = RunConfig(command=command, slug=slug, root=root, courses_arg=courses_arg, authors=declared.authors,
                           settings=settings, prompts=prompts, stages=stages, limits=limits, sources=sources,
                           yes=yes, run_number=next_run_number(root) if state else 1, batch=batching,
                           revisions=dict(revisions or {}), force=force, screen=screen, show=show,
                           not_reviewed=not_reviewed if "review" in declared.authors else "",
                           routes={name: route(pipeline, command, name) for name, attrs in pipeline.nodes(data=True)
                                   if attrs["kind"] == "router"})
        run = Run.start(config, chosen, say, brief, state=state)
        return _walk(run, pipeline, declared, on_node)
    finally:
        if run is not None and run.walk.wave is not None:
            run.walk.wave.then(lock.release)  # only once every wave worker has ended
        else:
            lock.release()


def reviewing(stages: tuple[Stage, ...], backend: ModelClient, review: bool) -> tuple[tuple[Stage, ...], str]:
    """The run's stages and, when they review no lesson (offline, ``--no-review``), why."""
    why = ("the offline backend cannot read a lesson; build with a model backend to review" if
           isinstance(backend, OfflineBackend) and not backend.reviews else "" if review else
           "--no-review was given")
    return (tuple(s for s in stages if s.phase != "review"), why) if why else (stages, "")


@functools.cache
def _pipeline(stages: tuple[Stage, ...]) -> Dag:
    return checked(assemble(declare(stages)))


def _resolve(command: str, target: Brief | str | os.PathLike[str], courses_dir: Path,
             slug: str | None) -> tuple[Brief | None, str]:
    if isinstance(target, Brief):
        return target, title_slug(target.title, slug)
    text = os.fspath(target)
    if text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text:
        brief = load_brief(text)
        return brief, title_slug(brief.title, slug)
    name = check_slug(text)
    manifest_path = course_dir(courses_dir, name) / "course.yaml"
    if not manifest_path.is_file():
        raise CourseNotFound(f"{no_course(name, courses_dir)}; start one with "
                             f"{command_hint(os.fspath(courses_dir), 'new', 'BRIEF.yaml')}", path=manifest_path.parent)
    return load_manifest(manifest_path.parent).brief, name


def build_course(brief: Brief | str | os.PathLike[str], *, courses_dir: str | os.PathLike[str] = "courses",
                 yes: bool = False, settings: Settings | None = None,
                 backend: ModelClient | BackendName | None = None, prompts_dir: str | os.PathLike[str] | None = None,
                 cache: bool | None = None, progress: Progress | None = None, slug: str | None = None,
                 on_node: Callable[[str], None] | None = None, replay: bool = False, batch: bool = False,
                 stages: Sequence[Stage] | None = None, screen: bool = True, review: bool = True) -> BuildResult:
    """Build a course from its brief, resuming from whatever is on disk.

    Stops at the design gate and the plan gate unless their approvals hold; with
    ``yes=True`` each gate is answered and recorded as ``auto-approved (--yes)``.

    ``settings`` (default: ``Settings.from_env()``) says everything a run is told from
    outside; ``backend`` (a registered backend's name, or a ModelClient), ``prompts_dir`` and
    ``cache`` override it. Answers are cached under <course>/.runs/cache/ (by default for
    every backend but offline); ``replay=True`` answers only from that cache;
    ``batch=True`` sends the wave's requests through Message Batches (half price).
    ``on_node`` is called with each node's name after it completes (tests use it to
    crash a run after any node and show that a rerun finishes the same course).
    ``stages`` is the stage registry (``None``: ``stay.stages.REGISTRY``; a ``None`` default, not the
    registry itself, keeps ``help(build_course)`` readable). ``screen=False``
    (``--no-screen``) builds with no input moderation, said and written in the run log;
    a backend without the "screen" feature needs it. ``review=False`` (``--no-review``): the
    judging model reviews no lesson after the wave (the offline backend never does).
    """
    return run_command("build", brief, courses_dir=courses_dir, yes=yes, settings=settings, backend=backend,
                       prompts_dir=prompts_dir, cache=cache, progress=progress, slug=slug, on_node=on_node,
                       replay=replay, batch=batch, stages=stages, screen=screen, review=review)


def revise(slug: str, targets: Sequence[str], *, note: str | None = None,
           courses_dir: str | os.PathLike[str] = "courses", force: bool = False, settings: Settings | None = None,
           backend: ModelClient | BackendName | None = None, prompts_dir: str | os.PathLike[str] | None = None,
           progress: Progress | None = None, stages: Sequence[Stage] | None = None, show: bool = False,
           keep: bool = False) -> BuildResult:
    """Regenerate the named artefacts with ``note`` attached to their stages' requests as
    reviewer guidance, next to the current version of each file; nothing else is written.

    A target is a course file path, a lesson id (its lesson files) or a stage name (every
    file of that stage). Without ``note``, the note of a decline of the gate covering a
    target is used. A file edited by hand is revised only with ``force`` (its bytes are
    kept in .state/retired/). Revising a gated file retires that gate's approval;
    dependents become stale. Returns the same result type as ``build_course``.

    ``show=True`` writes no course file: each revision is kept as a proposal in
    .state/proposals/ and its unified diff is the result's ``diff``. ``keep=True`` (no
    note, no model call) writes the proposals as a revision would. Each revision of a
    file is given the reviewer's thread on it so far (``stay.pipeline._state``).
    """
    if show and keep:
        raise UsageError("--show and --keep are two steps: show a proposal with --note TEXT --show, then --keep it")
    stages = REGISTRY if stages is None else stages  # None: the registry (a readable default in help())
    if keep:
        if note is not None:
            raise UsageError("--keep writes the proposal already shown, whose note it records: give no --note "
                             "(to try another note, use --note TEXT --show)")
        return keep_proposals(slug, list(targets), courses_dir=courses_dir, force=force, settings=settings,
                              stages=tuple(stages), progress=progress or default_progress())
    state = open_course_named(slug, courses_dir, settings, stages)
    paths = resolve_targets(state, list(targets), {stage.name for stage in stages})
    revisions = {}
    for path in paths:
        given = note if note is not None and note.strip() else declined_note(state, path)
        if not given.strip():
            raise UsageError(f"no note to revise {path} with: give --note TEXT (or decline its gate with --note)")
        revisions[path] = given
    return run_command("revise", slug, courses_dir=courses_dir, settings=settings, backend=backend,
                       prompts_dir=prompts_dir, progress=progress, stages=stages, revisions=revisions, force=force,
                       show=show)
