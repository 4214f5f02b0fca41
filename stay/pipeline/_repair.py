"""Bounded repair of the leaf artefacts: content, exercises, quiz and capstone.

Routing is on each defect's owner, never its path alone: the owner names the stage
that must fix it, the path only which lesson. A retrieval defect (ret001) is
resolved through the glossary to the lesson that introduced the term, and handed
to that lesson's quiz. A defect owned by a stage approved at a gate (audience,
curriculum, outcomes, assessment, plan) is reported and never repaired: silently
rewriting one would turn an approval into a signature on a document that has since
changed. Repair stops when nothing remains, nothing is actionable, a round reduced
no count, or after ``STAY_REPAIR_ROUNDS`` rounds (default 2), and says which.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stay.artefacts import (
    Artefact,
    Assessment,
    Audience,
    Curriculum,
    Glossary,
    Outcomes,
    load,
    write,
)
from stay.models import ModelRequest
from stay.pipeline._course_graph import lesson_paths
from stay.pipeline._run import Run
from stay.pipeline._wave import revisited_plans
from stay.stages import capstone as capstone_stage
from stay.stages import content as content_stage
from stay.stages import exercises as exercises_stage
from stay.stages import quiz as quiz_stage
from stay.validate import Defect, validate_course

LEAF_OWNERS = {"content": ".md", "exercises": ".exercises.yaml", "quiz": ".quiz.yaml",
               "capstone": "project.yaml"}
STOP_NOTHING_REMAINS = "nothing remains"
STOP_NOTHING_ACTIONABLE = "nothing actionable"
STOP_NO_REDUCTION = "a round reduced no count"
STOP_ROUND_LIMIT = "round limit"


@dataclass(frozen=True)
class RepairRound:
    actionable_before: int
    actionable_after: int
    regenerated: tuple[str, ...]


@dataclass(frozen=True)
class RepairReport:
    """Why repair stopped, what each round did, and what is left for a person."""

    stop: str
    rounds: tuple[RepairRound, ...] = ()
    unrepaired: tuple[Defect, ...] = field(default=())
    """Defects left at the end, gated owners' among them: reported, never repaired."""
    edited: tuple[str, ...] = ()
    """Files with defects that were edited by hand, so left as they are for a person."""


@dataclass(frozen=True)
class Router:
    """Where each defect goes, from the curriculum and glossary as they are this round."""

    prefixes: dict[str, str]
    """lesson id -> modules/<module dir>/<lesson id>"""
    introduced_in: dict[str, str]
    """norm(term) -> the lesson the glossary says introduced it"""

    @classmethod
    def of(cls, run: Run) -> Router:
        curriculum = load(run.root / "curriculum.yaml", Curriculum)
        glossary_path = run.root / "glossary.yaml"
        terms = load(glossary_path, Glossary).terms if glossary_path.is_file() else []
        return cls({lesson_id: prefix for lesson_id, _d, prefix in lesson_paths(curriculum)},
                   {_norm(t.term): t.introduced_in for t in reversed(terms)})

    def route(self, defect: Defect) -> str | None:
        """The leaf artefact that must change to fix ``defect``, or None if repair may not."""
        suffix = LEAF_OWNERS.get(defect.owner)
        if suffix is None:
            return None
        if defect.owner == "capstone":
            return capstone_stage.PATH
        if defect.code == "ret001":  # through the glossary, to the introducing lesson's quiz
            lesson = self.introduced_in.get(_norm(defect.subject))
        else:
            lesson = next((i for i, prefix in self.prefixes.items() if defect.path.startswith(prefix + ".")),
                          None)
        return self.prefixes[lesson] + suffix if lesson in self.prefixes else None


def _norm(term: str) -> str:
    return " ".join(term.casefold().split())


def repair_course(run: Run) -> RepairReport:
    report = run.validation if run.validation is not None else validate_course(run.root)
    limit = run.repair_rounds
    rounds: list[RepairRound] = []
    kept: set[str] = set()
    while True:
        if not report.defects:
            stop = STOP_NOTHING_REMAINS
            break
        router = Router.of(run)
        todo: dict[str, list[Defect]] = {}
        for defect in report.defects:
            target = router.route(defect)
            if target is not None:
                todo.setdefault(target, []).append(defect)
        for path in sorted(todo):
            if run.course.status(path).state == "edited":  # a person's bytes are never overwritten
                codes = ", ".join(sorted({d.code for d in todo.pop(path)}))
                kept.add(path)
                run.say(f"repair: {path} ({codes}): edited by hand: fix it, or regenerate it (delete it, "
                        f"then {run.hint('write', run.slug)})")
        if not todo:
            stop = STOP_NOTHING_ACTIONABLE
            break
        if len(rounds) >= limit:
            stop = STOP_ROUND_LIMIT
            break
        before = sum(map(len, todo.values()))
        run.say(f"repair: round {len(rounds) + 1}: {before} defects in {len(todo)} files")
        for path in sorted(todo):
            _regenerate(run, path, todo[path])
        report = validate_course(run.root)
        router = Router.of(run)
        after = sum(1 for d in report.defects if router.route(d) not in (None, *kept))
        rounds.append(RepairRound(before, after, tuple(sorted(todo))))
        if after >= before:
            stop = STOP_NO_REDUCTION
            break
    run.validation = report
    run.say(f"repair: stopped ({stop}); {report.fails} FAIL, {report.warns} WARN remain")
    return RepairReport(stop, tuple(rounds), report.defects, tuple(sorted(kept)))


def _regenerate(run: Run, path: str, defects: list[Defect]) -> None:
    """Ask the owning stage again, with the defects to fix attached to its inputs."""
    curriculum = load(run.root / "curriculum.yaml", Curriculum)
    outcomes = load(run.root / "outcomes.yaml", Outcomes)
    audience = load(run.root / "audience.yaml", Audience)
    plans = run.plans()
    notes = [f"{d.code} {d.path} {d.subject}: {d.message}" for d in defects]
    made: Artefact
    if path == capstone_stage.PATH:
        request = capstone_stage.request(curriculum, outcomes, load(run.root / "assessment.yaml", Assessment),
                                         [plans[i] for i, _d, _p in lesson_paths(curriculum)], run.prompts)
        made = run.produce(with_defects(request, notes), capstone_stage.artefact)
    else:
        lesson_id = next(i for i, _d, prefix in lesson_paths(curriculum) if path.startswith(prefix + "."))
        plan = plans[lesson_id]
        own = [o for o in outcomes.outcomes if o.lesson == lesson_id]
        if path.endswith(".md"):
            request = content_stage.request(plan, own, audience, path, run.prompts)
            made = run.produce(with_defects(request, notes),
                               lambda answer: content_stage.artefact(answer, plan, path))
        elif path.endswith(".exercises.yaml"):
            request = exercises_stage.request(plan, own, audience, path, run.prompts)
            made = run.produce(with_defects(request, notes),
                               lambda answer: exercises_stage.artefact(answer, path))
        else:
            request = quiz_stage.request(plan, own, audience, revisited_plans(plans, curriculum, plan),
                                         path, run.prompts)
            made = run.produce(with_defects(request, notes), lambda answer: quiz_stage.artefact(answer, path))
    write(run.root / path, made)
    run.wrote([path])


def with_defects(request: ModelRequest, notes: list[str]) -> ModelRequest:
    """The stage's request, with the validator's findings to fix appended."""
    inputs = {**request.inputs, "defects_to_fix": notes}
    user = request.user + "\n## defects_to_fix\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    return request.model_copy(update={"inputs": inputs, "user": user})
