"""The heuristic judge (a test double) on hand-written examples (not the quality knob's wordings), and the
knob itself: seeded noise per build, rates kept, files valid, and a judge that never
learnt how the knob works."""

from __future__ import annotations

import inspect
import statistics
from typing import Any

import pytest

import stay.testing._heuristic_judge as heuristics
from stay.models import ModelRequest, RequestCache, request_key
from stay.scoring.scorers import DistractorAnswer
from stay.testing import RiggedBackend, heuristic_judge
from stay.testing._backend import _DEGREE_LADDERS, _GENERIC_WHY_WRONG, _LOWER_TASKS, build_rate, picked
from tests.conftest import ROOT


def ask(stage: str, inputs: dict[str, Any]) -> dict[str, Any]:
    request = ModelRequest(stage=f"judge-{stage}", role="judging", artefact="x", system=(), user="",
                           output_schema={}, output_name="x", inputs=inputs)
    reply = heuristic_judge().ask(request).data
    assert reply is not None and reply["reason"].startswith("heuristic:")
    return reply


@pytest.mark.parametrize("option, why_wrong, embodies", [
    ("Merging deletes the feature branch's commits.", "Treats a merge as if it threw away the branch's history.", True),
    ("The median is always equal to the mean.", "Assumes every distribution is symmetric, so median and mean agree.",
     True),
    ("A 400 error means the server crashed.", "Confuses a client error with a server failure.", True),
    ("A 400 error means the server crashed.", "Assumes caching always makes pages faster.", False),  # not about it
    ("Rebase is safe on shared branches.", "This is wrong.", False),
    ("Rebase is safe on shared branches.", "Incorrect: see the section on rebasing shared branches.", False),
    ("Renters can install wall insulation.", "A common mistake.", False),
])
def test_distractors(option: str, why_wrong: str, embodies: bool) -> None:
    reply = ask("distractor_quality", {"stem": "Which is true?", "correct_answer": "Something else.",
                                       "wrong_option": option, "why_wrong": why_wrong, "audience_misconceptions": []})
    assert DistractorAnswer.model_validate(reply).embodies is embodies


def test_a_distractor_can_name_an_audience_misconception_without_a_belief_verb() -> None:
    reply = ask("distractor_quality", {
        "stem": "Which is true?", "correct_answer": "x", "wrong_option": "Statistics are learnt by reading alone.",
        "why_wrong": "The misconception that statistics are learnt by reading, with no practice.",
        "audience_misconceptions": ["That statistics is learnt by reading alone, with no practice."]})
    assert reply["embodies"] is True


OUTCOME = {"id": "m01-l01-o2", "bloom": "apply", "verb": "use", "text": "Use a pivot table on sales data."}


@pytest.mark.parametrize("task, aligned", [
    ("Use a pivot table to total last quarter's sales by region. Write down the steps.", True),
    ("Build a pivot table from the sales export and explain what it shows.", True),
    ("Calculate the totals per region with a pivot table.", True),
    ("Define a pivot table in one sentence.", False),
    ("List the parts of a pivot table. Write each one down.", False),
    ("Explain, in your own words, what a pivot table is for.", False),
    ("Read the section on pivot tables again.", False),
])
def test_exercises(task: str, aligned: bool) -> None:
    assert ask("exercise_alignment", {"outcome": OUTCOME, "exercise": {"task": task, "bloom": "apply"}})["aligned"] \
        is aligned


@pytest.mark.parametrize("levels, distinguishable", [
    ({"exemplary": "Names every failure mode and cites a log line for each.",
      "proficient": "Names every failure mode; one lacks a log line.",
      "developing": "Names some failure modes, without log lines.",
      "beginning": "Names no failure mode."}, True),
    ({"exemplary": "Excellent and thorough analysis.", "proficient": "Good, mostly thorough analysis.",
      "developing": "Fair, somewhat thorough analysis.", "beginning": "Poor, superficial analysis."}, False),
    ({"exemplary": "A very clear report.", "proficient": "A clear report.", "developing": "A fairly clear report.",
      "beginning": "An unclear report."}, False),
])
def test_rubrics(levels: dict[str, str], distinguishable: bool) -> None:
    assert ask("rubric_specificity", {"criterion": "c", "levels": levels})["distinguishable"] is distinguishable


def test_coverage_quotes_the_best_sentence_of_the_sections_meant_to_teach_it() -> None:
    lesson = ("# Pivot tables\n\n## How pivot tables work\n\nA pivot table groups rows by a field and totals another. "
              "Drag region to rows and sales to values.\n\n## Recap\n\nWe covered a topic.\n")
    outcome = {"id": "o1", "verb": "explain", "text": "Explain how a pivot table groups and totals rows.",
               "bloom": "understand"}
    taught = ask("outcome_coverage", {"outcome": outcome, "sections_that_should_teach_it": ["How pivot tables work"],
                                      "lesson": lesson})
    assert taught["teaches"] and taught["quote"] == "A pivot table groups rows by a field and totals another."
    untaught = ask("outcome_coverage", {"outcome": outcome, "sections_that_should_teach_it": ["Recap"],
                                        "lesson": lesson})
    assert not untaught["teaches"] and untaught["quote"] == ""


def test_the_heuristic_judge_knows_nothing_of_the_quality_knob() -> None:
    source = inspect.getsource(heuristics)
    assert "stay.testing" not in source and "RiggedBackend" not in source
    knob_wordings = [*_GENERIC_WHY_WRONG, *(t for tasks in _LOWER_TASKS.values() for t in tasks),
                     *(level for ladder in _DEGREE_LADDERS for level in ladder)]
    assert not [w for w in knob_wordings if w.split("{")[0][:20] in source]


def test_seeded_builds_vary_around_the_knob_and_zero_stays_zero() -> None:
    rates = [build_rate("distractors", 0.2, f"run/brief/{epoch}") for epoch in range(400)]
    assert statistics.median(rates) == pytest.approx(0.2, abs=0.02)
    assert 0.05 < min(rates) < 0.15 and 0.3 < max(rates) < 0.5  # sd 0.5 on the logit scale
    assert build_rate("distractors", 0.2, None) == 0.2 and build_rate("untaught", 0.0, "any") == 0.0
    assert build_rate("exercises", 0.3, "s") == build_rate("exercises", 0.3, "s")  # the same seed, the same build
    items = [f"m01-l{n:02d}-q1/2" for n in range(300)]
    one = {i for i in items if picked("distractors", i, 0.3, "a")}
    two = {i for i in items if picked("distractors", i, 0.3, "b")}
    assert one != two and 60 < len(one) < 120 and 60 < len(two) < 120


def test_degraded_offline_builds_still_pass_the_validator_and_differ_by_seed(tmp_path: Any) -> None:
    from stay.pipeline import build_course
    from stay.scoring import CourseOnDisk, default_scorers, score_course

    brief = ROOT / "evals" / "briefs" / "git-branching-for-teams.yaml"
    knobs = {"distractors": 0.5, "untaught": 0.5, "exercises": 0.5, "rubrics": 0.5}
    scores, hashes = [], []
    for seed in ("1", "2"):
        result = build_course(brief, courses_dir=tmp_path / seed, yes=True, backend=RiggedBackend(quality=knobs,
                              seed=seed), progress=lambda _l: None)
        assert result.validation is not None and result.validation.fails == 0
        course = CourseOnDisk.load(result.course_dir)
        hashes.append(course.sha256)
        scores.append({n: r.score for n, r in score_course(course, default_scorers(heuristic_judge())).items()})
    assert hashes[0] != hashes[1]
    for found in scores:  # the judge, reading the scorers' instructions, sees the damage
        assert found["validator"] == 1.0
        assert all(found[n] is not None and found[n] < 0.9 for n in ("outcome_coverage", "distractor_quality",
                                                                     "exercise_alignment"))


def test_an_epoch_salt_keys_a_request_apart_and_no_salt_keeps_the_old_key(tmp_path: Any) -> None:
    import hashlib
    import json

    from stay.models import ModelAnswer

    request = ModelRequest(stage="quiz", role="writing", artefact="a", system=(), user="u", output_schema={},
                           output_name="Quiz")
    legacy = hashlib.sha256(json.dumps({"model": "m", "request": request.model_dump(mode="json")},
                                       sort_keys=True).encode()).hexdigest()
    assert request_key(request, "m") == legacy
    assert len({request_key(request, "m"), request_key(request, "m", "0/a/1"), request_key(request, "m", "0/a/2")}) == 3
    plain, salted = RequestCache(tmp_path), RequestCache(tmp_path, salt="0/a/2")
    plain.put(request, "m", ModelAnswer(data={"x": 1}, model="m"))
    assert salted.get(request, "m") is None and plain.get(request, "m") is not None
    assert request.user == "u"  # the salt never reaches the prompt
