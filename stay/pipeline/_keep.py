"""The two ends of ``stay revise --show``: what a shown run keeps and prints, and
``--keep``, which writes a kept proposal as a revise would, with no model call; and
what writing revised files did, which a revise and a keep both say (``revised_reason``).

The proposals themselves, and the reviewer's thread they belong to, are ``_thread``'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence

from stay._lock import CourseLock
from stay._words import command_hint
from stay.errors import EnvironmentProblem, PipelineError, UsageError
from stay.models import Usage
from stay.pipeline._commands import open_course_named
from stay.pipeline._gate_decl import GATE_NAMES
from stay.pipeline._ledger import RETIRED, same_bytes
from stay.pipeline._progress import Progress
from stay.pipeline._result import BuildResult
from stay.pipeline._retire_copy import keep_edited
from stay.pipeline._revise import resolve_targets
from stay.pipeline._run import Run
from stay.pipeline._run_log import log_run, next_run_number
from stay.pipeline._state import CourseState, load_manifest
from stay.pipeline._thread import (
    Proposal,
    bounded,
    current_text,
    diff_of,
    drop_proposal,
    kept_notes,
    note_sha,
    open_proposal,
    read_proposal,
    recorded_thread,
    write_proposal,
)
from stay.settings import Settings
from stay.stages import Stage


def shown(run: Run) -> tuple[str, str]:
    """After a ``--show`` walk: each target's proposal kept (the open one it replaces set
    aside in it), and the diff of every target's proposal with what to do next."""
    config, course, proposed = run.config, run.course, run.walk.proposed or {}
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
    """Write each target's shown proposal as ``revise`` would have: the ledger records the
    note and the thread, dependents go stale, a gated file's approval is retired. Refused,
    before anything is written, for a target with no proposal or a stale one."""
    from stay.pipeline._runner import _pipeline

    state = open_course_named(slug, courses_dir, settings, stages)
    paths = resolve_targets(state, list(targets), {stage.name for stage in stages})
    root, courses_arg = state.root, os.fspath(courses_dir)
    # the approvals a revision of each phase needs, as revise's guard node declares them
    by_phase = next(attrs["requires_by_phase"] for _name, attrs in _pipeline(stages).nodes(data=True)
                    if attrs.get("requires_by_phase"))
    lock = CourseLock(root)
    lock.acquire()
    try:
        kept = {path: _keepable(state, path, slug, courses_arg, force) for path in paths}
        for path in paths:
            phase = state.graph.nodes[path]["phase"]
            for gate in by_phase[phase]:
                holds, why = state.approval(gate)
                if not holds:
                    raise PipelineError(f"keeping the proposal for {path} (a {phase} file) needs the {gate} "
                                        f"approval to hold: {why}; run "
                                        f"{command_hint(courses_arg, 'approve', slug, gate)} first")
        keep_edited(state, paths, next_run_number(root), progress)  # forced: kept first, as a revise keeps them
        texts = {path: proposal.text for path, proposal in kept.items()}
        written = [path for path in paths if not same_bytes(root / path, texts[path])]
        notes = {path: proposal.note for path, proposal in kept.items()}
        earlier = {path: kept_notes(state, path) + list(proposal.set_aside) for path, proposal in kept.items()}
        threads = {path: recorded_thread(earlier[path], notes[path]) for path in paths if earlier[path]}
        try:
            state.write(texts, revisions=notes, threads=threads)
            state.checkpoint()
        except OSError as exc:
            raise EnvironmentProblem.from_os_error(exc) from None
        for path in paths:
            drop_proposal(root, path)
            progress(f"  {path}: kept the proposal shown with note {note_sha(notes[path])}")
        state.project_statuses(load_manifest(root))
        log_run(root, "revise --keep", "no model call", written, None, revised=notes)
        reason = revised_reason(state, sorted(paths), lambda *words: command_hint(courses_arg, *words), slug,
                                written)
    finally:
        lock.release()
    return BuildResult(slug=slug, course_dir=root, command="revise", stopped_at=None, reason=reason,
                       validation=None, repair=None, written=tuple(sorted(written)), calls=0, usage=Usage())


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
    """What writing the ``revised`` files did (a revise, or a kept proposal), and what next:
    a file whose bytes did not change (not in ``written``) is said to be unchanged."""
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
        said += f"; {len(stale)} file{'s' if len(stale) > 1 else ''} now stale"
    if retired or stale:
        said += f": run {hint('build', slug)} to regenerate and review"
    return said
