"""The course's running example, after the design gate and before lesson planning: one
case, its people and its data files, written once and read by every module's planning
call, so every lesson of the course works on the same case and names the same files."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from stay.artefacts import Artefact, Audience, Brief, CourseExample, Curriculum, DurationLimits
from stay.errors import AnswerError
from stay.stages._offline import PEOPLE, lessons_of, scrub
from stay.stages._stage import Stage
from stay.validate.rules.ast import parse_problem


def _files_read(made: Sequence[Artefact], _inputs: Mapping[str, Any], _limits: DurationLimits) -> None:
    """The validator's ast004 on the answer: repair never rewrites the example once plans use it."""
    (example,) = made
    assert isinstance(example, CourseExample)
    for index, file in enumerate(example.files):
        problem = parse_problem(file.path, file.text.encode("utf-8"))
        if problem is not None:
            raise AnswerError(f"stage example: example.yaml files[{index}] ({file.path}) does not read as its "
                              f"type: {problem}; ask again")


CASE_FILE = "assets/case-log.csv"


def offline(inputs: dict[str, Any]) -> dict[str, Any]:
    """The log is written with the csv module, so a title holding a comma stays one field."""
    who = " ".join(inputs["audience"]["learners"].split(",")[0].rstrip(".").split()[:12])
    learners = f"the learners ({who})" if who else "the learners"
    title = scrub(inputs["brief"]["title"])
    ana, ben = (person.split(",")[0] for person in PEOPLE)
    rows = io.StringIO()
    log = csv.writer(rows, lineterminator="\n")
    log.writerow(["lesson", "task", "owner", "reviewer", "minutes", "result"])
    for _module, lesson in lessons_of(inputs["curriculum"]):
        log.writerow([lesson["id"], lesson["title"], ben, ana, lesson["minutes"], "done"])
    return {
        "setting": f"The workplace of {learners}, on one task the whole course follows: {title}.",
        "people": list(PEOPLE),
        "data": [f"Module {module['id']}: {module['title']}, carried out on the same case."
                 for module in inputs["curriculum"]["modules"]]
                + [f"{CASE_FILE} logs each lesson's step: who did it, who reviewed it, and its minutes."],
        "files": [{"path": CASE_FILE, "about": "The case's log, one row per lesson: the step, who did it, "
                                               "who reviewed it and how long it took.",
                   "text": rows.getvalue()}],
    }


STAGE = Stage(
    name="example", role="planning", phase="plan", scope="course", answer=CourseExample,
    offline=offline,
    inputs=(("brief", Brief), ("audience", Audience),
            ("curriculum", Curriculum)),
    needs=("example-design.md",),
    check=_files_read,
)
