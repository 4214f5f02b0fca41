"""The stages' offline answers (each stage declares its own, ``Stage.offline``): a
complete course, from any reasonable brief, in honest template prose.

Every answer is a pure function of the request's inputs. The prose says plainly that it
is template text standing in for a model's; what matters is that the structure is
complete and passes the validator with --strict, so the whole pipeline can run, and be
tested, with no network and no key.
"""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

from stay.artefacts import DEFAULT_LIMITS, parse_duration

# Words house style bans from prose (prose.banned_phrases) or rubric criteria
# (rubric.vague_words); brief text is scrubbed of them before it is reused anywhere.
_SCRUB = ("simply", "obviously", "just", "easy", "easily", "of course", "trivial", "trivially",
          "everyone knows", "good", "appropriate", "adequate", "proper", "properly", "nice",
          "clear", "clearly", "sufficient", "reasonable", "satisfactory")
_SCRUB_RE = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(re.escape(w) for w in _SCRUB) + r")(?![A-Za-z0-9])",
                       re.IGNORECASE)
TARGET_LESSON_MINUTES = 25
WORDS_PER_MINUTE = 40


def scrub(text: str) -> str:
    """Brief text made safe to reuse: no banned or vague words, one line, no stray '#'."""
    text = _SCRUB_RE.sub("", " ".join(text.split()))
    text = re.sub(r"\s+([,.;:])", r"\1", text)
    return " ".join(text.replace("#", "").split()).strip(" ,;:.") or "the topic"


def _outcome_safe(text: str) -> str:
    """No 'and'/'or' inside an outcome's text: each outcome is one behaviour."""
    return re.sub(r"\b(and|or)\b", lambda m: "&" if m.group(1) == "and" else "/", text)


def subtopics(topic: str) -> list[str]:
    """The brief's topic as a list of subjects: the part after a colon, split on top-level
    commas and semicolons."""
    text = topic.split(":", 1)[1] if ":" in topic else topic
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char in ",;" and depth <= 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    cleaned = [scrub(re.sub(r"^\s*(?:and|or)\s+", "", part)) for part in parts]
    return [part for part in cleaned if part and part != "the topic"] or [scrub(topic)]


def _slug(text: str, fallback: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())[:5]
    return "-".join(words) or fallback


# -- stage answers: each stage module names its own ---------------------------------------


def audience(inputs: dict[str, Any]) -> dict[str, Any]:
    brief = inputs["brief"]
    subjects = subtopics(brief["topic"])
    answer: dict[str, Any] = {
        "learners": scrub(brief["audience"]) + ".",
        "prior_knowledge": [f"The everyday context the brief describes: {scrub(brief['audience'])}."],
        "goals": [f"Use {subject} in their own work." for subject in subjects[:4]],
        "constraints": [scrub(c) + "." for c in brief.get("constraints") or []],
        "misconceptions": [f"That {subject} is learnt by reading alone, with no practice."
                           for subject in subjects[:3]],
        "time_budget_minutes": DEFAULT_LIMITS.lessons_share(parse_duration(brief["time_available"])),
    }
    return answer


def curriculum(inputs: dict[str, Any]) -> dict[str, Any]:
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
            "slug": _slug(chunk[0], f"module-{index}"),
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
    """The words up to an aside the cut left open: "messages (methods, status" is not a
    title, "messages" is. The aside goes whole."""
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


def _lessons(curriculum_data: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(module, lesson) for module in curriculum_data["modules"] for lesson in module["lessons"]]


def outcomes(inputs: dict[str, Any]) -> dict[str, Any]:
    found = []
    for _module, lesson in _lessons(inputs["curriculum"]):
        subject = _outcome_safe(lesson["title"])
        found.append({"id": f"{lesson['id']}-o1", "lesson": lesson["id"], "bloom": "understand",
                      "verb": "explain", "text": f"Explain {subject} in your own words."})
        found.append({"id": f"{lesson['id']}-o2", "lesson": lesson["id"], "bloom": "apply",
                      "verb": "use", "text": f"Use {subject} on a small, realistic task."})
    return {"outcomes": found}


def _capstone_outcomes(curriculum_data: dict[str, Any]) -> set[str]:
    return {f"{module['lessons'][-1]['id']}-o2" for module in curriculum_data["modules"]}


def assessment(inputs: dict[str, Any]) -> dict[str, Any]:
    capstone = _capstone_outcomes(inputs["curriculum"])
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


def _sections(minutes: int, title: str, ids: list[str]) -> list[dict[str, Any]]:
    hook = recap = max(1, minutes // 10)
    example = practice = max(1, minutes // 4)
    explain = minutes - hook - recap - example - practice
    return [
        {"heading": f"Why {title} matters", "kind": "hook", "minutes": hook, "covers": []},
        {"heading": f"How {title} works", "kind": "explain", "minutes": explain, "covers": [ids[0]]},
        {"heading": "A worked example", "kind": "example", "minutes": example, "covers": [ids[0]]},
        {"heading": "Your turn", "kind": "practice", "minutes": practice, "covers": ids[1:]},
        {"heading": "Recap", "kind": "recap", "minutes": recap, "covers": []},
    ]


_PEOPLE = ("Ana Ruiz, the team lead who sets the task", "Ben Okafor, the team member who carries it out")
CASE_FILE = "assets/case-log.csv"
"""The offline example's one data file: a log of the case, one row per lesson."""


def example(inputs: dict[str, Any]) -> dict[str, Any]:
    """One case for the whole course, set among the learners audience.yaml describes, with
    one data file that logs it lesson by lesson (CSV, written with the csv module so a
    title holding a comma stays one field)."""
    who = " ".join(inputs["audience"]["learners"].split(",")[0].rstrip(".").split()[:12])
    learners = f"the learners ({who})" if who else "the learners"
    title = scrub(inputs["brief"]["title"])
    ana, ben = (person.split(",")[0] for person in _PEOPLE)
    rows = io.StringIO()
    log = csv.writer(rows, lineterminator="\n")
    log.writerow(["lesson", "task", "owner", "reviewer", "minutes", "result"])
    for _module, lesson in _lessons(inputs["curriculum"]):
        log.writerow([lesson["id"], lesson["title"], ben, ana, lesson["minutes"], "done"])
    return {
        "setting": f"The workplace of {learners}, on one task the whole course follows: {title}.",
        "people": list(_PEOPLE),
        "data": [f"Module {module['id']}: {module['title']}, carried out on the same case."
                 for module in inputs["curriculum"]["modules"]]
                + [f"{CASE_FILE} logs each lesson's step: who did it, who reviewed it, and its minutes."],
        "files": [{"path": CASE_FILE, "about": "The case's log, one row per lesson: the step, who did it, "
                                               "who reviewed it and how long it took.",
                   "text": rows.getvalue()}],
    }


def _example_facts(module: dict[str, Any], lesson: dict[str, Any], example: dict[str, Any]) -> list[str]:
    ana, ben = (person.split(",")[0] for person in _PEOPLE)
    files = " and ".join(f"`{file['path']}`" for file in example.get("files") or [])
    logged = f"The row for lesson {lesson['id']} in {files} records the step and its result." if files else \
        f"The log for lesson {lesson['id']} records each step and its result."
    return [f"{ben} uses {lesson['title']} on task {module['id']}, and {ana} reviews each step.", logged]


def plan(inputs: dict[str, Any]) -> dict[str, Any]:
    lessons = _lessons(inputs["curriculum"])
    order = [lesson["id"] for _module, lesson in lessons]
    plans = []
    for module, lesson in lessons:
        if module["id"] != inputs["module"]:
            continue
        ids = [o["id"] for o in inputs["outcomes"]["outcomes"] if o["lesson"] == lesson["id"]]
        position = order.index(lesson["id"])
        previous = lessons[position - 1][1]["title"] if position else None
        plans.append({
            "lesson": lesson["id"], "title": lesson["title"], "minutes": lesson["minutes"],
            "outcomes": ids, "sections": _sections(lesson["minutes"], lesson["title"], ids),
            "new_terms": [{"term": lesson["title"],
                           "definition": f"The subject of lesson {lesson['id']}: {lesson['title']}."}],
            "prerequisites": [], "revisits": [previous] if previous else [],
            "example_facts": _example_facts(module, lesson, inputs["example"]),
        })
    return {"plans": plans}


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


def content(inputs: dict[str, Any]) -> dict[str, Any]:
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
    """The plan's worked-example facts as sentences, after one naming the running example's
    people (a plan written before plans carried them has neither)."""
    running = lesson_plan.get("running_example")
    names = " and ".join(person.split(",")[0] for person in running["people"]) if running else ""
    people = [f"It follows the course's running example, with {names}."] if running else []
    return people + list(lesson_plan.get("example_facts") or [])


def _setting(lesson_plan: dict[str, Any]) -> str:
    running = lesson_plan.get("running_example")
    if not running:
        return ""
    files = " and ".join(f"`{file['path']}`" for file in running.get("files") or [])
    return f" Work in the course's running example. {running['setting']}" + (f" Open {files}." if files else "")


def exercises(inputs: dict[str, Any]) -> dict[str, Any]:
    lesson_plan = inputs["plan"]
    found: list[dict[str, Any]] = []
    for outcome in inputs["outcomes"]:
        if outcome["bloom"] in ("apply", "analyze", "evaluate", "create"):
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


def _placed(correct: dict[str, Any], wrong: list[dict[str, Any]], lesson: str,
            earlier: int) -> list[dict[str, Any]]:
    """The options with the correct one at a position that moves from item to item.

    A learner who always picks the same letter must not score: the position steps by one
    for each earlier mcq item of the quiz and for each lesson and module before this one
    (the numbers of the lesson id, mNN-lNN, counted from m01-l01), so neighbouring items,
    and a module's lessons, differ. Derived from ids alone, never chance, so the same plan
    gives the same bytes."""
    before = sum(int(number) - 1 for number in re.findall(r"\d+", lesson))
    position = (before + earlier) % (len(wrong) + 1)
    return [*wrong[:position], correct, *wrong[position:]]


def quiz(inputs: dict[str, Any]) -> dict[str, Any]:
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


def _data_files(plans: list[dict[str, Any]]) -> str:
    """The course's data files, named by path, as the plans' running example lists them."""
    running = next((plan["running_example"] for plan in plans if plan.get("running_example")), None)
    paths = [file["path"] for file in (running or {}).get("files") or []]
    return f" Start from the course's data: {', '.join(f'`{path}`' for path in paths)}." if paths else ""


def _capstone_minutes(inputs: dict[str, Any]) -> int:
    """The time the lessons and their exercises (one per outcome at apply or above) leave
    of the brief's, within house style."""
    lessons = sum(lesson["minutes"] for module in inputs["curriculum"]["modules"] for lesson in module["lessons"])
    practice = DEFAULT_LIMITS.exercise_min * sum(outcome["bloom"] in ("apply", "analyze", "evaluate", "create")
                                                 for outcome in inputs["outcomes"]["outcomes"])
    left: int = parse_duration(inputs["brief"]["time_available"]) - lessons - practice
    return max(DEFAULT_LIMITS.capstone_min, min(DEFAULT_LIMITS.capstone_max, left))


def capstone(inputs: dict[str, Any]) -> dict[str, Any]:
    modules = inputs["curriculum"]["modules"]
    capstone_ids = sorted(_capstone_outcomes(inputs["curriculum"]))
    rubric = []
    for index, module in enumerate(modules, 1):
        outcome = f"{module['lessons'][-1]['id']}-o2"
        rubric.append({
            "id": f"r{index}",
            "criterion": f"The submission uses {module['title']} on the chosen task and names each step.",
            "outcomes": [outcome] if outcome in capstone_ids else [],
            "levels": {
                "exemplary": "Every step is named, correct, and justified with evidence from the task.",
                "proficient": "Every step is named and correct; one justification is missing.",
                "developing": "Most steps are named; one step is wrong or missing.",
                "beginning": "Steps are missing or wrong in more than one place.",
            },
        })
    return {
        "title": "Capstone: apply the course to one task",
        "brief": "Choose one realistic task from your own work and carry it through with the skills "
                 "of every module. Offline template brief: a model would write a specific scenario."
                 + _data_files(inputs["plans"]),
        "deliverable": "A short written report of the task, with each step and its evidence.",
        "minutes": _capstone_minutes(inputs),
        "milestones": [{"id": f"p{index}", "title": f"Apply {module['title']}",
                        "modules": [module["id"]],
                        "description": f"Carry out the part of the task that uses {module['title']}."}
                       for index, module in enumerate(modules, 1)],
        "rubric": rubric,
    }
