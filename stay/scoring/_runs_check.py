"""What two run files must be before ``compare`` may test them: checks about what the numbers
mean, not their type (docs/evals.md, "Runs that cannot lie"). ``CHECKS`` is the registry; each
finding is one line naming the file, the field and the fix."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from stay.scoring._defaults import FAILURE_GAP
from stay.scoring._provenance import OFFLINE
from stay.scoring._scorers import JUDGE_FREE_NAMES

REFUSE, WARN, INVALID = "refuse", "warn", "invalid"
"""What a finding makes of the comparison: refused (exit 2), a warning, or an invalid run (exit 5)."""
Run = tuple[str, dict[str, Any]]
"""A run's name in messages (e.g. "baseline runs/a.json") and its report."""


@dataclass(frozen=True)
class Finding:
    check: str
    kind: str
    message: str
    allow: str | None = None
    """The ``--allow`` name that accepts this difference, when one can."""


@dataclass(frozen=True)
class Check:
    name: str
    kind: str
    run: Callable[[Run, Run], list[str]]
    """Both runs -> one message per problem found."""
    allow: str | None = None


def _builds(report: dict[str, Any]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    for brief, entry in sorted(report["briefs"].items()):
        for index, build in enumerate(entry["builds"]):
            yield brief, index, build


def _each(check: Callable[[Run], list[str]]) -> Callable[[Run, Run], list[str]]:
    """A check of one run, made a check of both (each run on its own)."""
    return lambda baseline, candidate: check(baseline) + check(candidate)


def duplicated_builds(run: Run) -> list[str]:
    name, report = run
    found = []
    seen: dict[tuple[str, Any], str] = {}
    shas: dict[tuple[Any, Any], str] = {}
    for brief, index, build in _builds(report):
        where = f"briefs.{brief}.builds[{index}]"
        key = (brief, build.get("epoch", 0))
        if key in seen:
            found.append(f"{name}: {where}: epoch {key[1]} of brief {brief} again (first at {seen[key]}); "
                         "keep one build per (brief, epoch): score each course directory once")
        seen.setdefault(key, where)
        # the same course twice is one counted twice only when its seed says so too: under two
        # seeds, or none recorded (a rescored course), it may be a generator that ignores the
        # seed (the offline backend without --stay-quality), which ``same_courses`` warns on
        sha = build.get("course_sha256")
        if sha and build.get("seed") is not None and (sha, build["seed"]) in shas:
            found.append(f"{name}: {where}.course_sha256: the same course and seed as {shas[sha, build['seed']]}; "
                         "a course counted twice shrinks the interval: score each course directory once")
        if sha:
            shas.setdefault((sha, build.get("seed")), where)
    return found


def same_courses(run: Run) -> list[str]:
    name, report = run
    repeated = sorted(brief for brief, entry in report["briefs"].items()
                      if len({b.get("course_sha256") for b in entry["builds"] if b.get("course_sha256")})
                      < sum(bool(b.get("course_sha256")) for b in entry["builds"]))
    if not repeated:
        return []
    return [f"{name}: briefs.*.builds.course_sha256: {len(repeated)} of {len(report['briefs'])} briefs have the same "
            f"course at two epochs ({', '.join(repeated[:3])}{', ...' if len(repeated) > 3 else ''}): a generator "
            "that ignores the seed, or a course scored twice; those epochs measure no build-to-build variance"]


def partial_run(run: Run) -> list[str]:
    """A brief with no builds at all is left to compare's own check (a scorer that scored
    nothing where the other run did: an invalid run, exit 5), as before this check."""
    name, report = run
    epochs = report.get("epochs")
    if epochs is None:  # an old report that does not say: nothing to hold its builds to
        return []
    return [f"{name}: briefs.{brief}.builds: {len(entry['builds'])} builds, but the run's epochs is {epochs}; "
            "an interrupted or partial run: run the suite again to completion"
            for brief, entry in sorted(report["briefs"].items()) if entry["builds"] and len(entry["builds"]) != epochs]


def _bad_score(score: object, failure: object) -> str | None:
    if score is None:  # a judge that failed scores nothing; an item that did not fail must score
        return None if failure is not None else "null, and the item records no judge failure"
    if isinstance(score, bool) or not isinstance(score, int | float):
        return f"{score!r} is not a number"
    if not math.isfinite(score):
        return f"{score} is not finite"
    if not 0 <= score <= 1:
        return f"{score} is outside [0, 1]"
    return None


def bad_scores(run: Run) -> list[str]:
    name, report = run
    found = []
    for brief, index, build in _builds(report):
        for scorer, result in sorted(build["scorers"].items()):
            for number, item in enumerate(result["items"]):
                why = _bad_score(item.get("score"), item.get("failure"))
                if why:
                    found.append(f"{name}: briefs.{brief}.builds[{index}].scorers.{scorer}.items[{number}].score: "
                                 f"{why}; a score is a number in [0, 1]: rescore the run (`stay evals score`)")
    return found


def seeded_elsewhere(run: Run) -> list[str]:
    """A build's seed is ``run/slug/epoch`` (``stay.suite.build_seed``): its slug and epoch
    must be the brief and epoch it is filed under."""
    name, report = run
    found = []
    for brief, index, build in _builds(report):
        seed = build.get("seed")
        if not isinstance(seed, str) or seed.count("/") < 2:
            continue  # no seed recorded (a rescored course), or not the suite's form
        _run, slug, epoch = seed.rsplit("/", 2)
        if slug != brief or epoch != str(build.get("epoch", 0)):
            found.append(f"{name}: briefs.{brief}.builds[{index}].seed: {seed!r} was seeded for brief {slug} epoch "
                         f"{epoch}, not brief {brief} epoch {build.get('epoch', 0)}: file each build under its own "
                         "brief, or run the suite again")
    return found


def judge_fields(run: Run) -> list[str]:
    """Each scorer's judge must be one the header names (``_report.judge_of``'s forms)."""
    name, report = run
    judge, model = report.get("judge"), report.get("judge_model")
    named = ({f"model:{m}" for m in str(model).split(", ")} if judge == "model" and model
             else {str(judge), *str(judge).split(", ")})  # one judge whose name has a comma, or several
    found = []
    for brief, index, build in _builds(report):
        for scorer, result in sorted(build["scorers"].items()):
            if scorer not in JUDGE_FREE_NAMES and result.get("judge") and result["judge"] not in named:
                found.append(f"{name}: briefs.{brief}.builds[{index}].scorers.{scorer}.judge: {result['judge']!r}, "
                             f"but the header says judge {judge!r}" + (f", judge_model {model!r}" if model else "")
                             + ": rescore the run with one judge (`stay evals score`)")
    return found


def models_differ(baseline: Run, candidate: Run) -> list[str]:
    before, after = baseline[1].get("models") or {}, candidate[1].get("models") or {}
    if not before or not after or before == after:
        return []
    roles = sorted(role for role in set(before) | set(after) if before.get(role) != after.get(role))
    return [f"{candidate[0]}: models: generation models differ from {baseline[0]} ("
            + ", ".join(f"{r} {before.get(r)} -> {after.get(r)}" for r in roles)
            + "); if that is what you are testing, pass --allow models"]


def _content(report: dict[str, Any]) -> object:
    """What a comparison reads of a run: per build its course and every item's score."""
    return sorted((brief, str(build.get("epoch", 0)), str(build.get("course_sha256")),
                   repr(sorted((s, [i.get("score") for i in r["items"]]) for s, r in build["scorers"].items())))
                  for brief, _index, build in _builds(report))


def identical_runs(baseline: Run, candidate: Run) -> list[str]:
    if _content(baseline[1]) != _content(candidate[1]):
        return []
    return [f"{candidate[0]}: briefs: the same builds and scores as {baseline[0]} (A against A): "
            "compare a run with a different candidate"]


def identical_prompts(baseline: Run, candidate: Run) -> list[str]:
    before = (baseline[1].get("prompts") or {}).get("sha256")
    after = (candidate[1].get("prompts") or {}).get("sha256")
    if not before or before != after:
        return []
    return [f"{candidate[0]}: prompts.sha256: built with the same prompt files as {baseline[0]}; a prompt change "
            "cannot show: build the candidate with --stay-prompts DIR"]


def _failed_share(report: dict[str, Any]) -> dict[str, tuple[int, int]]:
    counts: Counter[str] = Counter()
    items: Counter[str] = Counter()
    for _brief, _index, build in _builds(report):
        for scorer, result in build["scorers"].items():
            items[scorer] += len(result["items"])
            counts[scorer] += sum(i.get("failure") is not None for i in result["items"])
    return {s: (counts[s], items[s]) for s in items if items[s]}


def failure_rates_differ(baseline: Run, candidate: Run) -> list[str]:
    before, after = _failed_share(baseline[1]), _failed_share(candidate[1])
    found = []
    for scorer in sorted(set(before) & set(after)):
        (fb, nb), (fa, na) = before[scorer], after[scorer]
        if abs(fb / nb - fa / na) > FAILURE_GAP:
            found.append(f"{candidate[0]}: failures.{scorer}: {fa / na:.0%} of judge items failed against "
                         f"{fb / nb:.0%} in {baseline[0]}; the judge's failures are not the same in both runs, so "
                         "the means leave out different items: rescore the run with more failures")
    return found


def failed_builds(run: Run) -> list[str]:
    name, report = run
    return [f"{name}: briefs.{brief}.builds[{index}].failed: epoch {build.get('epoch', 0)} of brief {brief} failed "
            f"({build['failed'].get('error')}: {build['failed'].get('message')}); a run without its failed builds "
            "leans towards a pass: rebuild them (run the suite again: the builds that passed are reused), then "
            "compare"
            for brief, index, build in _builds(report) if isinstance(build.get("failed"), dict)]


def _knob(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def quality_knobs(run: Run) -> list[str]:
    """Offline builds record the ``--stay-quality`` knob they were made under; the header's
    ``quality`` is theirs only when they agree. Builds under two knobs measure a mix of two
    generators, and a header that says another knob than its builds' misnames them."""
    name, report = run
    knobs: dict[str, str] = {}  # knob -> the first build made under it
    recorded = unrecorded = 0
    for brief, index, build in _builds(report):
        if "quality" in build:
            knobs.setdefault(_knob(build["quality"]), f"briefs.{brief}.builds[{index}].quality")
            recorded += 1
        else:
            unrecorded += 1
    header = _knob(report.get("quality") or {})
    if len(knobs) > 1:
        (one, first), (other, second) = list(knobs.items())[:2]
        return [f"{name}: {second}: built under quality knob {other}, but {first} under {one}: a run's builds "
                "measure one generator: rebuild the run under one --stay-quality"]
    if recorded and not unrecorded and header not in knobs:  # then the header must be theirs
        (knob, where), = knobs.items()
        return [f"{name}: quality: the header says knob {header}, but its builds were made under {knob} ({where}): "
                "rebuild the run, or rescore it with `stay evals score`"]
    return []


def _judged_by_a_model(report: dict[str, Any]) -> bool:
    """A model judge can drift between sessions; the offline judge is a pure function of the
    course (and the simulated one of its inputs), so it judges alike on any day."""
    return report.get("judge") == "model" or any(
        str(result.get("judge", "")).startswith("model:") for _brief, _index, build in _builds(report)
        for name, result in build["scorers"].items() if name not in JUDGE_FREE_NAMES)


def _sessions(report: dict[str, Any], key: str) -> set[str | None]:
    # a failed build was never judged (``failed-builds`` makes its run invalid): it has no session
    return {build.get(key) if isinstance(build.get(key), str) else None for _brief, _index, build in _builds(report)
            if not isinstance(build.get("failed"), dict)}


def _in(sessions: set[str | None]) -> str:
    known = sorted(s for s in sessions if s is not None)
    unknown = "an unknown session (a report from before sessions were recorded)" if None in sessions else ""
    named = ("session " if len(known) == 1 else "sessions ") + ", ".join(known) if known else ""
    return " and ".join(part for part in (named, unknown) if part)


def _path(name: str) -> str:
    """The file in a run's name ("baseline runs/a.json"), quoted for a shell."""
    import shlex

    return shlex.quote(name.split(" ", 1)[-1])


def judged_apart(baseline: Run, candidate: Run) -> list[str]:
    """Two runs a model judged in different sessions (or in sessions unknown): a judge that
    shifted between the days shifts one whole run, which the test does not allow for."""
    if not (_judged_by_a_model(baseline[1]) or _judged_by_a_model(candidate[1])):
        return []
    before, after = _sessions(baseline[1], "judged_in"), _sessions(candidate[1], "judged_in")
    if len(before | after) == 1 and None not in before:
        return []
    return [f"{candidate[0]}: briefs.*.builds.judged_in: judged in {_in(after)}, {baseline[0]} in {_in(before)}: "
            "judged in different sessions (judge drift between days is not in the test, so it is not accounted "
            f"for): re-judge both in one session with `stay evals rejudge {_path(baseline[0])} "
            f"{_path(candidate[0])}`, or pass --allow sessions"]


def _builders(report: dict[str, Any]) -> set[str]:
    """The backends a run's builds record they were built by (``built_by``, from each
    course's run log); a build that records none is unknown and adds nothing (the header's
    ``backend`` is held fixed by ``compare`` itself)."""
    return {str(name) for _brief, _index, build in _builds(report) if not isinstance(build.get("failed"), dict)
            for name in build.get("built_by") or ()}


def built_by_other_backends(baseline: Run, candidate: Run) -> list[str]:
    """Two runs (or the builds of one) made by different backends: another provider's model
    writes another course whatever the prompts say, so a difference would be the provider's."""
    before, after = _builders(baseline[1]), _builders(candidate[1])
    if len(before | after) < 2:
        return []
    return [f"{candidate[0]}: briefs.*.builds.built_by: built by {' and '.join(sorted(after)) or 'unknown'}, "
            f"{baseline[0]} by {' and '.join(sorted(before)) or 'unknown'}: a difference would be the backends', "
            "not the prompts': build both runs with one backend (--stay-backend), or pass --allow backend"]


def built_apart(baseline: Run, candidate: Run) -> list[str]:
    """Two runs a model built in different sessions: a generator that shifted between the
    days shifts one whole run too. Warned on, not refused: rebuilding both arms costs the
    generation again, and a prompt change is rebuilt anyway."""
    if OFFLINE in (baseline[1].get("backend"), candidate[1].get("backend")):
        return []  # the offline backend (and the quality knob) is a pure function of its seed
    before, after = _sessions(baseline[1], "built_in"), _sessions(candidate[1], "built_in")
    if len(before | after) == 1 and None not in before:
        return []
    return [f"{candidate[0]}: briefs.*.builds.built_in: built in {_in(after)}, {baseline[0]} in {_in(before)}: "
            "generator drift between the sessions is not accounted for; build both arms in one session with "
            "`pytest evals --stay-prompts CANDIDATE_DIR --stay-baseline-prompts BASELINE_DIR`"]


CHECKS: tuple[Check, ...] = (
    Check("duplicated-builds", REFUSE, _each(duplicated_builds)),
    Check("partial-run", REFUSE, _each(partial_run)),
    Check("bad-scores", REFUSE, _each(bad_scores)),
    Check("seeded-elsewhere", REFUSE, _each(seeded_elsewhere)),
    Check("judge-fields", REFUSE, _each(judge_fields)),
    Check("models", REFUSE, models_differ, allow="models"),
    Check("quality-knobs", REFUSE, _each(quality_knobs)),
    Check("failed-builds", INVALID, _each(failed_builds)),
    Check("sessions", REFUSE, judged_apart, allow="sessions"),
    Check("backend", REFUSE, built_by_other_backends, allow="backend"),
    Check("same-courses", WARN, _each(same_courses)),
    Check("identical-runs", WARN, identical_runs),
    Check("identical-prompts", WARN, identical_prompts),
    Check("failure-rates", WARN, failure_rates_differ),
    Check("built-apart", WARN, built_apart),
)


def run_checks(baseline: Run, candidate: Run) -> list[Finding]:
    """Every check's findings on the two runs, in the registry's order."""
    return [Finding(check.name, check.kind, message, check.allow)
            for check in CHECKS for message in check.run(baseline, candidate)]


__all__ = ["CHECKS", "INVALID", "REFUSE", "WARN", "Check", "Finding", "run_checks"]
