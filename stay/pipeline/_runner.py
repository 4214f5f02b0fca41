"""The runner: walks the pipeline graph from where a command joins it.

``build_course`` and the other entry points load nothing but the slug and the
brief into the run; the course is on disk, and every node reads what it needs
from there, so a run resumed days later never replays stale state.

Here: a command's run checked and prepared (the target, the course, the backend, the
lock). Beside it, so each reads in one sitting: the walk of the started run through the
nodes (``stay.pipeline._execute``) and which backend it uses (``stay.pipeline._backend_choice``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from stay._lock import CourseLock
from stay._words import command_hint, no_course
from stay.artefacts import Brief
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
from stay.errors import CourseNotFound, EnvironmentProblem, StayError, UsageError
from stay.models import (
    AnthropicBackend,
    CachedBackend,
    ModelClient,
    OfflineBackend,
    RequestCache,
    can_screen,
    prices_of,
)
from stay.pipeline._backend_choice import announce, default_backend, with_backend_models
from stay.pipeline._commands import open_course, open_course_named
from stay.pipeline._dag import Dag
from stay.pipeline._execute import _walk
from stay.pipeline._gateway import cost_cap
from stay.pipeline._graph import CommandDecl, assemble, checked, declare
from stay.pipeline._keep import keep_proposals
from stay.pipeline._ledger import STATE, Sources
from stay.pipeline._progress import Progress, default_progress
from stay.pipeline._result import SPENT, BuildResult
from stay.pipeline._run import BatchPlan, Run, RunConfig
from stay.pipeline._run_log import next_run_number
from stay.pipeline._state import load_manifest
from stay.pipeline._walk import route
from stay.settings import BackendName, Settings
from stay.stages import REGISTRY, Prompts, Stage
from stay.stages.capstone import RUBRIC_LEVELS

Command = Literal["new", "build", "plan", "write", "repair", "revise"]


def run_command(command: Command, target: Brief | str | os.PathLike[str], *,
                courses_dir: str | os.PathLike[str] = "courses", yes: bool = False,
                settings: Settings | None = None, backend: ModelClient | BackendName | None = None,
                prompts_dir: str | os.PathLike[str] | None = None, cache: bool | None = None,
                progress: Progress | None = None, slug: str | None = None,
                on_node: Callable[[str], None] | None = None, replay: bool = False, batch: bool = False,
                stages: Sequence[Stage] | None = None, revisions: Mapping[str, str] | None = None,
                force: bool = False, screen: bool = True, show: bool = False, review: bool = True) -> BuildResult:
    """Run one command. ``target`` is a Brief, a brief file, or (plan, write, repair,
    build of an existing course) a course slug. The rest as for ``build_course``;
    ``revisions``, ``force`` and ``show`` are ``revise``'s."""
    chosen = (settings or Settings.from_env()).replace(
        backend=backend if isinstance(backend, str) else None,
        prompts_dir=Path(prompts_dir) if prompts_dir is not None else None, cache=cache)
    client = backend if isinstance(backend, ModelClient) else None
    try:
        return _run_command(command, target, courses_dir=courses_dir, yes=yes, settings=chosen, client=client,
                            progress=progress or default_progress(), slug=slug, on_node=on_node, replay=replay,
                            batch=batch, stages=tuple(REGISTRY if stages is None else stages),
                            revisions=dict(revisions or {}), force=force, screen=screen, show=show, review=review)
    except StayError:  # a BriefNotFound is an OSError too, and already says what to do
        raise
    except OSError as exc:
        problem = EnvironmentProblem.from_os_error(exc)
        if hasattr(exc, SPENT):  # what the run paid before the disk stopped it, said as for any failure
            setattr(problem, SPENT, getattr(exc, SPENT))
        raise problem from None


def _house_limits(settings: Settings) -> DurationLimits:
    """The run's house style: its duration limits, after checking that its rubric levels
    are the ones the capstone's answer schema asks for (that schema is built once, from
    the packaged house style; a data directory with other levels would have every
    capstone fail prj006 after it was paid for)."""
    from stay.validate import HouseData

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


def _run_command(command: Command, target: Brief | str | os.PathLike[str], *, courses_dir: str | os.PathLike[str],
                 yes: bool, settings: Settings, client: ModelClient | None, progress: Progress,
                 slug: str | None, on_node: Callable[[str], None] | None, replay: bool, batch: bool,
                 stages: tuple[Stage, ...], revisions: dict[str, str], force: bool, screen: bool,
                 show: bool = False, review: bool = True) -> BuildResult:
    say = progress
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
                           revisions=revisions, force=force, screen=screen, show=show,
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
    """The run's stages and, when they review no lesson, why: the offline backend cannot
    read prose, so it never reviews (and never reports a pass it did not make), and
    ``--no-review`` turns the review off. Then the review stage is not one of the run's."""
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
    file is given the reviewer's thread on it so far (``stay.pipeline._thread``).
    """
    from stay.pipeline._revise import declined_note, resolve_targets

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


__all__ = ["BuildResult", "build_course", "revise", "run_command"]
