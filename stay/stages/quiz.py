"""Wave: a quiz item per outcome, and retrieval items for earlier terms."""

from __future__ import annotations

import re
from typing import Any

from stay.artefacts import Audience, LessonPlan, Quiz
from stay.stages._stage import DefinitionsInput, LessonOutcomesInput, Stage


def _placed(correct: dict[str, Any], wrong: list[dict[str, Any]], lesson: str,
            earlier: int) -> list[dict[str, Any]]:
    """The correct option moves from item to item and lesson to lesson, so a learner who always
    picks one letter does not score; derived from ids, never chance, so a plan gives the same bytes."""
    before = sum(int(number) - 1 for number in re.findall(r"\d+", lesson))
    position = (before + earlier) % (len(wrong) + 1)
    return [*wrong[:position], correct, *wrong[position:]]


def offline(inputs: dict[str, Any]) -> dict[str, Any]:
    lesson_plan = inputs["plan"]
    lesson = lesson_plan["lesson"]
    items: list[dict[str, Any]] = []

    def next_id() -> str:
        return f"{lesson}-q{len(items) + 1}"

    term = lesson_plan["new_terms"][0]["term"] if lesson_plan["new_terms"] else lesson_plan["title"]
    facts = lesson_plan.get("example_facts") or []
    for outcome in inputs["outcomes"]:
        if outcome["bloom"] in ("remember", "understand"):
            items.append({
                "id": next_id(), "outcome": outcome["id"], "type": "mcq",
                "stem": f"Which statement describes {term} as this lesson teaches it?",
                "options": _placed(
                    {"text": f"It is the subject of lesson {lesson}, which the learner practises "
                             "on a realistic task.", "correct": True},
                    [{"text": "It can be learnt by reading about it, without practice.", "correct": False,
                      "why_wrong": "Confuses reading about an idea with being able to use it."},
                     {"text": "It only matters to specialists, never to this audience.", "correct": False,
                      "why_wrong": "Assumes only specialists can use the idea, which the course sets "
                                   "out to disprove."}],
                    lesson, sum(item["type"] == "mcq" for item in items)),
                "explanation": "The lesson introduces the idea and then has the learner use it.",
            })
        else:
            items.append({
                "id": next_id(), "outcome": outcome["id"], "type": "short",
                "stem": f"Describe, in two sentences, one task where you would use {term}.",
                "answer": "Any realistic task from the learner's work, with the step that uses it named"
                          + (f", such as the lesson's worked example: {facts[0]}" if facts else "."),
                "explanation": "The outcome asks for use on a realistic task, so the answer names one.",
            })
    for revisited in lesson_plan["revisits"]:
        items.append({
            "id": next_id(), "retrieves": revisited, "type": "short",
            "stem": "Recall an earlier lesson: what was it about, in one sentence?",
            "answer": f"It was about {revisited}.",
            "explanation": "Retrieving an earlier idea after a gap is what keeps it.",
        })
    return {"lesson": lesson, "items": items}


STAGE = Stage(
    name="quiz", role="writing", phase="wave", scope="lesson", answer=Quiz,
    offline=offline,
    inputs=(("plan", LessonPlan), ("outcomes", LessonOutcomesInput()),
            ("audience", Audience), ("definitions", DefinitionsInput())),
    needs=("assessment-design.md",),
    shared=("audience",),
)
