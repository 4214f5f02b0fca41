"""Bounded repair of the leaf artefacts: content, exercises, quiz and capstone.

It never touches an artefact approved at a gate: silently rewriting one would turn
an approval into a signature on a document that has since changed. Routing is on
each defect's owner; a retrieval defect (ret001) goes to the quiz of the lesson
that introduced the term, which is the path the defect already names.
"""

from __future__ import annotations

import os
from typing import Any

from stay.artefacts import (
    Assessment,
    Audience,
    Curriculum,
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
from stay.validate import Defect, validate_course

LEAF_OWNERS = ("content", "exercises", "quiz", "capstone")


def _actionable(defects: tuple[Defect, ...]) -> dict[str, list[Defect]]:
    """path -> its defects, for leaf owners only."""
    found: dict[str, list[Defect]] = {}
    for defect in defects:
        if defect.owner in LEAF_OWNERS and defect.code not in ("les001", "exe001", "qz001", "prj001"):
            found.setdefault(defect.path, []).append(defect)
    return found


def repair_course(run: Run) -> dict[str, Any]:
    """Repair rounds until nothing remains, nothing is actionable, a round reduced no
    count, or ``STAY_REPAIR_ROUNDS`` rounds ran. Returns a report naming the stop."""
    report = run.validation if run.validation is not None else validate_course(run.root)
    limit = int(os.environ.get("STAY_REPAIR_ROUNDS", run.repair_rounds))
    rounds: list[dict[str, int]] = []
    while True:
        if not report.defects:
            stop = "nothing remains"
            break
        todo = _actionable(report.defects)
        if not todo:
            stop = "nothing actionable"
            break
        if len(rounds) >= limit:
            stop = f"round limit ({limit})"
            break
        before = len(report.defects)
        run.say(f"repair: round {len(rounds) + 1}, {sum(map(len, todo.values()))} defects in "
                f"{len(todo)} files")
        for path in sorted(todo):
            _regenerate(run, path, todo[path])
        report = validate_course(run.root)
        rounds.append({"before": before, "after": len(report.defects)})
        if len(report.defects) >= before:
            stop = "a round reduced no count"
            break
    run.validation = report
    run.say(f"repair: stopped ({stop}); {report.fails} FAIL, {report.warns} WARN remain")
    return {"stop": stop, "rounds": rounds, "remaining": len(report.defects)}


def _regenerate(run: Run, path: str, defects: list[Defect]) -> None:
    """Ask the owning stage again, with the defects attached to its inputs."""
    curriculum = load(run.root / "curriculum.yaml", Curriculum)
    outcomes = load(run.root / "outcomes.yaml", Outcomes)
    audience = load(run.root / "audience.yaml", Audience)
    plans = run.plans()
    notes = [f"{d.code} {d.subject}: {d.message}" for d in defects]
    if path == capstone_stage.PATH:
        request = capstone_stage.request(curriculum, outcomes, load(run.root / "assessment.yaml", Assessment),
                                         [plans[i] for i, _d, _p in lesson_paths(curriculum)], run.prompts)
        made: object = capstone_stage.artefact(run.ask(_with_defects(request, notes)))
    else:
        lesson_id = next((i for i, _d, prefix in lesson_paths(curriculum) if path.startswith(prefix + ".")),
                         None)
        if lesson_id is None or lesson_id not in plans:
            return
        plan = plans[lesson_id]
        own = [o for o in outcomes.outcomes if o.lesson == lesson_id]
        if path.endswith(".md"):
            request = content_stage.request(plan, own, audience, path, run.prompts)
            made = content_stage.artefact(run.ask(_with_defects(request, notes)), plan, path)
        elif path.endswith(".exercises.yaml"):
            request = exercises_stage.request(plan, own, audience, path, run.prompts)
            made = exercises_stage.artefact(run.ask(_with_defects(request, notes)), path)
        elif path.endswith(".quiz.yaml"):
            request = quiz_stage.request(plan, own, audience, [], path, run.prompts)
            made = quiz_stage.artefact(run.ask(_with_defects(request, notes)), path)
        else:
            return
    write(run.root / path, made)  # type: ignore[arg-type]
    run.wrote([path])


def _with_defects(request: Any, notes: list[str]) -> Any:
    inputs = {**request.inputs, "defects_to_fix": notes}
    user = request.user + "\n## defects_to_fix\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    return request.model_copy(update={"inputs": inputs, "user": user})
