"""The corpus of broken and mismatched run files (issue 22, item 3): each made from one good
pair of runs by a named mutation, written to disk and given to `stay evals compare`, and
each must get what the table says: refused (exit 2), an invalid run (exit 5), not a report
(exit 2, one `error:` line), a warning (exit unchanged), accepted with what ``--allow``
accepted named, or accepted. Always one line, never an internal error, naming the file and
the field.

``tests/scoring/test_runs_check.py`` holds one broken run per registered check; this
corpus holds the variants, and the shapes a run file can break in before any check runs.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stay.cli import main
from stay.errors import EXIT_OK, InvalidRun, RunsNotComparable, UsageError, exit_code
from stay.scoring._defaults import FAILURE_GAP, MAX_FAILED
from stay.scoring._report import failed_entry
from stay.testing import InjectedFault
from tests.scoring.test_runs_check import first, pair

Doc = dict[str, Any]
REFUSED, INVALID, NOT_A_REPORT = (exit_code(RunsNotComparable("")), exit_code(InvalidRun("")),
                                  exit_code(UsageError("")))
WARNED, ALLOWED, ACCEPTED = "warned", "allowed", "accepted"
"""Outcomes that keep the comparison's own exit code (no regression, or the gate firing)."""


@dataclass(frozen=True)
class Case:
    name: str
    mutate: Callable[[Doc, Doc], None]
    """Breaks the pair (baseline, candidate) in place."""
    outcome: int | str
    words: str
    """What the one line must say: the field, and what is wrong with it."""
    broken: str = "candidate"
    """The run the line must name."""
    args: tuple[str, ...] = ()


def builds(report: Doc) -> list[Doc]:
    return [build for entry in report["briefs"].values() for build in entry["builds"]]


def item(report: Doc) -> Doc:
    found: Doc = first(report)[0]["scorers"]["a"]["items"][0]
    return found


def score(value: object) -> Callable[[Doc, Doc], None]:
    return lambda _base, cand: item(cand).update(score=value)


def candidate(**changes: Any) -> Callable[[Doc, Doc], None]:
    return lambda _base, cand: cand.update(changes)


def dropped(key: str) -> Callable[[Doc, Doc], None]:
    return lambda _base, cand: cand.pop(key)


def same_epoch_twice(report: Doc) -> None:
    first(report)[1] = copy.deepcopy(first(report)[0])


def same_course_and_seed(_base: Doc, cand: Doc) -> None:
    first(cand)[1].update(seed=first(cand)[0]["seed"], course_sha256=first(cand)[0]["course_sha256"])


def one_more_build(_base: Doc, cand: Doc) -> None:
    extra = copy.deepcopy(first(cand)[-1])
    extra.update(epoch=extra["epoch"] + 1, seed=f"7/brief-0/{extra['epoch'] + 1}", course_sha256="f" * 64)
    first(cand).append(extra)


def seeded(seed: str) -> Callable[[Doc, Doc], None]:
    return lambda _base, cand: first(cand)[0].update(seed=seed)


def judged_by(judge: str) -> Callable[[Doc, Doc], None]:
    return lambda _base, cand: first(cand)[0]["scorers"]["a"].update(judge=judge)


def knobs(*values: float, header: float | None) -> Callable[[Doc, Doc], None]:
    def mutate(_base: Doc, cand: Doc) -> None:
        for number, build in enumerate(builds(cand)):
            build["quality"] = {"distractors": values[number % len(values)]}
        cand["quality"] = {} if header is None else {"distractors": header}
    return mutate


def failed_build(_base: Doc, cand: Doc) -> None:
    build = first(cand)[0]
    first(cand)[0] = failed_entry(InjectedFault("injected error in stage outcomes"), epoch=build["epoch"],
                                  seed=build["seed"])


def failed_build_with_scores(base: Doc, cand: Doc) -> None:
    failed_build(base, cand)
    first(cand)[0]["scorers"] = copy.deepcopy(first(cand)[1]["scorers"])


def judge_failed(share: float) -> Callable[[Doc, Doc], None]:
    def mutate(_base: Doc, cand: Doc) -> None:
        every = [i for build in builds(cand) for i in build["scorers"]["a"]["items"]]
        for found in every[:math.ceil(len(every) * share)]:
            found.update(score=None, failure="unparseable")
    return mutate


def no_builds(_base: Doc, cand: Doc) -> None:
    cand["briefs"]["brief-0"]["builds"] = []


def a_against_a(base: Doc, cand: Doc) -> None:
    cand.clear()
    cand.update(copy.deepcopy(base), label="candidate")


def same_prompts(base: Doc, cand: Doc) -> None:
    cand["prompts"] = copy.deepcopy(base["prompts"])


def rescored_twice(_base: Doc, cand: Doc) -> None:
    for build in first(cand)[:2]:  # `stay evals score e01/x e02/x` on one course: no seed recorded
        build.update(seed=None, course_sha256=first(cand)[0]["course_sha256"])


def seed_ignored(_base: Doc, cand: Doc) -> None:
    for build in first(cand):  # the offline backend without --stay-quality: one course per brief
        build["course_sha256"] = first(cand)[0]["course_sha256"]


def other_models(_base: Doc, cand: Doc) -> None:
    cand["models"] = {"generate": "claude-opus-5-5"}


def in_build(**changes: Any) -> Callable[[Doc, Doc], None]:
    return lambda _base, cand: first(cand)[0].update(changes)


def without_score(_base: Doc, cand: Doc) -> None:
    item(cand).pop("score")


def without_scorers(_base: Doc, cand: Doc) -> None:
    first(cand)[0].pop("scorers")


EPOCHS = len(first(pair()[1]))
SEEDS = (f"7/brief-1/{1}", f"7/brief-0/{2}")
"""A seed of another brief, and of another epoch, for the candidate's first build (brief-0, epoch 1)."""
GAPPED = (FAILURE_GAP + MAX_FAILED) / 2
"""A judge-failure share apart from the baseline's by more than the warning's gap, within the limit."""

CASES = (
    # refused (exit 2): a run that is not what its header says
    Case("same-brief-epoch-twice", lambda _b, c: same_epoch_twice(c), REFUSED,
         "briefs.brief-0.builds[1]: epoch 1 of brief brief-0 again"),
    Case("same-brief-epoch-twice-in-baseline", lambda b, _c: same_epoch_twice(b), REFUSED,
         "briefs.brief-0.builds[1]: epoch 1 of brief brief-0 again", broken="baseline"),
    Case("same-course-and-seed-twice", same_course_and_seed, REFUSED, ".course_sha256: the same course and seed"),
    Case("fewer-builds-than-epochs", lambda _b, c: first(c).pop(), REFUSED,
         f"briefs.brief-0.builds: {EPOCHS - 1} builds, but the run's epochs is {EPOCHS}"),
    Case("more-builds-than-epochs", one_more_build, REFUSED,
         f"briefs.brief-0.builds: {EPOCHS + 1} builds, but the run's epochs is {EPOCHS}"),
    Case("epochs-zero", candidate(epochs=0), REFUSED, f"{EPOCHS} builds, but the run's epochs is 0"),
    Case("score-nan", score(float("nan")), REFUSED, "items[0].score: nan is not finite"),
    Case("score-infinity", score(float("inf")), REFUSED, "items[0].score: inf is not finite"),
    Case("score-minus-infinity", score(float("-inf")), REFUSED, "items[0].score: -inf is not finite"),
    Case("score-below-zero", score(-0.1), REFUSED, "items[0].score: -0.1 is outside [0, 1]"),
    Case("score-above-one", score(1.5), REFUSED, "items[0].score: 1.5 is outside [0, 1]"),
    Case("score-a-string", score("0.5"), REFUSED, "items[0].score: '0.5' is not a number"),
    Case("score-a-boolean", score(True), REFUSED, "items[0].score: True is not a number"),
    Case("score-null-without-a-failure", score(None), REFUSED,
         "items[0].score: null, and the item records no judge failure"),
    Case("other-generation-models", other_models, REFUSED, "models: generation models differ from baseline"),
    Case("seeded-under-another-brief", seeded(SEEDS[0]), REFUSED,
         f"builds[0].seed: '{SEEDS[0]}' was seeded for brief brief-1 epoch 1, not brief brief-0 epoch 1"),
    Case("seeded-under-another-epoch", seeded(SEEDS[1]), REFUSED,
         f"builds[0].seed: '{SEEDS[1]}' was seeded for brief brief-0 epoch 2, not brief brief-0 epoch 1"),
    Case("scorer-judge-not-the-header", judged_by("model:claude-haiku-5"), REFUSED,
         "scorers.a.judge: 'model:claude-haiku-5', but the header says judge 'model'"),
    Case("header-judge-model-not-the-scorers", candidate(judge_model="claude-haiku-5"), REFUSED,
         "scorers.a.judge: 'model:claude-sonnet-5-5', but the header says judge 'model', judge_model 'claude-haiku-5'"),
    Case("header-judge-offline-scorers-a-model", candidate(judge="offline heuristic judge (not a model)",
                                                           judge_model=None), REFUSED,
         "but the header says judge 'offline heuristic judge (not a model)'"),
    Case("built-by-another-backend", lambda _b, c: [b.update(built_by=["offline"]) for b in builds(c)], REFUSED,
         "briefs.*.builds.built_by: built by offline, baseline"),
    Case("one-build-by-another-backend", in_build(built_by=["offline"]), REFUSED,
         "briefs.*.builds.built_by: built by anthropic and offline"),
    Case("builds-under-two-quality-knobs", knobs(0.2, 0.0, header=0.2), REFUSED,
         "builds[1].quality: built under quality knob"),
    Case("header-quality-not-the-builds", knobs(0.2, header=None), REFUSED,
         "quality: the header says knob {}, but its builds were made under"),
    # an invalid run (exit 5): it cannot be trusted until it is rebuilt or rescored
    Case("a-failed-build", failed_build, INVALID,
         "briefs.brief-0.builds[0].failed: epoch 1 of brief brief-0 failed (InjectedFault: injected error"),
    Case("judge-failed-over-the-limit", judge_failed(MAX_FAILED * 2), INVALID, "judge items failed"),
    Case("a-brief-with-no-builds", no_builds, INVALID, "scored nothing in brief brief-0"),
    # warned on (exit unchanged): legal, rarely meant
    Case("a-against-a", a_against_a, WARNED, "briefs: the same builds and scores as baseline"),
    Case("same-prompts", same_prompts, WARNED, "prompts.sha256: built with the same prompt files"),
    Case("judge-failure-rates-apart", judge_failed(GAPPED), WARNED, "failures.a: "),
    Case("one-course-rescored-at-two-epochs", rescored_twice, WARNED,
         "briefs.*.builds.course_sha256: 1 of 6 briefs have the same course at two epochs"),
    Case("a-generator-that-ignores-the-seed", seed_ignored, WARNED,
         "briefs.*.builds.course_sha256: 1 of 6 briefs have the same course at two epochs"),
    # accepted, with what --allow accepted named
    Case("other-models-allowed", other_models, ALLOWED, "generate claude-sonnet-5-5 -> claude-opus-5-5",
         args=("--allow", "models")),
    Case("built-by-another-backend-allowed", in_build(built_by=["offline"]), ALLOWED,
         "built by anthropic and offline", args=("--allow", "backend")),
    Case("no-epochs-recorded", candidate(epochs=None), ACCEPTED, "verdict"),  # an older report: once a crash
    # not a report (exit 2): the shape breaks before any check runs
    Case("epochs-a-string", candidate(epochs=str(EPOCHS)), NOT_A_REPORT, "field 'epochs'"),
    Case("epochs-a-float", candidate(epochs=EPOCHS + 0.5), NOT_A_REPORT, "field 'epochs'"),
    Case("epochs-a-boolean", candidate(epochs=True), NOT_A_REPORT, "field 'epochs'"),
    Case("epochs-negative", candidate(epochs=-1), NOT_A_REPORT, "field 'epochs'"),
    Case("no-briefs", dropped("briefs"), NOT_A_REPORT, "field 'briefs'"),
    Case("briefs-a-list", candidate(briefs=[]), NOT_A_REPORT, "field 'briefs'"),
    Case("builds-not-a-list", lambda _b, c: c["briefs"]["brief-0"].update(builds={}), NOT_A_REPORT,
         "field 'briefs.brief-0.builds'"),
    Case("a-build-without-scorers", without_scorers, NOT_A_REPORT, "field 'briefs.brief-0.builds.0.scorers'"),
    Case("an-item-without-a-score", without_score, NOT_A_REPORT,
         "field 'briefs.brief-0.builds.0.scorers.a.items.0.score'"),
    Case("an-epoch-a-string", in_build(epoch="1"), NOT_A_REPORT, "field 'briefs.brief-0.builds.0.epoch'"),
    Case("a-failed-build-with-scores", failed_build_with_scores, NOT_A_REPORT,
         "field 'briefs.brief-0.builds.0': value error, a failed build has no scorers"),
    Case("a-failure-of-two-lines", in_build(failed={"error": "X", "message": "one\ntwo"}, scorers={}), NOT_A_REPORT,
         "field 'briefs.brief-0.builds.0.failed.message'"),
    Case("a-scorer-version-a-string", candidate(scorers={"a": "2", "b": 2}), NOT_A_REPORT, "field 'scorers.a'"),
    Case("no-version", dropped("version"), NOT_A_REPORT, "an eval report of version None"),
    # once internal errors: a field the run checks read, of a type they cannot use
    Case("a-course-hash-a-list", in_build(course_sha256=["x"]), NOT_A_REPORT,
         "field 'briefs.brief-0.builds.0.course_sha256'"),
    Case("a-seed-a-mapping", in_build(seed={"run": 7}), NOT_A_REPORT, "field 'briefs.brief-0.builds.0.seed"),
    Case("a-builder-a-string", in_build(built_by="anthropic"), NOT_A_REPORT,
         "field 'briefs.brief-0.builds.0.built_by'"),
    Case("prompts-a-string", candidate(prompts="prompts"), NOT_A_REPORT, "field 'prompts'"),
    Case("prompt-hashes-a-list", candidate(prompts={"sha256": ["x"]}), NOT_A_REPORT, "field 'prompts.sha256'"),
    # once accepted: a build's knob that is not a knob
    Case("a-build-knob-a-string", in_build(quality="distractors"), NOT_A_REPORT,
         "field 'briefs.brief-0.builds.0.quality'"),
)


def test_the_corpus_is_the_issues_thirty_three_files_at_least() -> None:
    assert len({case.name for case in CASES}) == len(CASES) >= 33


@pytest.mark.sweep
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_broken_run_file_gets_what_the_table_says(case: Case, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = pair()
    case.mutate(base, cand)
    paths = {"baseline": tmp_path / "baseline.json", "candidate": tmp_path / "candidate.json"}
    for path, document in zip(paths.values(), (base, cand), strict=True):
        path.write_text(json.dumps(document), encoding="utf-8")
    code = main(["evals", "compare", str(paths["baseline"]), str(paths["candidate"]), *case.args])
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in out + err
    if isinstance(case.outcome, int):  # refused: one line on stderr, naming the file and the field
        assert code == case.outcome and out == "", (code, out, err)
        assert err.count("\n") == 1 and err.startswith(("refused: " if code != NOT_A_REPORT else "error: ",
                                                        "refused: "))
        assert str(paths[case.broken]) in err and case.words in err, err
        return
    assert code in (EXIT_OK, 1) and err == "", (code, err)  # the comparison's own verdict
    if case.outcome == WARNED:
        warned = [line for line in out.splitlines() if line.startswith("warning: ")]
        assert any(str(paths[case.broken]) in line and case.words in line for line in warned), out
    else:
        assert "warning: " not in out and case.words in out, out
