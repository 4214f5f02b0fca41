"""The wave's writing stages, per lesson: its prose, its exercises, its quiz."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from stay.artefacts import DEFAULT_LIMITS, Artefact, Audience, Exercises, LessonContent, LessonPlan, Quiz
from stay.stages._offline import APPLIED
from stay.stages._stage import DefinitionsInput, EarlierLessonsInput, LessonOutcomesInput, Stage


class LessonBody(Artefact):
    """The content stage's answer: the lesson's Markdown after its front matter."""

    body: str = Field(description="Starts with '# <plan title>', then one '## <heading>' per plan "
                                  "section in order, each followed by its prose.")


def _lesson(answer: LessonBody, inputs: Mapping[str, Any]) -> LessonContent:
    plan = inputs["plan"]
    body = answer.body
    return LessonContent(lesson=plan.lesson, title=plan.title, body=body if body.endswith("\n") else body + "\n")


WORDS_PER_MINUTE = 40


_PROSE = {
    "hook": ("This section opens the lesson on {t}.",
             "It is template prose written by the offline backend, standing in for a model's hook.",
             "A model-written hook would start from a situation the learners meet at work.",
             "It would show why {t} changes what they can do there."),
    "explain": ("This section explains {t}.",
                "The text here is offline template prose, not teaching written by a model.",
                "A model-written version would define {t} in plain words and then build on it.",
                "It would connect {t} to what the learners already know.",
                "It would take one idea at a time, so that no paragraph asks too much at once."),
    "example": ("This section works through an example of {t}.",
                "The example is a placeholder from the offline backend.",
                "A model-written version would show each step of a real case, with the reasoning.",
                "It would then fade the steps, so that the learner finishes the last ones alone."),
    "practice": ("This section gives the learner a task that uses {t}.",
                 "The offline backend writes this placeholder so that the lesson is complete.",
                 "A model-written version would set a realistic task and say what a finished answer "
                 "looks like.",
                 "The exercises file for this lesson holds the task itself, with hints and a solution."),
    "recap": ("This section recaps the lesson on {t}.",
              "It is offline template prose that restates the outcomes in short form.",
              "A model-written recap would ask the learner to recall each idea before reading it."),
}


def content_offline(inputs: dict[str, Any]) -> dict[str, Any]:
    lesson_plan = inputs["plan"]
    term = lesson_plan["new_terms"][0]["term"] if lesson_plan["new_terms"] else lesson_plan["title"]
    lines = [f"# {lesson_plan['title']}", ""]
    for section in lesson_plan["sections"]:
        lines += [f"## {section['heading']}", ""]
        sentences = [s.format(t=term) for s in _PROSE.get(section["kind"], _PROSE["explain"])]
        if section["kind"] == "example":
            sentences[1:1] = _worked_example(lesson_plan)
        target = section["minutes"] * WORDS_PER_MINUTE
        written = 0
        chosen: list[str] = []
        for sentence in itertools.cycle(sentences):
            if written >= target:
                break
            chosen.append(sentence)
            written += len(sentence.split())
        for start in range(0, len(chosen), 4):  # paragraphs of four sentences
            lines += [" ".join(chosen[start:start + 4]), ""]
    return {"body": "\n".join(lines).rstrip("\n") + "\n"}


def _worked_example(lesson_plan: dict[str, Any]) -> list[str]:
    running = lesson_plan.get("running_example")
    names = " and ".join(person.split(",")[0] for person in running["people"]) if running else ""
    people = [f"It follows the course's running example, with {names}."] if running else []
    return people + list(lesson_plan.get("example_facts") or [])


CONTENT = Stage(
    doc="Wave: a lesson's prose, written to its plan's sections.",
    name="content", role="writing", phase="wave", scope="lesson", answer=LessonBody,
    offline=content_offline, makes=LessonContent,
    inputs=(("plan", LessonPlan), ("outcomes", LessonOutcomesInput()),
            ("audience", Audience), ("earlier_lessons", EarlierLessonsInput()),
            ("definitions", DefinitionsInput())),
    needs=("example-design.md",),
    shared=("audience",),
    make=_lesson,
)


def _setting(lesson_plan: dict[str, Any]) -> str:
    running = lesson_plan.get("running_example")
    if not running:
        return ""
    files = " and ".join(f"`{file['path']}`" for file in running.get("files") or [])
    return f" Work in the course's running example. {running['setting']}" + (f" Open {files}." if files else "")


def exercises_offline(inputs: dict[str, Any]) -> dict[str, Any]:
    lesson_plan = inputs["plan"]
    found: list[dict[str, Any]] = []
    for outcome in inputs["outcomes"]:
        if outcome["bloom"] in APPLIED:
            number = len(found) + 1
            found.append({
                "id": f"{lesson_plan['lesson']}-e{number}", "outcome": outcome["id"],
                "bloom": outcome["bloom"],
                "task": f"Pick a small task from your own work where {lesson_plan['title']} plays a "
                        f"part. {outcome['text']} Write down each step you take.{_setting(lesson_plan)}",
                "hints": ["Start from the worked example in the lesson.",
                          "Name the step where the lesson's idea does the work."],
                "solution": "Offline template solution: a model-written solution would work the task "
                            "step by step and explain the reasoning at each step.",
                "minutes": DEFAULT_LIMITS.exercise_min,  # a short task: the capstone takes the rest
            })
    return {"lesson": lesson_plan["lesson"], "exercises": found}


EXERCISES = Stage(
    doc="Wave: practice for each of a lesson's outcomes at apply or above.",
    name="exercises", role="writing", phase="wave", scope="lesson",
    answer=Exercises,
    offline=exercises_offline,
    inputs=(("plan", LessonPlan), ("outcomes", LessonOutcomesInput()),
            ("audience", Audience), ("definitions", DefinitionsInput())),
    needs=("assessment-design.md",),
    shared=("audience",),
)


def _placed(correct: dict[str, Any], wrong: list[dict[str, Any]], lesson: str,
            earlier: int) -> list[dict[str, Any]]:
    """The correct option moves from item to item and lesson to lesson, so a learner who always
    picks one letter does not score; derived from ids, never chance, so a plan gives the same bytes."""
    before = sum(int(number) - 1 for number in re.findall(r"\d+", lesson))
    position = (before + earlier) % (len(wrong) + 1)
    return [*wrong[:position], correct, *wrong[position:]]


def quiz_offline(inputs: dict[str, Any]) -> dict[str, Any]:
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


QUIZ = Stage(
    doc="Wave: a quiz item per outcome, and retrieval items for earlier terms.",
    name="quiz", role="writing", phase="wave", scope="lesson", answer=Quiz,
    offline=quiz_offline,
    inputs=(("plan", LessonPlan), ("outcomes", LessonOutcomesInput()),
            ("audience", Audience), ("definitions", DefinitionsInput())),
    needs=("assessment-design.md",),
    shared=("audience",),
)
