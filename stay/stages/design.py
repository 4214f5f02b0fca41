"""The design stages, before the design gate: audience, curriculum, outcomes, assessment."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from stay.artefacts import (
    DEFAULT_LIMITS,
    Artefact,
    Assessment,
    Audience,
    Brief,
    Curriculum,
    DurationLimits,
    Outcomes,
    parse_duration,
)
from stay.errors import AnswerError
from stay.stages._offline import capstone_outcomes, lessons_of, scrub, subtopics
from stay.stages._stage import Stage


def lessons_share(made: Sequence[Artefact], inputs: Mapping[str, Any], limits: DurationLimits) -> None:
    """A budget of the whole time leaves practice none, and prc001 fails the course."""
    audience = made[0]
    assert isinstance(audience, Audience)
    minutes = parse_duration(inputs["brief"].time_available)
    share = limits.lessons_share(minutes)
    if audience.time_budget_minutes != share:
        raise AnswerError(f"stage audience (audience.yaml): time_budget_minutes is {audience.time_budget_minutes}; "
                          f"the lessons' share of {minutes} minutes is {share} ({limits.practice_percent}% is kept "
                          "for exercises and the capstone); ask again")


def audience_offline(inputs: dict[str, Any]) -> dict[str, Any]:
    brief = inputs["brief"]
    subjects = subtopics(brief["topic"])
    return {
        "learners": scrub(brief["audience"]) + ".",
        "prior_knowledge": [f"The everyday context the brief describes: {scrub(brief['audience'])}."],
        "goals": [f"Use {subject} in their own work." for subject in subjects[:4]],
        "constraints": [scrub(c) + "." for c in brief.get("constraints") or []],
        "misconceptions": [f"That {subject} is learnt by reading alone, with no practice."
                           for subject in subjects[:3]],
        "time_budget_minutes": DEFAULT_LIMITS.lessons_share(parse_duration(brief["time_available"])),
    }


AUDIENCE = Stage(
    doc="Stage 1, audience: who the learners are, what they know and want, how long they have.",
    name="audience", role="analysis", phase="design", scope="course", answer=Audience,
    offline=audience_offline,
    inputs=(("brief", Brief),),
    needs=("backward-design.md",),
    check=lessons_share,
)


def within_house_limits(made: Sequence[Artefact], inputs: Mapping[str, Any], limits: DurationLimits) -> None:
    """Asked for again before anything is paid for on it: a 30 x 30 answer would buy thousands
    of calls for a course the validator then fails (cur001 to cur004)."""
    curriculum = made[0]
    assert isinstance(curriculum, Curriculum)
    problems = []
    modules = len(curriculum.modules)
    if not limits.min_modules <= modules <= limits.max_modules:
        problems.append(f"{modules} modules (house style allows {limits.min_modules} to {limits.max_modules})")
    for module in curriculum.modules:
        lessons = len(module.lessons)
        if not limits.min_lessons <= lessons <= limits.max_lessons:
            problems.append(f"module {module.id} has {lessons} lessons (house style allows {limits.min_lessons} "
                            f"to {limits.max_lessons})")
    odd = [lesson for module in curriculum.modules for lesson in module.lessons
           if not limits.min_minutes <= lesson.minutes <= limits.max_minutes]
    if odd:
        problems.append(f"{len(odd)} lessons outside {limits.min_minutes} to {limits.max_minutes} minutes "
                        f"(first: {odd[0].id}, {odd[0].minutes})")
    total = sum(lesson.minutes for module in curriculum.modules for lesson in module.lessons)
    budget = inputs["audience"].time_budget_minutes
    if total > budget:
        problems.append(f"{total} minutes in all, over the audience's budget of {budget}")
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise AnswerError(f"stage curriculum (curriculum.yaml): the curriculum is past the house limits: {shown}; "
                          "ask again")


TARGET_LESSON_MINUTES = 25


def curriculum_offline(inputs: dict[str, Any]) -> dict[str, Any]:
    budget = inputs["audience"]["time_budget_minutes"]
    subjects = subtopics(inputs["brief"]["topic"])
    usable = budget * 0.9
    count = max(1, min(60, round(usable / TARGET_LESSON_MINUTES)))
    minutes = max(10, min(45, math.floor(usable / count)))
    if minutes * count > budget:  # a budget under ten minutes: one short lesson is all there is
        count, minutes = 1, max(1, budget)
    titles = _lesson_titles(subjects, count)
    per_module = max(3, math.ceil(count / 10))
    modules: list[dict[str, Any]] = []
    for start in range(0, count, per_module):
        index = len(modules) + 1
        chunk = titles[start:start + per_module]
        modules.append({
            "id": f"m{index:02d}",
            "slug": "-".join(re.findall(r"[a-z0-9]+", chunk[0].lower())[:5]) or f"module-{index}",
            "title": chunk[0],
            "summary": f"Lessons on {', '.join(chunk)}.",
            "lessons": [{"id": f"m{index:02d}-l{j:02d}", "title": title, "minutes": minutes,
                         "summary": f"After this lesson the learner can use {title} on a task."}
                        for j, title in enumerate(chunk, 1)],
        })
    return {"modules": modules}


def _lesson_titles(subjects: list[str], count: int) -> list[str]:
    stems = ("{}", "{} in practice", "{}: diagnosing problems", "{}: further cases")
    titles: list[str] = []
    for index in range(count):
        round_ = index // len(subjects)
        stem = stems[round_ % len(stems)]
        part = f" (part {round_ // len(stems) + 1})" if round_ >= len(stems) else ""
        # A title is also the lesson's term, and a term holds at most 64 characters.
        room = 64 - len(stem.format("")) - len(part)
        words = subjects[index % len(subjects)].split()[:8]
        while len(words) > 1 and len(" ".join(words)) > room:
            words.pop()
        words = _closed(words)
        title = stem.format(" ".join(words)[:room]) + part
        titles.append(title[:1].upper() + title[1:])
    return titles


def _closed(words: list[str]) -> list[str]:
    """The words up to an aside the cut left open: "messages (methods, status" is not a title."""
    depth, opened = 0, len(words)
    for index, word in enumerate(words):
        for char in word:
            if char in "([{":
                depth, opened = depth + 1, index if depth == 0 else opened
            elif char in ")]}":
                depth = max(0, depth - 1)
    if not depth:
        return words
    return words[:opened] or [words[0].lstrip("([{")]  # an aside from the first word: its words, unbracketed


CURRICULUM = Stage(
    doc="Stage 2, curriculum: modules and lessons, sized to the audience's time budget.",
    name="curriculum", role="planning", phase="design", scope="course",
    answer=Curriculum,
    offline=curriculum_offline,
    inputs=(("brief", Brief), ("audience", Audience)),
    needs=("backward-design.md", "cognitive-load.md"),
    check=within_house_limits,
)


def outcomes_offline(inputs: dict[str, Any]) -> dict[str, Any]:
    found = []
    for _module, lesson in lessons_of(inputs["curriculum"]):
        # no 'and'/'or' inside an outcome's text: each outcome is one behaviour
        subject = re.sub(r"\b(and|or)\b", lambda m: "&" if m.group(1) == "and" else "/", lesson["title"])
        found.append({"id": f"{lesson['id']}-o1", "lesson": lesson["id"], "bloom": "understand",
                      "verb": "explain", "text": f"Explain {subject} in your own words."})
        found.append({"id": f"{lesson['id']}-o2", "lesson": lesson["id"], "bloom": "apply",
                      "verb": "use", "text": f"Use {subject} on a small, realistic task."})
    return {"outcomes": found}


OUTCOMES = Stage(
    doc="Stage 3, outcomes: one to four observable, Bloom-levelled outcomes per lesson.",
    name="outcomes", role="planning", phase="design", scope="course", answer=Outcomes,
    offline=outcomes_offline,
    inputs=(("audience", Audience), ("curriculum", Curriculum)),
    needs=("blooms-taxonomy.md",),
)


def assessment_offline(inputs: dict[str, Any]) -> dict[str, Any]:
    capstone = capstone_outcomes(inputs["curriculum"])
    evidence = []
    for outcome in inputs["outcomes"]["outcomes"]:
        methods = ["quiz"] if outcome["bloom"] == "understand" else ["quiz", "exercise"]
        if outcome["id"] in capstone:
            methods.append("capstone")
        evidence.append({"outcome": outcome["id"], "methods": methods})
    return {"strategy": "Every outcome is checked by a quiz item. Every outcome at apply or above is "
                        "also practised in an exercise with a worked solution. The capstone assesses "
                        "the last applied outcome of each module, where the module's skills combine.",
            "evidence": evidence}


ASSESSMENT = Stage(
    doc="Stage 4, assessment: how evidence of each outcome is gathered, before any lesson exists.",
    name="assessment", role="planning", phase="design", scope="course",
    answer=Assessment,
    offline=assessment_offline,
    inputs=(("audience", Audience), ("curriculum", Curriculum),
            ("outcomes", Outcomes)),
    needs=("assessment-design.md", "blooms-taxonomy.md"),
)
