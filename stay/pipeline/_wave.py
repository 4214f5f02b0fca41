"""The wave: every lesson (content, exercises, quiz) and the capstone, in flight together.

``STAY_WAVE_CONCURRENCY`` caps lessons in flight; ``STAY_MODEL_CONCURRENCY`` caps
model calls in flight whatever the width. Each wave task writes only its own
files (atomically, as soon as it finishes, so a crash loses no finished file);
the shared files (course.yaml, glossary.yaml, the run log) are written once,
after the barrier.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from stay.artefacts import (
    Assessment,
    Audience,
    Curriculum,
    LessonPlan,
    Outcome,
    Outcomes,
    load,
    write,
)
from stay.pipeline._course_graph import lesson_paths
from stay.pipeline._run import Run
from stay.stages import capstone as capstone_stage
from stay.stages import content as content_stage
from stay.stages import exercises as exercises_stage
from stay.stages import quiz as quiz_stage


def _todo(run: Run, path: str) -> bool:
    status, _why = run.course.status(path)
    if status == "edited":
        run.wrote([path])
        run.say(f"  {path}: kept (edited by hand)")
    return status in ("missing", "stale")


def run_wave(run: Run) -> None:
    curriculum = load(run.root / "curriculum.yaml", Curriculum)
    outcomes = load(run.root / "outcomes.yaml", Outcomes)
    audience = load(run.root / "audience.yaml", Audience)
    plans = run.plans()
    by_term = {" ".join(t.term.casefold().split()): plans[lesson_id]
               for lesson_id, _d, _p in reversed(lesson_paths(curriculum)) if lesson_id in plans
               for t in plans[lesson_id].new_terms}
    jobs = []
    for lesson_id, _module_dir, prefix in lesson_paths(curriculum):
        plan = plans[lesson_id]
        own = [o for o in outcomes.outcomes if o.lesson == lesson_id]
        revisited = [by_term[key] for key in dict.fromkeys(" ".join(t.casefold().split())
                                                            for t in plan.revisits) if key in by_term]
        todo = [suffix for suffix in (".md", ".exercises.yaml", ".quiz.yaml") if _todo(run, prefix + suffix)]
        if todo:
            jobs.append((lesson_id, prefix, plan, own, revisited, todo))
    capstone = _todo(run, capstone_stage.PATH)
    total = len(jobs) + capstone
    if not total:
        run.say("wave: every lesson and the capstone are current")
        return
    run.say(f"wave: {len(jobs)} lessons{' and the capstone' if capstone else ''} "
            f"(at most {run.wave_width} lessons, {run.model_width} calls in flight)")
    done = 0

    def lesson(job: tuple[str, str, LessonPlan, list[Outcome], list[LessonPlan], list[str]]) -> None:
        nonlocal done
        lesson_id, prefix, plan, own, revisited, todo = job
        for suffix in todo:
            path = prefix + suffix
            if suffix == ".md":
                made: object = content_stage.artefact(run.ask(content_stage.request(
                    plan, own, audience, path, run.prompts)), plan, path)
            elif suffix == ".exercises.yaml":
                made = exercises_stage.artefact(run.ask(exercises_stage.request(
                    plan, own, audience, path, run.prompts)), path)
            else:
                made = quiz_stage.artefact(run.ask(quiz_stage.request(
                    plan, own, audience, revisited, path, run.prompts)), path)
            write(run.root / path, made)  # type: ignore[arg-type]
            run.wrote([path])
        with run.lock:
            done += 1
            count = done
        run.say(f"  [{count}/{total}] {lesson_id}: {', '.join(s.lstrip('.').split('.')[0] for s in todo)}")

    def project() -> None:
        nonlocal done
        made = capstone_stage.artefact(run.ask(capstone_stage.request(
            curriculum, outcomes, load(run.root / "assessment.yaml", Assessment),
            [plans[lesson_id] for lesson_id, _d, _p in lesson_paths(curriculum)], run.prompts)))
        write(run.root / capstone_stage.PATH, made)
        run.wrote([capstone_stage.PATH])
        with run.lock:
            done += 1
            count = done
        run.say(f"  [{count}/{total}] capstone: project.yaml")

    with ThreadPoolExecutor(max_workers=max(1, run.wave_width)) as pool:
        futures = [pool.submit(lesson, job) for job in jobs]
        if capstone:
            futures.append(pool.submit(project))
        for future in futures:  # gather: the barrier; the first failure is raised
            future.result()
