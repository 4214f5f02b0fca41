"""Judging sessions: both arms of a comparison judged together, interleaved, so nothing that
shifts a whole day (a judge updated behind its name, a cache of yesterday's verdicts) passes for
a difference between the arms (docs/evals.md, "Drift between sessions"). A session id hashes
what it judged and the judge; the judge's request cache is salted with it."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from stay.errors import UsageError

REJUDGED = ".rejudged"
"""What ``rejudge`` adds to a report's name: ``baseline.json`` -> ``baseline.rejudged.json``."""


def session_id(judge: str, arms: Mapping[str, Iterable[str]]) -> str:
    """The id of a session in which ``judge`` judged ``arms`` (label -> the builds, each
    named by a string that says what was judged): the same inputs, the same id."""
    canonical = json.dumps({"judge": judge, "arms": {label: sorted(set(builds)) for label, builds in arms.items()}},
                           sort_keys=True)
    return "s-" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def judge_name(backend: str, judge_model: str | None = None, settings: Any = None) -> str:
    """The name the judge ``make_judge`` makes would give itself, without making it (no key needed)."""
    from stay.scoring._core import OfflineJudge, model_judge_name
    from stay.scoring._judges import OFFLINE
    from stay.settings import Settings

    if backend == OFFLINE:
        return OfflineJudge().name
    return model_judge_name(judge_model or (settings or Settings.from_env()).model("judging"), backend)


def interleaved(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[tuple[int, str, int]]:
    """The order one session judges two runs' builds: (run, brief, build index), run 0 the
    baseline; per brief, per epoch, the baseline's build and then the candidate's, so a
    judge that drifts during the session drifts alike for both."""
    def by_epoch(report: Mapping[str, Any], brief: str) -> list[int]:
        builds = report["briefs"].get(brief, {}).get("builds", [])
        return sorted(range(len(builds)), key=lambda i: (builds[i].get("epoch", 0), i))

    order = []
    for brief in sorted(set(baseline["briefs"]) | set(candidate["briefs"])):
        runs = [by_epoch(baseline, brief), by_epoch(candidate, brief)]
        for k in range(max(map(len, runs))):
            order += [(run, brief, builds[k]) for run, builds in enumerate(runs) if k < len(builds)]
    return order


def course_dir(report_path: Path, build: Mapping[str, Any], where: str) -> Path:
    """The course directory a report's build names (``course``, relative to the report),
    checked: a report is untrusted, so the path must be a course directory reached without
    a symbolic link below the report's directory (an absolute path: without any)."""
    course = build.get("course")
    if not isinstance(course, str) or not course:
        raise UsageError(f"{report_path}: {where}.course: no course directory recorded (a report written before "
                         "reports recorded them); run the suite again, or rescore the courses with `stay evals score`")
    base = Path(os.path.realpath(report_path.parent))
    path = Path(course) if os.path.isabs(course) else base / course
    expected = Path(os.path.normpath(path))
    if Path(os.path.realpath(path)) != expected:
        raise UsageError(f"{report_path}: {where}.course: {course!r} goes through a symbolic link; name the course "
                         "directory itself")
    if not (expected / "course.yaml").is_file() or (expected / "course.yaml").is_symlink():
        raise UsageError(f"{report_path}: {where}.course: {course!r} is not a course directory (no course.yaml); "
                         "keep the courses where the suite built them, or rescore them with `stay evals score`")
    return expected


def relative_course(course: Path, report_path: Path) -> str:
    """How a report names a course directory: relative to the report's directory."""
    return os.path.relpath(os.path.realpath(course), os.path.realpath(report_path.parent))


def rejudged_path(path: Path, output_dir: Path | None) -> Path:
    stem = path.name.removesuffix(".json").removesuffix(REJUDGED)
    return (output_dir or path.parent) / f"{stem}{REJUDGED}.json"


def rejudge(baseline_path: Path, candidate_path: Path, *, backend: str, judge_model: str | None = None,
            output_dir: Path | None = None, client: Any = None, settings: Any = None,
            progress: Any = None) -> tuple[str, list[tuple[Path, dict[str, Any]]]]:
    """Judge both runs' saved courses in one session, interleaved, and write both reports
    anew (``<name>.rejudged.json`` beside each input, or in ``output_dir``): every build
    ``judged_in`` the one session, whose id is returned with the paths and documents."""
    from stay.models import Usage
    from stay.scoring._core import CourseOnDisk
    from stay.scoring._judges import make_judge
    from stay.scoring._report import build_entry, read_report, report, write_report
    from stay.scoring._scorers import default_scorers, score_course, scorer_versions
    from stay.settings import Settings

    chosen = settings or Settings.from_env()
    paths = (Path(baseline_path), Path(candidate_path))
    outputs = tuple(rejudged_path(path, output_dir) for path in paths)
    if outputs[0].resolve() == outputs[1].resolve():
        raise UsageError(f"{paths[0]} and {paths[1]} would both be rejudged into {outputs[0]}; rename one, or "
                         "give them different directories")
    documents = tuple(read_report(path) for path in paths)
    courses: dict[tuple[int, str, int], Any] = {}  # in the interleaved order
    arms: dict[str, list[str]] = {f"{side}:{document['label']}": [] for side, document
                                  in zip(("baseline", "candidate"), documents, strict=True)}
    for run, brief, index in interleaved(*documents):
        build = documents[run]["briefs"][brief]["builds"][index]
        where = f"briefs.{brief}.builds[{index}]"
        course = CourseOnDisk.load(course_dir(paths[run], build, where))
        if build.get("course_sha256") and course.sha256 != build["course_sha256"]:
            raise UsageError(f"{paths[run]}: {where}.course: {course.root} is not the course the report scored (its "
                             "files changed since: course_sha256 differs); rebuild it with the suite")
        courses[run, brief, index] = course
        list(arms.values())[run].append(f"{brief}/{build.get('epoch', 0)}/{course.sha256}")
    session = session_id(judge_name(backend, judge_model, chosen), arms)
    rescored: tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]] = ({}, {})
    versions: dict[str, int] = {}
    for (run, brief, index), course in courses.items():
        judge = make_judge(backend, course.root / ".runs" / "judge-cache", judge_model=judge_model, settings=chosen,
                           salt=session, client=client)
        scorers = default_scorers(judge, data_dir=chosen.resolved_data_dir())
        versions = scorer_versions(scorers)
        build = documents[run]["briefs"][brief]["builds"][index]
        fresh = build_entry(score_course(course, scorers), epoch=int(build.get("epoch", 0)), seed=None,
                            course_sha256=course.sha256, build_usage=Usage(), build_cost=0.0, built=False)
        rescored[run].setdefault(brief, []).append({**build, "scorers": fresh["scorers"], "judged_in": session,
                                                    "course": relative_course(course.root, outputs[run])})
        if progress is not None:
            progress(f"judged {course.root} ({('baseline', 'candidate')[run]}, session {session})")
    written = []
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
    for run, document in enumerate(documents):
        prompts = document.get("prompts") or {}
        new = report(label=document["label"], backend=document["backend"], prompts_dir=str(prompts.get("dir", "n/a")),
                     prompt_hashes=prompts.get("sha256") or {}, scorers=versions, builds=rescored[run],
                     epochs=int(document.get("epochs") or 0), seed=document.get("seed"),
                     quality=document.get("quality"), models=document.get("models") or {})
        write_report(outputs[run], new)
        written.append((outputs[run], new))
    return session, written


__all__ = ["course_dir", "interleaved", "judge_name", "rejudge", "relative_course", "session_id"]
