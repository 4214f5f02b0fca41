"""Bounded repair of the leaf artefacts, routed on each defect's owner: a defect a gate approved is
reported, never repaired (docs/pipeline.md, "Repair")."""

from __future__ import annotations

from dataclasses import dataclass

from stay._display import plural
from stay.artefacts import Glossary
from stay.pipeline._layout import GLOSSARY, RunReader, course_report, norm_term
from stay.pipeline._run import Fixer, RepairReport, RepairRound, RunConfig, fix, review_stale
from stay.validate import Defect

STOP_NOTHING_REMAINS = "nothing remains"
STOP_NOTHING_ACTIONABLE = "nothing actionable"
STOP_NO_REDUCTION = "a round reduced no count"
STOP_ROUND_LIMIT = "round limit"


@dataclass(frozen=True)
class Router:
    """Where each defect goes this round: repair regenerates wave stages' files only, of the lesson the
    defect's path belongs to (for ``ret001`` the lesson that introduced the term)."""

    outputs: dict[tuple[str, str], str]
    """(stage, lesson id or '') -> the file that stage writes for it."""
    prefixes: dict[str, str]
    """lesson id -> modules/<module dir>/<lesson id>"""
    introduced_in: dict[str, str]
    """norm(term) -> the lesson the glossary says introduced it"""

    @classmethod
    def of(cls, config: RunConfig, reader: RunReader) -> Router:
        layout = reader.layout
        outputs: dict[tuple[str, str], str] = {}
        for stage in (s for s in config.stages if s.phase == "wave"):
            for path, place in layout.outputs(stage):
                outputs[(stage.name, place.id if place else "")] = path
        glossary = reader.load(GLOSSARY) if reader.exists(GLOSSARY) else Glossary(terms=[])
        assert isinstance(glossary, Glossary)
        return cls(outputs, {place.id: place.path("{lesson}") for place in layout.lessons()},
                   {norm_term(t.term): t.introduced_in for t in reversed(glossary.terms)})

    def route(self, defect: Defect) -> str | None:
        """The leaf artefact that must change to fix ``defect``, or None if repair may not."""
        if (defect.owner, "") in self.outputs:  # a course-scope wave stage: the capstone
            return self.outputs[(defect.owner, "")]
        if defect.code == "ret001":  # through the glossary, to the introducing lesson's quiz
            lesson = self.introduced_in.get(norm_term(defect.subject))
        else:
            lesson = next((i for i, prefix in self.prefixes.items() if defect.path.startswith(prefix + ".")),
                          None)
        return self.outputs.get((defect.owner, lesson or ""))


def repair_course(fixer: Fixer) -> RepairReport:
    """Repair rounds until one of the four stops; the last validation is left on the tally."""
    config, reader, ledger, tally, say = (fixer.config, fixer.again.reader, fixer.again.ledger, fixer.tally,
                                          fixer.report.say)
    report = tally.validation if tally.validation is not None else course_report(config.root, config.settings)
    limit = config.settings.repair_rounds
    rounds: list[RepairRound] = []
    kept: set[str] = set()
    while True:
        if not report.defects:
            stop = STOP_NOTHING_REMAINS
            break
        router = Router.of(config, reader)
        todo: dict[str, list[Defect]] = {}
        for defect in report.defects:
            target = router.route(defect)
            if target is not None:
                todo.setdefault(target, []).append(defect)
        told = bool(kept)
        for path in sorted(todo):
            if ledger.status(path).state == "edited":  # a person's bytes are never overwritten
                found = todo.pop(path)
                if path not in kept:  # once, each defect as the validator words it
                    say(f"repair: {path}: edited by hand, so repair leaves it: fix it, or regenerate it "
                        f"(delete it, then {config.hint('write', config.slug)}); the validator found:")
                    for defect in found:
                        say(f"  {defect.line()}")
                kept.add(path)
        if kept and not told:
            say(f"repair: the house style they are checked against (banned phrases, word lists, limits): "
                f"{config.settings.resolved_data_dir() / 'house-style.yaml'}")
        if not todo:
            stop = STOP_NOTHING_ACTIONABLE
            break
        if len(rounds) >= limit:
            stop = STOP_ROUND_LIMIT
            break
        before = sum(map(len, todo.values()))
        say(f"repair: round {len(rounds) + 1}: {plural(before, 'defect')} in {plural(len(todo), 'file')}")
        changes = [fix(fixer, path, todo[path]) for path in sorted(todo)]
        # a rewritten lesson's review is stale: reviewed again before the count, so a fixed
        # answer key is confirmed by the reviewer, not assumed
        review_stale(config, reader, fixer.again.model, fixer.report, fixer.again.writer)
        report = course_report(config.root, config.settings)  # the run's house style, as the validate node's
        router = Router.of(config, reader)
        routed: dict[str, list[Defect]] = {}
        for defect in report.defects:
            routed.setdefault(router.route(defect) or "", []).append(defect)
        after = sum(len(found) for target, found in routed.items() if target not in ("", *kept))
        # an answer whose file still holds what it was asked to fix is never served again
        fixer.again.model.reject_failed(routed, {change.path for change in changes if change is not None})
        rounds.append(RepairRound(before, after, tuple(sorted(todo)), tuple(c for c in changes if c is not None)))
        if after >= before:
            stop = STOP_NO_REDUCTION
            break
    tally.validation = report
    say(f"repair: stopped ({stop}); {report.fails} FAIL, {report.warns} WARN remain")
    return RepairReport(stop, tuple(rounds), report.defects, tuple(sorted(kept)))

