"""What a gate page shows a reviewer: the course as it stands, not its file names.

The design gate shows the curriculum as a table against the audience's time budget,
every outcome with its Bloom level, verb and evidence, the assessment strategy and the
capstone's outcomes; the plan gate shows each lesson's sections, new terms and minutes.
Both list the defects the validator still finds in the files the gate covers.

Every value here is a model's text, so every value goes through ``markdown_text`` (or
``markdown_table``, which uses it): whitespace collapsed, HTML and inline markup
escaped, ``|`` included, so a title cannot end a table cell, open a link or start a
block. A value that opens a list item or ends a heading has its block markup escaped
too (``_lead``, ``_heading``), so a leading ``-`` or ``1.``, or a trailing ``#``, stays
text. Pure: the same artefacts give the same lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from stay._display import markdown_table, markdown_text, plural
from stay.artefacts import Assessment, Audience, Curriculum, LessonPlan, Outcomes
from stay.validate import Defect, Severity

LISTED = 10
"""Defects a gate page (and a gate's refusal) lists one a line; the rest are counted.
Enough to see what kind of trouble a file is in, few enough to read in a terminal."""

_BLOCK_START = re.compile(r"^(\d{1,9}(?=[.)])|(?=[#+=-]))")
"""Where a line would open a block: before a list, heading or rule marker, or after an
ordered list's number (whose ``.`` or ``)`` is then escaped)."""


def _lead(value: object) -> str:
    """Text that opens a list item: inline markup escaped, and its block marker too."""
    return _BLOCK_START.sub(lambda match: match.group(1) + "\\", markdown_text(value), count=1)


def _heading(value: object) -> str:
    """Text inside a heading: a ``#`` in it could close the heading, so each is escaped."""
    return markdown_text(value).replace("#", "\\#")


def time_lines(curriculum: Curriculum, audience: Audience | None) -> list[str]:
    """How big the course is, against the audience's budget when it is known."""
    total = sum(lesson.minutes for module in curriculum.modules for lesson in module.lessons)
    lessons = sum(len(module.lessons) for module in curriculum.modules)
    said = f"{plural(len(curriculum.modules), 'module')}, {plural(lessons, 'lesson')}, {total} minutes"
    if audience is not None:
        budget = audience.time_budget_minutes
        said += f" against a budget of {budget} ({round(100 * total / budget)}%)"
    return [said + "."]


def curriculum_lines(curriculum: Curriculum, audience: Audience | None) -> list[str]:
    """The curriculum as one table: a module's id and title on its first lesson's row."""
    rows = [(f"{module.id} {module.title}" if index == 0 else "", lesson.id, lesson.title, lesson.minutes)
            for module in curriculum.modules for index, lesson in enumerate(module.lessons)]
    lines = ["## Curriculum", "", *time_lines(curriculum, audience), ""]
    return lines + markdown_table(("Module", "Lesson", "Title", "Minutes"), rows, numeric={3}).splitlines()


def outcome_lines(outcomes: Outcomes, assessment: Assessment | None) -> list[str]:
    """Every outcome with its level, verb and (once assessed) the methods that evidence it."""
    methods = {evidence.outcome: evidence.methods for evidence in assessment.evidence} if assessment else {}
    lines = ["## Outcomes", ""]
    for outcome in outcomes.outcomes:
        evidence = methods.get(outcome.id)
        said = f"; evidence: {', '.join(evidence)}" if evidence else ""
        lines.append(f"- {_lead(outcome.id)} ({markdown_text(outcome.bloom)}, verb "
                     f"{markdown_text(outcome.verb)}{said}): {markdown_text(outcome.text)}")
    return lines if outcomes.outcomes else [*lines, "No outcomes."]


def capstone_outcomes(assessment: Assessment) -> list[str]:
    """The outcomes the capstone gathers evidence of, in the assessment's order."""
    return [evidence.outcome for evidence in assessment.evidence if "capstone" in evidence.methods]


def assessment_lines(assessment: Assessment, outcomes: Outcomes | None) -> list[str]:
    """The strategy, then the outcomes the capstone gathers evidence of."""
    texts = {outcome.id: outcome.text for outcome in outcomes.outcomes} if outcomes else {}
    capstone = capstone_outcomes(assessment)
    lines = ["## Assessment", "", f"Strategy: {markdown_text(assessment.strategy)}", "",
             f"Capstone outcomes ({len(capstone)}):", ""]
    lines += [f"- {_lead(outcome)}" + (f": {markdown_text(texts[outcome])}" if outcome in texts else "")
              for outcome in capstone] or ["- none: no outcome names the capstone as its evidence"]
    return lines


def plan_lines(curriculum: Curriculum, plans: Mapping[str, LessonPlan]) -> list[str]:
    """Each lesson's plan: its minutes, its sections as a table, and its new terms."""
    lines = ["## Lesson plans"]
    for module in curriculum.modules:
        for lesson in module.lessons:
            plan = plans.get(lesson.id)
            lines += ["", f"### {_heading(lesson.id)}: {_heading(plan.title if plan else lesson.title)}", ""]
            if plan is None:
                lines.append("Not planned yet.")
                continue
            lines += [f"{plan.minutes} minutes; outcomes: {markdown_text(', '.join(plan.outcomes)) or 'none'}.", ""]
            lines += markdown_table(("Section", "Kind", "Minutes"),
                                    [(s.heading, s.kind, s.minutes) for s in plan.sections], numeric={2}).splitlines()
            lines += ["", "New terms:" if plan.new_terms else "New terms: none."]
            lines += [f"- {_lead(term.term)}: {markdown_text(term.definition)}" for term in plan.new_terms]
    return lines


def defect_lines(defects: Sequence[Defect], *, refused: bool) -> list[str]:
    """What the validator still finds in the gate's files, FAILs first, bounded;
    ``refused``: a FAIL no person has signed, so ``--yes`` will not approve the gate."""
    fails = sum(defect.severity == Severity.FAIL for defect in defects)
    lines = ["## Defects", ""]
    if not defects:
        return [*lines, "The validator finds no defect in the files this gate covers."]
    lines += [f"{fails} FAIL, {len(defects) - fails} WARN in the files this gate covers"
              + (" (`--yes` does not approve the gate while one no person has signed remains):" if refused
                 else ":"), ""]
    return lines + [f"- {markdown_text(line)}" for line in bounded(defects)]


def bounded(defects: Sequence[Defect]) -> list[str]:
    """One line per defect, FAILs first, at most ``LISTED``, then how many more."""
    ordered = sorted(defects, key=lambda defect: defect.severity != Severity.FAIL)  # stable: report order kept
    lines = [defect.line() for defect in ordered[:LISTED]]
    if len(ordered) > LISTED:
        lines.append(f"and {len(ordered) - LISTED} more")
    return lines


@dataclass(frozen=True)
class GateView:
    """What a gate page shows, as the course holds it now (None while not written)."""

    curriculum: Curriculum | None
    audience: Audience | None
    outcomes: Outcomes | None
    assessment: Assessment | None
    plans: Callable[[], Mapping[str, LessonPlan]]
    """Every plan on disk; a call, so a page that shows none reads none."""


def design_page(view: GateView) -> list[str]:
    """The design gate: the curriculum against the time budget, the outcomes, the assessment."""
    lines: list[str] = []
    if view.curriculum is not None:
        lines += [*curriculum_lines(view.curriculum, view.audience), ""]
    if view.outcomes is not None:
        lines += [*outcome_lines(view.outcomes, view.assessment), ""]
    if view.assessment is not None:
        lines += [*assessment_lines(view.assessment, view.outcomes), ""]
    return lines


def plan_page(view: GateView) -> list[str]:
    """The plan gate: the course's size against the budget, and every lesson's plan."""
    if view.curriculum is None:
        return []
    return ["## Time", "", *time_lines(view.curriculum, view.audience), "",
            *plan_lines(view.curriculum, view.plans()), ""]
