"""The course commands (status, approve, adopt, gate review) and the backend they run with."""

from __future__ import annotations

import functools
import getpass
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from stay._bounds import Damaged, read_stored
from stay._display import Table, html_block, markdown_block, plural
from stay._lock import CourseLock
from stay._paths import at, check_links, placed
from stay._words import command_hint, did_you_mean, no_course
from stay.artefacts import Curriculum, load
from stay.briefs import check_curriculum_size, course_dir
from stay.errors import CourseNotFound, EnvironmentProblem, PipelineError, StayError, UsageError
from stay.models import AnthropicBackend, ModelClient, OfflineBackend, backend_from
from stay.pipeline._graph import DERIVED, GATE_NAMES, GATES, artefact_graph, derived_files, earlier
from stay.pipeline._layout import GLOSSARY, defects_in
from stay.pipeline._state import (
    ANSWERED,
    GATES_FILE,
    RETIRED,
    CourseState,
    Sources,
    State,
    Status,
    Waiting,
    answered_copy,
    built_with,
    digest,
    load_manifest,
    not_kept,
    plans_on_disk,
    read_ledger,
    retired_place,
    stored_text,
    waiting_proposals,
)
from stay.pipeline._trace import Progress, default_progress, print_progress
from stay.settings import DEFAULT_MODELS, Settings
from stay.stages import REGISTRY, Prompts, Stage
from stay.validate import Defect, HouseData, packaged_data_dir


def default_backend(settings: Settings, progress: Progress | None = None) -> ModelClient:
    """The backend the settings choose, made by the one factory (``stay.models.backend_from``)."""
    return backend_from(settings, progress=progress or default_progress())


def with_backend_models(settings: Settings, backend: ModelClient) -> Settings:
    """``settings`` with each role no setting named playing the backend's own ``default_models``; resolved
    once, before the ledger, request cache, cost cap and run log read a role's model."""
    if isinstance(backend, (OfflineBackend, AnthropicBackend)) or backend.name == "anthropic":
        return settings
    unset = [role for role, model in settings.models.items() if model == DEFAULT_MODELS[role]]
    if not unset:  # read only when needed: a local server's defaults are asked of it
        return settings
    own: Mapping[str, str] = getattr(backend, "default_models", None) or {}
    unset = [role for role in unset if role in own]
    if not unset:
        return settings
    return settings.replace(models={**settings.models, **{role: own[role] for role in unset}})


def judged_by(settings: Settings, built: Mapping[str, Any]) -> tuple[Settings, str]:
    """The backend and models a command that reads a course without building it judges its files by: the
    ones its ledger records (``built``) for roles no setting names, unless the settings name another backend."""
    recorded, models = built.get("backend"), built.get("models")
    if isinstance(recorded, str) and isinstance(models, Mapping) and settings.backend in (None, recorded):
        kept = {role: model for role, model in models.items() if role in settings.models and isinstance(model, str)
                and model.strip() and settings.models[role] == DEFAULT_MODELS[role]}
        return settings.replace(models={**settings.models, **kept}), recorded
    if settings.chosen_backend in ("offline", "anthropic"):
        return settings, settings.chosen_backend
    return with_backend_models(settings, default_backend(settings)), settings.chosen_backend


def announce(settings: Settings, backend: ModelClient, say: Progress) -> None:
    """The one line that says which backend a run uses, and which model plays each role."""
    if isinstance(backend, OfflineBackend):
        say("backend: offline (ANTHROPIC_API_KEY is not set): deterministic template prose, no network"
            if not settings.api_key else "backend: offline (chosen): deterministic template prose, no network")
        return
    models = ", ".join(f"{role} {model}" for role, model in settings.models.items())
    where = getattr(backend, "endpoint", None)
    say(f"backend: {backend.name} ({models}){f' at {where}' if isinstance(where, str) else ''}")


SPENT = "stay_spent"
"""The attribute a failed or interrupted run's exception carries its ``Spent`` under."""


@contextmanager
def os_errors() -> Iterator[None]:
    """An OSError said as the machine's problem (``EnvironmentProblem``), with what a run paid before the disk
    stopped it; a stay error that is an OSError too (BriefNotFound) says its own fix."""
    try:
        yield
    except StayError:
        raise
    except OSError as exc:
        problem = EnvironmentProblem.from_os_error(exc)
        if hasattr(exc, SPENT):
            setattr(problem, SPENT, getattr(exc, SPENT))
        raise problem from None


@os_errors()
def open_course_named(slug: str, courses_dir: str | os.PathLike[str], settings: Settings | None = None,
          stages: Sequence[Stage] = REGISTRY) -> CourseState:
    root = course_dir(courses_dir, slug)
    if not (root / "course.yaml").is_file():
        raise CourseNotFound(no_course(slug, courses_dir), path=root)
    return _judged(root, settings or Settings.from_env(), stages)


def _judged(root: Path, settings: Settings, stages: Sequence[Stage]) -> CourseState:
    """The course at ``root``, judged by the backend and models its ledger records (``judged_by``)."""
    prompts = Prompts.load(settings.prompts_dir, tuple(stages), settings.data_dir)
    chosen, backend = judged_by(settings, built_with(root))
    if backend == "offline":  # an offline build reviews no lesson: its reviews are not missing, never made
        stages = tuple(stage for stage in stages if stage.phase != "review")
    return open_course(root, Sources(prompts, chosen.models, tuple(stages), backend), chosen, tuple(stages))


def open_course(root: Path, sources: Sources, settings: Settings, stages: tuple[Stage, ...]) -> CourseState:
    """A course on disk, loaded; its ids, slugs and links are checked before any path is built from them."""
    check_links(root)
    manifest = load_manifest(root)
    state = CourseState(root, artefact_graph(Curriculum(modules=[]), stages=stages), manifest.brief,
                        sources=sources, epoch=settings.source_date_epoch)
    curriculum_path = root / "curriculum.yaml"
    if curriculum_path.is_file():
        curriculum = load(curriculum_path, Curriculum)
        # before the graph: its edges, and so every command's work, grow faster than the curriculum
        try:  # the run's house style; the packaged one when its data directory cannot be read (the validator says so)
            house = HouseData.load(settings.resolved_data_dir())
        except StayError:
            house = HouseData.load(packaged_data_dir())
        check_curriculum_size(curriculum, house, os.fspath(curriculum_path))
        state.graph = artefact_graph(curriculum, plans_on_disk(root, curriculum), stages,
                                     derived_files(stages, lambda path: (root / path).is_file(),
                                                   lambda path: load(root / path)))
    return state


def approve(slug: str, gate: str, *, courses_dir: str | os.PathLike[str] = "courses",
            decline: bool = False, note: str = "", by: str | None = None,
            settings: Settings | None = None) -> Answered:
    """Answer a gate: record approval (or a decline) with the hash of every file it covers, so a later edit
    retires it. Returns the FAILs in the covered files: a person may approve them (``--yes`` may not)."""
    if gate not in GATE_NAMES:
        raise UsageError(f"unknown gate '{gate}'{did_you_mean(gate, GATE_NAMES)}; the gates are "
                         f"{' and '.join(GATE_NAMES)}")
    chosen = settings or Settings.from_env()
    state = open_course_named(slug, courses_dir, chosen)
    hint = functools.partial(command_hint, os.fspath(courses_dir))
    with os_errors(), CourseLock(state.root):
        state.hash_once()
        for before in () if decline else earlier(gate):
            holds, why = state.approval(before)
            if not holds:
                raise PipelineError(f"approve the {before} gate first: {why}")
        unready = state.unready(gate)
        if unready and not decline:
            raise PipelineError(f"cannot approve the {gate} gate of '{slug}': {', '.join(unready)}; run "
                                f"{hint('build', slug)} first")
        who = by or _user()
        refused = state.answer(gate, approved=not decline, by=who, note=note)
        state.project_statuses(load_manifest(state.root))
        return Answered(defects_in(state.root, chosen, state.covered(gate), fails_only=True), gate,
                        tuple(sorted(refused.items())))


class Answered(tuple[Defect, ...]):
    """What ``approve`` returns: the FAILs (a tuple, as it always was), and the covered files not kept, with why."""

    gate: str
    not_kept: tuple[tuple[str, str], ...]

    def __new__(cls, fails: Sequence[Defect], gate: str, not_kept: tuple[tuple[str, str], ...] = ()) -> Answered:
        answered = super().__new__(cls, fails)
        answered.gate, answered.not_kept = gate, not_kept
        return answered

    def lines(self) -> list[str]:
        """One line per file not kept (none when every file was)."""
        return [f"{path}: not kept for the {self.gate} gate's review page, so a later change to it shows no diff: "
                f"{why}" for path, why in self.not_kept]

    def __getnewargs__(self) -> tuple[tuple[Defect, ...], str, tuple[tuple[str, str], ...]]:
        # what __new__ takes, so pickle, copy and deepcopy make an Answered again
        return tuple(self), self.gate, self.not_kept

    def __repr__(self) -> str:  # the tuple's repr alone hid the gate and what was not kept
        return f"Answered(gate={self.gate!r}, fails={tuple(self)!r}, not_kept={self.not_kept!r})"


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


class Statuses(dict[str, Status]):
    """Every artefact's status by path (a plain dict, as ever), shown in a notebook as counts and a table;
    ``proposals`` lists each proposal ``revise --show`` left waiting."""

    proposals: tuple[str, ...] = ()

    def _display(self) -> tuple[str, list[Table], str]:
        counts = [plural(n, state, state) for state in get_args(State)
                  if (n := sum(s.state == state for s in self.values()))]
        head = f"{plural(len(self), 'artefact')}: {', '.join(counts) or 'none'}"
        rows = [(path, found.state, found.describe()) for path, found in self.items()]
        tables: list[Table] = [(("artefact", "status", "why"), rows, set())]
        if self.proposals:
            tables.append((("waiting proposal",), [(line,) for line in self.proposals], set()))
        return head, tables, ""

    def _repr_html_(self) -> str:
        return html_block("stay-status", *self._display())

    def _repr_markdown_(self) -> str:
        return markdown_block(*self._display())


def status(slug: str, *, courses_dir: str | os.PathLike[str] = "courses", settings: Settings | None = None,
           stages: Sequence[Stage] | None = None) -> Statuses:
    """Every artefact's derived status, with the inputs that made a stale one stale."""
    state = open_course_named(slug, courses_dir, settings, REGISTRY if stages is None else stages)
    state.hash_once()  # one read of the course: each file hashed once is one snapshot of it
    return _with_proposals(Statuses(state.statuses()), state, slug, courses_dir)


def _with_proposals(statuses: Statuses, state: CourseState, slug: str,
                    courses_dir: str | os.PathLike[str]) -> Statuses:
    hint = functools.partial(command_hint, os.fspath(courses_dir))
    statuses.proposals = tuple(waiting.line(slug, hint) for waiting in waiting_proposals(state))
    return statuses


def gate_status(slug: str, *, courses_dir: str | os.PathLike[str] = "courses",
                settings: Settings | None = None) -> dict[str, str]:
    state = open_course_named(slug, courses_dir, settings)
    approvals = {gate: state.approval(gate) for gate in GATE_NAMES}
    return {gate: "approved" if holds else why for gate, (holds, why) in approvals.items()}


def adopt(slug: str, *, courses_dir: str | os.PathLike[str] = "courses",
          settings: Settings | None = None) -> Statuses:
    """Rebuild the hash ledger from the files on disk: every existing artefact becomes current; no model call."""
    root = course_dir(courses_dir, slug)
    if not (root / "course.yaml").is_file():
        raise CourseNotFound(no_course(slug, courses_dir), path=root)
    with os_errors(), CourseLock(root):
        _set_aside_damaged(root / GATES_FILE, "gates")
        state = _judged(root, settings or Settings.from_env(), REGISTRY)
        state.hash_once()
        state.adopt()
        state.project_statuses(load_manifest(state.root))
        return _with_proposals(Statuses(state.statuses()), state, slug, courses_dir)


SET_ASIDE_LIMIT = 100
"""How many damaged copies of one file adopting keeps aside before it asks for room."""


def _set_aside_damaged(path: Path, section: str) -> None:
    """A damaged gates.json cannot be rebuilt (approvals are a person's): it moves to the first free place under
    .state/retired/ (an earlier copy holds a person's approvals too, so it is never overwritten)."""
    try:
        read_ledger(path, section)
    except EnvironmentProblem:
        target = _unused(path.parent.parent, path.name)
        with placed(path) as (src, old), placed(target) as (dst, new):  # never through a link planted meanwhile
            os.replace(old, new, **at(src, "src_dir_fd"), **at(dst, "dst_dir_fd"))
        print_progress(f"{path} was damaged: moved to {target}; answer the gates again")


def _unused(root: Path, name: str) -> Path:
    """The first free place under .state/retired/ for a damaged ``name``."""
    stem, dot, suffix = name.partition(".")
    for n in range(1, SET_ASIDE_LIMIT + 1):
        target = retired_place(root, f"damaged-{stem}{'' if n == 1 else f'-{n}'}{dot}{suffix}")
        if not os.path.lexists(target):
            return target
    raise EnvironmentProblem(f"{root / RETIRED} already keeps {SET_ASIDE_LIMIT} damaged copies of {name}: move "
                             "the ones you no longer need out of it and run the command again",
                             path=root / RETIRED) from None


@dataclass(frozen=True)
class Answer:
    """The last answer recorded at a gate."""

    approved: bool
    at: str
    by: str
    note: str


@dataclass(frozen=True)
class Change:
    """A covered file whose bytes differ from those the last answer recorded."""

    path: str
    was: str | None
    """Its digest at the last answer (None: the gate did not cover it then)."""
    now: str | None
    """Its digest now (None: it is gone)."""
    earlier: str | None = None
    """The text it had at the last answer, when a copy with that digest is kept."""
    kept_in: str | None = None
    """Where that copy is, relative to the course."""
    text: str | None = None
    """Its text now (None when it is gone, or there is nothing to compare it with)."""


@dataclass(frozen=True)
class GateReview:
    """The gate a course waits at (``gate`` None: every gate's approval holds)."""

    gate: str | None
    why: str = ""
    """Why its approval does not hold, as ``stay status`` says it."""
    missing: tuple[str, ...] = ()
    """Covered files not written yet: the course has not reached the gate."""
    covered: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    """The files of the gate's own phase, each a TARGET ``stay revise`` takes."""
    previous: Answer | None = None
    changes: tuple[Change, ...] = ()
    not_kept: tuple[tuple[str, str], ...] = ()
    """The covered files the last answer could not keep (so no diff), each with why."""
    proposals: tuple[Waiting, ...] = ()
    """The proposals ``stay revise --show`` left waiting, whatever the gate."""


def gate_review(slug: str, *, courses_dir: str | os.PathLike[str] = "courses",
                settings: Settings | None = None) -> GateReview:
    """The first gate, in course order, whose approval does not hold, and what its reviewer must judge."""
    state = open_course_named(slug, courses_dir, settings)
    state.hash_once()  # one snapshot of the course: each file hashed once
    for gate in GATES:
        holds, why = state.approval(gate.name)
        if holds:
            continue
        covered = tuple(state.covered(gate.name))
        graph = state.graph
        targets = tuple(path for path in covered if graph.nodes[path].get("phase") == gate.closes
                        and graph.nodes[path].get("stage") not in (None, DERIVED)
                        and path not in (GLOSSARY, "course.yaml"))
        missing = tuple(path for path in covered if state.current_hash(path) is None)
        entry = state.gates().get(gate.name)
        previous = changes = None
        if entry is not None:
            previous = Answer(bool(entry.get("approved")), str(entry.get("at", "")), str(entry.get("by", "")),
                              str(entry.get("note") or ""))
            recorded = entry.get("covered", {})
            changes = _changes(state, covered, recorded if isinstance(recorded, dict) else {})
        return GateReview(gate.name, why, missing, covered, targets, previous, tuple(changes or ()),
                          not_kept(entry, covered), waiting_proposals(state))
    return GateReview(None, proposals=waiting_proposals(state))


def _changes(state: CourseState, covered: tuple[str, ...], recorded: dict[str, object]) -> list[Change]:
    found = []
    # gates.json is read from disk: a recorded name that is not a file of this course's
    # graph (an absolute path, a "..") is never hashed, read or shown
    dropped = sorted(path for path in set(recorded) - set(covered) if path in state.graph)
    for path in [*covered, *dropped]:
        was = recorded.get(path)
        was = was if isinstance(was, str) else None
        now = state.current_hash(path)
        if was == now:
            continue
        kept = earlier = text = None
        blob = answered_copy(state.root, was) if was is not None else None
        if blob is not None:  # the bytes checked against their digest, used as read
            kept, earlier = f"{ANSWERED}/{was}", blob.decode("utf-8", "replace")
        elif was is not None:
            kept = _kept_copy(state.root, path, was)
            earlier = stored_text(state.root / kept) if kept is not None else None
        if earlier is not None:
            text = stored_text(state.root / path) if now is not None else ""
        found.append(Change(path, was, now, earlier, kept, text))
    return found


def _kept_copy(root: Path, path: str, wanted: str) -> str | None:
    """A copy of ``path`` under .state/retired/ whose bytes have the digest ``wanted``."""
    retired = root / RETIRED
    if not retired.is_dir() or retired.is_symlink():
        return None
    for run in sorted(retired.iterdir()):
        if run.is_symlink():  # never read through a link, even one that stays inside
            continue
        candidate = run / path
        if candidate.is_file() and not candidate.is_symlink():
            try:
                if digest(read_stored(candidate)) == wanted:
                    return candidate.relative_to(root).as_posix()
            except (Damaged, OSError):
                continue
    return None
