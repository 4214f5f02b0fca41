"""The runner: walks the pipeline graph from where a command joins it.

``build_course`` and the other entry points load nothing but the slug and the
brief into the run; the course is on disk, and every node reads what it needs
from there, so a run resumed days later never replays stale state.
"""

from __future__ import annotations

import functools
import getpass
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from stay.artefacts import Brief, Curriculum, load
from stay.briefs import (
    DEFAULT_LIMITS,
    DurationLimits,
    brief_from_data,
    check_duration,
    check_slug,
    course_dir,
    house_limits,
    load_brief,
    slugify,
)
from stay.errors import EnvironmentProblem, PipelineError, StayError, UsageError
from stay.models import (
    AnthropicBackend,
    CachedBackend,
    ModelClient,
    OfflineBackend,
    RequestCache,
    Usage,
    describe_cost,
    model_table,
)
from stay.pipeline._course_graph import course_graph
from stay.pipeline._graph import DECLARATION, CommandDecl, command_walk, graph
from stay.pipeline._lock import CourseLock
from stay.pipeline._nodes import HANDLERS
from stay.pipeline._otel import otlp_target_from_environment
from stay.pipeline._repair import RepairReport
from stay.pipeline._run import Progress, Run, Stop, command_hint, print_progress
from stay.pipeline._state import GATES, CourseState, Status, load_manifest, now, plans_on_disk, read_ledger
from stay.pipeline._trace import Tracer
from stay.pipeline._wave import WaveStats
from stay.stages import Prompts
from stay.validate import CourseReport

Command = Literal["new", "build", "plan", "write", "repair"]


@dataclass(frozen=True)
class BuildResult:
    """Where a run stopped and why, what it wrote, and the validation report."""

    slug: str
    course_dir: Path
    command: str
    stopped_at: str | None
    """None when the run went to the end; else where it waits, e.g. 'design gate'."""
    reason: str
    validation: CourseReport | None
    repair: RepairReport | None
    written: tuple[str, ...]
    calls: int
    """Model calls this run made (0 when nothing was missing or stale)."""
    usage: Usage
    wave: WaveStats | None = None
    """Lessons, calls and the most in flight at each level, when a wave ran."""
    trace_id: str = ""
    """The id of this run's trace in <course>/.runs/traces/."""
    cost: float | None = 0.0
    """US dollars this run paid, from stay.models.PRICES (a replayed answer costs nothing;
    a batched one, half); None (unknown) when a call used a model with no price on file."""
    usage_by_stage: dict[str, Usage] | None = None
    retired: tuple[str, ...] = ()
    """Files no longer in the curriculum, moved to .state/retired/run-<n>/ by this run."""
    unpriced: tuple[str, ...] = ()
    """Models this run used that have no price on file (then ``cost`` is None)."""
    cost_by_stage: dict[str, float] | None = None
    """US dollars per stage (priced calls only; see ``unpriced``)."""

    @property
    def complete(self) -> bool:
        return self.stopped_at is None


def default_backend(progress: Progress | None = None, name: str | None = None) -> ModelClient:
    """The named backend; by default anthropic when ``ANTHROPIC_API_KEY`` is set, else the
    offline backend. Either is announced in one line."""
    say = progress or print_progress
    chosen = name or ("anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "offline")
    if chosen == "anthropic":
        backend = AnthropicBackend(progress=say)  # says in one line when a timeout or retry cap is hit
        models = ", ".join(f"{role} {model}" for role, model in model_table().items())
        say(f"backend: anthropic ({models})")
        return backend
    if chosen == "offline":
        say("backend: offline (ANTHROPIC_API_KEY is not set): deterministic template prose, no network"
            if not os.environ.get("ANTHROPIC_API_KEY") else
            "backend: offline (chosen): deterministic template prose, no network")
        return OfflineBackend()
    raise UsageError(f"unknown backend '{chosen}'; use offline or anthropic")


def _caps() -> tuple[int, int, int]:
    def number(name: str, default: int) -> int:
        raw = os.environ.get(name, "")
        try:
            value = int(raw) if raw else default
        except ValueError:
            raise UsageError(f"{name}={raw!r} is not a whole number") from None
        least = 0 if name == "STAY_REPAIR_ROUNDS" else 1
        if value < least:
            raise UsageError(f"{name} must be at least {least}")
        return value

    return (number("STAY_WAVE_CONCURRENCY", 4), number("STAY_MODEL_CONCURRENCY", 8),
            number("STAY_REPAIR_ROUNDS", 2))


def run_command(command: Command, target: Brief | str | os.PathLike[str], **options: object) -> BuildResult:
    """Run one command. ``target`` is a Brief, a brief file, or (plan, write, repair,
    build of an existing course) a course slug. Options as for ``build_course``."""
    try:
        return _run_command(command, target, **options)  # type: ignore[arg-type]
    except OSError as exc:
        raise EnvironmentProblem.from_os_error(exc) from None


def _house_limits() -> DurationLimits:
    from stay.validate import HouseData, default_data_dir

    try:
        return house_limits(HouseData.load(default_data_dir()))
    except StayError:
        return DEFAULT_LIMITS  # without readable data files the validator will say so


def _run_command(command: Command, target: Brief | str | os.PathLike[str], *,
                courses_dir: str | os.PathLike[str] = "courses", yes: bool = False,
                backend: ModelClient | str | None = None, prompts: Prompts | None = None,
                progress: Progress | None = None, slug: str | None = None,
                on_node: Callable[[str], None] | None = None, cache: bool | None = None,
                replay: bool = False, batch: bool = False) -> BuildResult:
    say = progress or print_progress
    declared = DECLARATION.commands.get(command)
    if declared is None:
        raise UsageError(f"unknown command '{command}'; the commands are {', '.join(DECLARATION.commands)}")
    courses_arg = os.fspath(courses_dir)
    brief, slug = _resolve(command, target, Path(courses_dir), slug)
    root = course_dir(courses_dir, slug)
    exists = (root / "course.yaml").is_file()
    hint = functools.partial(command_hint, courses_arg)
    if command == "new" and exists:
        raise UsageError(f"course '{slug}' already exists in {courses_arg}; continue it with "
                         f"{hint('build', slug)}")
    if command not in ("new", "build") and not exists:
        raise UsageError(f"there is no course '{slug}' in {courses_arg}; start one with "
                         f"{hint('new', 'BRIEF.yaml')}")
    limits = _house_limits()
    if brief is not None:
        check_duration(brief.time_available, f"course '{slug}' brief", limits)
    wave, models, rounds = _caps()
    now()  # a bad SOURCE_DATE_EPOCH is refused before the run, not when a gate is answered
    # Every id and path on disk is checked before anything is written or locked.
    state = _open_course(root) if exists else None
    client = backend if isinstance(backend, ModelClient) else default_backend(say, backend)
    if batch and not isinstance(client, AnthropicBackend):
        raise UsageError("--batch needs the anthropic backend (Message Batches are an API feature)")
    lock = CourseLock(root) if exists else None
    if lock is not None:
        lock.acquire()
    try:
        return _walk(declared, command, brief, slug, root, state, lock, client, say, courses_arg, limits,
                     (wave, models, rounds), yes=yes, prompts=prompts, on_node=on_node, cache=cache,
                     replay=replay, batch=batch, courses_dir=Path(courses_dir))
    finally:
        if lock is not None:
            lock.release()


def _walk(declared: CommandDecl, command: str, brief: Brief | None, slug: str, root: Path,
          state: CourseState | None, lock: CourseLock | None, client: ModelClient, say: Progress,
          courses_arg: str, limits: DurationLimits, caps: tuple[int, int, int], *, yes: bool,
          prompts: Prompts | None, on_node: Callable[[str], None] | None, cache: bool | None, replay: bool,
          batch: bool, courses_dir: Path) -> BuildResult:
    wave, models, rounds = caps
    batching = None
    if replay or batch or (cache if cache is not None else not isinstance(client, OfflineBackend)):
        request_cache = RequestCache(root / ".runs" / "cache")
        if isinstance(client, AnthropicBackend) and batch:
            poll = os.environ.get("STAY_BATCH_POLL_SECONDS", "30")
            try:
                batching = (client.client, request_cache, float(poll))
            except ValueError:
                raise UsageError(f"STAY_BATCH_POLL_SECONDS={poll!r} is not a number of seconds") from None
        client = CachedBackend(client, request_cache, replay=replay)
    run = Run(command=command, courses_dir=courses_dir, backend=client,
              prompts=prompts or Prompts.load(), progress=say, yes=yes, brief=brief, slug=slug,
              root=root, wave_width=wave, model_width=models, repair_rounds=rounds,
              model_slots=threading.Semaphore(models), batch=batching, authors=declared.authors,
              courses_arg=courses_arg, state=state, course_lock=lock, house_limits=limits)
    if state is not None:
        run.run_number = state.next_run_number()
    pipeline = graph()
    tracer = run.tracer = Tracer(slug, command, run.backend.name)  # minted before the run
    stopped: str | None = None
    reason = "done"
    try:
        for name in command_walk(pipeline, command):
            if name == "write_capstone":
                continue  # runs inside the wave, beside the lessons
            kind = pipeline.nodes[name]["kind"]
            if kind == "stage":
                run.say(f"[{name}]")
            with tracer.span(name, kind):
                HANDLERS[name](run)
            if on_node:
                on_node(name)
        if pipeline.nodes[declared.last]["kind"] == "gate-summary":
            gate = declared.last.removesuffix("_summary")
            raise Stop(f"{gate} gate", f"stay {command} stops at the {gate} gate; review "
                                       f".state/{gate}-gate.md, then {run.hint('approve', slug, gate)}")
    except Stop as stop:
        stopped, reason = stop.where, stop.reason
        run.say(f"stopped at the {stop.where}: {stop.reason}")
    finally:
        if run.state is not None and (root / "course.yaml").is_file():
            run.course.project_statuses(load_manifest(root))
            run.course.log_run(command, run.backend.name, run.written, stopped, run.retired)
            if run.validation is not None:
                tracer.scores(run.validation)
            tracer.flush(root, stopped, otlp=otlp_target_from_environment())
        if run.course_lock is not None and run.course_lock is not lock:
            run.course_lock.release()  # taken by scaffold for a new course
    if command == "plan" and stopped is None:
        reason = f"planned; write the course with {run.hint('write', slug)}"
    usage = run.usage
    price = describe_cost(run.cost, run.unpriced)
    run.say(f"{run.calls} model calls, {len(set(run.written))} files written; tokens: "
            f"{usage.input_tokens} input, {usage.cache_creation_input_tokens} cache writes, "
            f"{usage.cache_read_input_tokens} cache reads, {usage.output_tokens} output; cost {price}")
    return BuildResult(slug=slug, course_dir=root, command=command, stopped_at=stopped, reason=reason,
                       validation=run.validation, repair=run.repair,
                       written=tuple(sorted(set(run.written))), calls=run.calls, usage=run.usage,
                       wave=run.wave, trace_id=tracer.trace_id, cost=None if run.unpriced else run.cost,
                       usage_by_stage=dict(sorted(run.usage_by_stage.items())),
                       unpriced=tuple(sorted(run.unpriced)), cost_by_stage=dict(sorted(run.cost_by_stage.items())),
                       retired=tuple(sorted(run.retired)))


def _resolve(command: str, target: Brief | str | os.PathLike[str], courses_dir: Path,
             slug: str | None) -> tuple[Brief | None, str]:
    if isinstance(target, Brief):
        return target, check_slug(slug or slugify(target.title))
    text = os.fspath(target)
    if text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text:
        brief = load_brief(text)
        return brief, check_slug(slug or slugify(brief.title))
    name = check_slug(text)
    manifest_path = course_dir(courses_dir, name) / "course.yaml"
    if not manifest_path.is_file():
        raise UsageError(f"there is no course '{name}' in {courses_dir}; start one with "
                         "`stay new BRIEF.yaml`")
    return load_manifest(manifest_path.parent).brief, name


def build_course(brief: Brief | str | os.PathLike[str], *, courses_dir: str | os.PathLike[str] = "courses",
                 yes: bool = False, backend: ModelClient | str | None = None,
                 prompts: Prompts | None = None, progress: Progress | None = None,
                 slug: str | None = None, on_node: Callable[[str], None] | None = None,
                 cache: bool | None = None, replay: bool = False, batch: bool = False) -> BuildResult:
    """Build a course from its brief, resuming from whatever is on disk.

    Stops at the design gate and the plan gate unless their approvals hold; with
    ``yes=True`` each gate is answered and recorded as ``auto-approved (--yes)``.
    ``backend`` is a ModelClient, or "offline" / "anthropic" (default: anthropic when
    ANTHROPIC_API_KEY is set). Answers are cached under <course>/.runs/cache/ (by default
    for every backend but offline); ``replay=True`` answers only from that cache;
    ``batch=True`` sends the wave's requests through one Message Batch (half price).
    ``on_node`` is called with each node's name after it completes (tests use it to
    crash a run after any node and show that a rerun finishes the same course).
    """
    return run_command("build", brief, courses_dir=courses_dir, yes=yes, backend=backend,
                       prompts=prompts, progress=progress, slug=slug, on_node=on_node, cache=cache,
                       replay=replay, batch=batch)


def _open(slug: str, courses_dir: str | os.PathLike[str]) -> CourseState:
    try:
        root = course_dir(courses_dir, slug)
        if not (root / "course.yaml").is_file():
            raise UsageError(f"there is no course '{slug}' in {os.fspath(courses_dir)}")
        return _open_course(root)
    except OSError as exc:
        raise EnvironmentProblem.from_os_error(exc) from None


def _open_course(root: Path) -> CourseState:
    """A course on disk, its manifest, curriculum and plans loaded, which checks every id
    and slug they hold before any path is built from them."""
    manifest = load_manifest(root)
    state = CourseState(root, course_graph(Curriculum(modules=[])), manifest.brief)
    curriculum_path = root / "curriculum.yaml"
    if curriculum_path.is_file():
        curriculum = load(curriculum_path, Curriculum)
        state.graph = course_graph(curriculum, plans_on_disk(root, curriculum))
    return state


def approve(slug: str, gate: str, *, courses_dir: str | os.PathLike[str] = "courses",
            decline: bool = False, note: str = "", by: str | None = None) -> None:
    """Answer a gate for a course: record approval (or a decline) with the hash of
    every file it covers, so a later edit to any of them retires the answer."""
    if gate not in ("design", "plan"):
        raise UsageError(f"unknown gate '{gate}'; the gates are design and plan")
    state = _open(slug, courses_dir)
    hint = functools.partial(command_hint, os.fspath(courses_dir))
    with _locked(state.root):
        if gate == "plan" and not decline:
            holds, why = state.approval("design")
            if not holds:
                raise PipelineError(f"approve the design gate first: {why}")
        unready = state.unready(gate)
        if unready and not decline:
            raise PipelineError(f"cannot approve the {gate} gate of '{slug}': {', '.join(unready)}; run "
                                f"{hint('build', slug)} first")
        who = by or _user()
        state.answer(gate, approved=not decline, by=who, note=note)
        state.project_statuses(load_manifest(state.root))


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


def status(slug: str, *, courses_dir: str | os.PathLike[str] = "courses") -> dict[str, Status]:
    """Every artefact's derived status, with the inputs that made a stale one stale."""
    return _open(slug, courses_dir).statuses()


def gate_status(slug: str, *, courses_dir: str | os.PathLike[str] = "courses") -> dict[str, str]:
    state = _open(slug, courses_dir)
    found = {}
    for gate in ("design", "plan"):
        holds, why = state.approval(gate)
        found[gate] = "approved" if holds else why
    return found


def adopt(slug: str, *, courses_dir: str | os.PathLike[str] = "courses") -> dict[str, Status]:
    """Rebuild the hash ledger from the files on disk, for a course written elsewhere:
    every existing artefact becomes current; no model is called."""
    root = course_dir(courses_dir, slug)
    if not (root / "course.yaml").is_file():
        raise UsageError(f"there is no course '{slug}' in {os.fspath(courses_dir)}")
    with _locked(root):
        _set_aside_damaged(root / GATES, "gates")
        state = _open_course(root)
        state.adopt()
        state.project_statuses(load_manifest(state.root))
        return state.statuses()


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    try:
        with CourseLock(root):
            yield
    except OSError as exc:
        raise EnvironmentProblem.from_os_error(exc) from None


def _set_aside_damaged(path: Path, section: str) -> None:
    """A damaged gates.json cannot be rebuilt (approvals are a person's): adopting moves it
    to .state/retired/ and the gates must be answered again."""
    try:
        read_ledger(path, section, path.parent.parent.name)
    except EnvironmentProblem:
        target = path.parent / "retired" / f"damaged-{path.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        print_progress(f"{path} was damaged: moved to {target}; answer the gates again")


__all__ = ["BuildResult", "adopt", "approve", "brief_from_data", "build_course", "gate_status",
           "run_command", "status"]
