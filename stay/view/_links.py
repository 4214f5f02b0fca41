"""Cross-references between the pages: which page and fragment each id lives at, and
the outcomes map. An id that names nothing on the site gets no link (the page says
it is unknown), so every link the site contains resolves."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from stay.view._load import CourseView

_SAFE_FRAGMENT = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,79}")


def fragment(identifier: str) -> str:
    """An HTML id for any string read from disk: itself when it is a plain id (as every
    id of the contract is), else a stable hash of it."""
    if _SAFE_FRAGMENT.fullmatch(identifier):
        return identifier
    return "id-" + hashlib.sha256(identifier.encode("utf-8")).hexdigest()[:12]


def term_fragments(terms: Iterable[str]) -> dict[str, str]:
    """term -> ``term-<words>``, unique, in the order given."""
    found: dict[str, str] = {}
    used: set[str] = set()
    for term in terms:
        if term in found:
            continue
        base = "term-" + ("-".join(re.findall(r"[a-z0-9]+", term.lower())) or "x")
        anchor, n = base, 2
        while anchor in used:
            anchor, n = f"{base}-{n}", n + 1
        used.add(anchor)
        found[term] = anchor
    return found


@dataclass(frozen=True)
class Ref:
    label: str
    href: str | None


@dataclass
class OutcomeRow:
    id: str
    lesson: str
    bloom: str
    verb: str
    text: str
    lesson_ref: Ref
    methods: list[str] = field(default_factory=list)
    sections: list[Ref] = field(default_factory=list)
    exercises: list[Ref] = field(default_factory=list)
    quiz: list[Ref] = field(default_factory=list)
    rubric: list[Ref] = field(default_factory=list)

    @property
    def gaps(self) -> list[str]:
        gaps = []
        if not self.sections:
            gaps.append("no plan section covers it")
        if not self.quiz:
            gaps.append("no quiz item")
        if "exercise" in self.methods and not self.exercises:
            gaps.append("no exercise, though the assessment expects one")
        if "capstone" in self.methods and not self.rubric:
            gaps.append("no rubric criterion, though the assessment expects one")
        return gaps


class Links:
    """Where everything lives on the site. ``learner``: a site of learners' pages only, whose
    links to an outcome go to its lesson on the home page and to a term's lesson to the
    lesson itself (the outcomes map and the plan's list of new terms are the author's)."""

    def __init__(self, course: CourseView, *, learner: bool = False) -> None:
        self.learner = learner
        self.lesson_pages: dict[str, str] = {}
        for lesson in course.lessons:
            if lesson.page:
                self.lesson_pages.setdefault(lesson.id, lesson.page)
        self.with_terms = {lesson.id for lesson in course.lessons
                           if lesson.page and lesson.plan.model is not None and lesson.plan.model.new_terms}
        self.modules = {module.id: module.title for module in course.modules}
        outcomes = course.outcomes.model.outcomes if course.outcomes.model else []
        listed = {lesson.id for lesson in course.lessons}  # the home lists an outcome under its lesson
        self.outcomes = {outcome.id: outcome.text for outcome in outcomes if not learner or outcome.lesson in listed}
        glossary = course.glossary.model.terms if course.glossary.model else []
        self.terms = term_fragments(term.term for term in glossary)
        self.criteria = {c.id for c in course.project.model.rubric} if course.project.model else set()

    def lesson(self, lesson_id: str, part: str | None = None) -> str | None:
        page = self.lesson_pages.get(lesson_id)
        if page is None:
            return None
        return f"{page}#{fragment(part)}" if part else page

    def introduced_in(self, lesson_id: str) -> str | None:
        """The lesson's list of new terms, or the lesson when its plan lists none."""
        return self.lesson(lesson_id, "terms" if lesson_id in self.with_terms and not self.learner else None)

    def outcome(self, outcome_id: str) -> str | None:
        page = "index.html" if self.learner else "outcomes.html"
        return f"{page}#{fragment(outcome_id)}" if outcome_id in self.outcomes else None

    def outcome_text(self, outcome_id: str) -> str:
        return self.outcomes.get(outcome_id, "")

    def term(self, term: str) -> str | None:
        anchor = self.terms.get(term)
        return f"glossary.html#{anchor}" if anchor else None

    def module(self, module_id: str) -> str | None:
        return f"index.html#{fragment(module_id)}" if module_id in self.modules else None

    def criterion(self, criterion_id: str) -> str | None:
        return f"capstone.html#{fragment(criterion_id)}" if criterion_id in self.criteria else None


def outcomes_map(course: CourseView, links: Links, headings: Mapping[str, Mapping[str, str]] | None = None
                 ) -> tuple[list[OutcomeRow], list[str]]:
    """One row per outcome with everything that serves it, and the references to
    outcomes that outcomes.yaml does not define (shown, since nothing serves them).
    ``headings``: lesson id -> section heading -> its anchor on the lesson's page."""
    headings = headings or {}
    rows: dict[str, OutcomeRow] = {}
    for outcome in course.outcomes.model.outcomes if course.outcomes.model else []:
        if outcome.id not in rows:
            rows[outcome.id] = OutcomeRow(outcome.id, outcome.lesson, outcome.bloom, outcome.verb, outcome.text,
                                          Ref(outcome.lesson, links.lesson(outcome.lesson)))
    unknown: set[str] = set()

    def add(outcome_id: str | None, kind: str, ref: Ref) -> None:
        if outcome_id is None:
            return
        row = rows.get(outcome_id)
        if row is None:
            unknown.add(f"{outcome_id} (named by {ref.label})")
            return
        getattr(row, kind).append(ref)

    for evidence in course.assessment.model.evidence if course.assessment.model else []:
        row = rows.get(evidence.outcome)
        if row is not None:
            row.methods.extend(evidence.methods)
        else:
            unknown.add(f"{evidence.outcome} (named by assessment.yaml)")
    for lesson in course.lessons:
        if lesson.plan.model is not None:
            for section in lesson.plan.model.sections:
                for outcome_id in section.covers:
                    anchor = headings.get(lesson.id, {}).get(section.heading, "plan")
                    add(outcome_id, "sections", Ref(f"{lesson.id}: {section.heading}",
                                                    links.lesson(lesson.id, anchor)))
        if lesson.exercises.model is not None:
            for exercise in lesson.exercises.model.exercises:
                add(exercise.outcome, "exercises", Ref(exercise.id, links.lesson(lesson.id, exercise.id)))
        if lesson.quiz.model is not None:
            for item in lesson.quiz.model.items:
                add(item.outcome, "quiz", Ref(item.id, links.lesson(lesson.id, item.id)))
    for criterion in course.project.model.rubric if course.project.model else []:
        for outcome_id in criterion.outcomes:
            add(outcome_id, "rubric", Ref(criterion.id, links.criterion(criterion.id)))
    return list(rows.values()), sorted(unknown)
