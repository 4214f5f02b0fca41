"""The correctness scorers: answer_key and consistency judge what they are shown and keep
only findings quoted from it; answer_cues counts the cues that give a key away, at a false
positive rate the statistic promises, simulated here on fair quizzes."""

from __future__ import annotations

import random
from typing import Any

from stay.models import ModelRequest
from stay.scoring import AnswerKey, Consistency, CourseOnDisk
from stay.scoring.scorers import ALPHA, cues
from stay.testing import ScriptedJudge
from tests.conftest import SAMPLE


def test_a_quoted_wrong_key_is_a_defect_and_an_unquoted_one_is_dropped() -> None:
    course = CourseOnDisk.load(SAMPLE)
    mcq = next(i for lsn in course.lessons for i in (lsn.quiz.items if lsn.quiz else []) if i.options)
    correct = next(o.text for o in mcq.options or [] if o.correct)

    def answer(request: ModelRequest) -> dict[str, Any]:
        assert set(request.inputs) == {"quiz_item" if "quiz_item" in request.inputs else "exercise", "data_files",
                                       "lesson"}
        if request.artefact == mcq.id:  # the planted finding: the key, quoted from the item
            return {"problem": "wrong_key", "quote": correct, "reason": "the other option is right"}
        return {"problem": "two_right", "quote": "words the item never says", "reason": "invented"}

    judge = ScriptedJudge(answer)
    result = AnswerKey(judge).score(course)
    items = {item.item: item for item in result.items}
    asked = [i for lsn in course.lessons for i in (lsn.quiz.items if lsn.quiz else []) if i.options]
    exercises = [e for lsn in course.lessons for e in (lsn.exercises.exercises if lsn.exercises else [])]
    assert len(items) == len(judge.requests) == len(asked) + len(exercises)
    assert items[mcq.id].score == 0.0 and items[mcq.id].quote == correct
    assert all(i.score == 1.0 and i.reason.startswith("unquoted finding dropped: ") for n, i in items.items()
               if n != mcq.id)


def test_consistency_judges_each_lesson_with_its_plan_exercises_quiz_and_data() -> None:
    course = CourseOnDisk.load(SAMPLE)
    lessons = [lsn for lsn in course.lessons if lsn.content]

    def answer(request: ModelRequest) -> dict[str, Any]:
        assert set(request.inputs) == {"plan", "exercises", "quiz", "data_files", "lesson"}
        body = request.inputs["lesson"]
        sentence = next(line for line in body.splitlines() if len(line.split()) > 6)
        return {"consistent": False, "quote": sentence, "reason": "the plan says otherwise"}

    result = Consistency(ScriptedJudge(answer)).score(course)
    assert [i.item for i in result.items] == sorted(lsn.id for lsn in lessons) and result.score == 0.0
    named = [lsn for lsn in lessons if course.data_files(lsn.content.body if lsn.content else "")]
    assert named  # the sample names its running example's files, and the judge is shown them
    assert all(course.example and course.data_files(lsn.content.body if lsn.content else "") for lsn in named)


def test_answer_cues_fail_a_fair_quiz_at_most_at_their_rate_and_catch_the_longest_key() -> None:
    rng = random.Random(36)
    draws, found = 300, {"longest option": 0, "same position": 0}
    for _ in range(draws):  # fair quizzes: lengths drawn alike for every option, the key placed at random
        items = []
        for _item in range(rng.randint(10, 40)):
            k = rng.choice((3, 4))
            items.append(([("x" * rng.randint(20, 60)) for _ in range(k)], rng.randrange(k)))
        for cue, (score, _why) in cues(items).items():
            found[cue] += score == 0.0
    # ALPHA bounds each cue's rate; three times it leaves room for the draws' noise (binomial sd ~ 0.006)
    assert all(n / draws <= 3 * ALPHA for n in found.values()), found
    keyed = [(["short", "a bit longer", "the longest option of them all"], 2)] * 10
    assert {cue: score for cue, (score, _why) in cues(keyed).items()} == {"longest option": 0.0,
                                                                          "same position": 0.0}
