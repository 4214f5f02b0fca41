"""Wave: a lesson's prose, written to its plan's sections."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from stay.artefacts import Artefact, Audience, LessonContent, LessonPlan
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


def offline(inputs: dict[str, Any]) -> dict[str, Any]:
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
        paragraph: list[str] = []
        index = 0
        while written < target:
            sentence = sentences[index % len(sentences)]
            paragraph.append(sentence)
            written += len(sentence.split())
            index += 1
            if len(paragraph) == 4 or written >= target:
                lines += [" ".join(paragraph), ""]
                paragraph = []
    return {"body": "\n".join(lines).rstrip("\n") + "\n"}


def _worked_example(lesson_plan: dict[str, Any]) -> list[str]:
    running = lesson_plan.get("running_example")
    names = " and ".join(person.split(",")[0] for person in running["people"]) if running else ""
    people = [f"It follows the course's running example, with {names}."] if running else []
    return people + list(lesson_plan.get("example_facts") or [])


STAGE = Stage(
    name="content", role="writing", phase="wave", scope="lesson", answer=LessonBody,
    offline=offline, makes=LessonContent,
    inputs=(("plan", LessonPlan), ("outcomes", LessonOutcomesInput()),
            ("audience", Audience), ("earlier_lessons", EarlierLessonsInput()),
            ("definitions", DefinitionsInput())),
    needs=("example-design.md",),
    shared=("audience",),
    make=_lesson,
)
