"""`stay evals calibrate` on the shipped gold set, and `compare` showing each judge's kappa and
gating only on a calibrated one. The judges are scripted (``stay.testing.ScriptedJudge``): one
answers by the gold labels, in each scorer's own answer schema, one always says "fine"."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stay.cli import main
from stay.models import ModelRequest
from stay.scoring import DistractorQuality, OfflineJudge
from stay.scoring._judges import GoldItem, judged_scorers, load_gold
from stay.testing import ScriptedJudge
from tests.conftest import ROOT, SAMPLE
from tests.scoring.reports import make_report, steady

GOLD = ROOT / "evals" / "gold"
GOLD_SET = load_gold(GOLD)
GOLD_JUDGES = sorted({item.judge for item in GOLD_SET.items})
PROBLEMS = ("wrong_key", "two_right", "solution_wrong")


def _quote(item: GoldItem) -> str:
    """Words of the item itself (its stem, or its solution's first line): a quote the verdict finds."""
    part = item.inputs.get("quiz_item") or item.inputs.get("exercise") or {}
    return str(part.get("stem") or part.get("solution") or "").splitlines()[0]


# per scorer, its answer schema's reply for "defect" or "fine"
ANSWERS: dict[str, Callable[[bool, GoldItem], dict[str, Any]]] = {
    "answer_key": lambda defect, item: {"problem": next(k for k in item.kinds if k in PROBLEMS) if defect else "none",
                                        "quote": _quote(item), "reason": "by the label"},
    "consistency": lambda defect, item: {"consistent": not defect, "quote": str(item.lesson).splitlines()[0],
                                         "reason": "by the label"},
    "distractor_quality": lambda defect, _item: {"embodies": not defect, "reason": "by the label"},
    "exercise_alignment": lambda defect, _item: {"aligned": not defect, "reason": "by the label"},
    "rubric_specificity": lambda defect, _item: {"distinguishable": not defect, "reason": "by the label"},
}


def _judge(always_fine: bool) -> ScriptedJudge:
    items = {item.id: item for item in GOLD_SET.items}

    def answer(request: ModelRequest) -> dict[str, Any]:
        item = items[request.artefact]
        return ANSWERS[item.judge](item.label == "defect" and not always_fine, item)

    return ScriptedJudge(answer)


def _calibrated(tmp: Path, judge: ScriptedJudge) -> tuple[dict[str, Any], str]:
    output = tmp / "calibration.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("stay.scoring._judges.make_judge", lambda *_args, **_kwargs: judge)
        assert main(["evals", "calibrate", "--gold", str(GOLD), "--output", str(output)]) == 0
    return json.loads(output.read_text()), str(output)


@pytest.fixture(scope="module")
def by_labels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _calibrated(tmp_path_factory.mktemp("labels"), _judge(always_fine=False))[0]




ANSWER_KEY_QUIZ = {"quiz_item": {"stem": None, "type": None, "options": [{"text": None, "correct": None}],
                                  "answer": None, "explanation": None}, "data_files": "dict"}
ANSWER_KEY_EXERCISE = {"exercise": {"task": None, "hints": [], "solution": None}, "data_files": "dict"}
"""answer_key's inputs, as the scorer's interface fixes them (its scorer is checked on a course once merged)."""


def test_the_gold_set_is_large_balanced_and_labelled_by_its_rules() -> None:
    gold = GOLD_SET
    assert len(gold.items) >= 120
    for judge in GOLD_JUDGES:
        defects = sum(item.label == "defect" for item in gold.of(judge))
        assert 0.4 <= defects / len(gold.of(judge)) <= 0.6, judge
    for item in gold.of("answer_key"):  # the interface's inputs; one option marked; a defect names its problem
        quiz, files = item.inputs.get("quiz_item"), item.inputs["data_files"]
        assert _fits(_shape(item.inputs), ANSWER_KEY_QUIZ) or _fits(_shape(item.inputs), ANSWER_KEY_EXERCISE), item.id
        assert all(isinstance(text, str) for text in files.values()), item.id
        assert quiz is None or sum(o["correct"] for o in quiz["options"]) == 1, item.id
        assert (item.label == "defect") == any(k in PROBLEMS for k in item.kinds), item.id


def _shape(value: Any, key: str = "") -> Any:
    """The keys of a JSON value, all the way down (a list by its first mapping's; data files by type only;
    "null" for a null, which an optional field may be)."""
    if isinstance(value, dict) and key != "data_files":
        return {k: _shape(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value if isinstance(v, dict)][:1]
    return type(value).__name__ if key == "data_files" else "null" if value is None else None


def _fits(gold: Any, sent: Any) -> bool:
    """Whether a gold item's shape is one the scorer sends: the same keys all the way down, where
    a null or an empty list fits whatever the field holds when it is not empty."""
    if gold == "null" or (gold == [] and isinstance(sent, list)):
        return True
    if isinstance(gold, dict) and isinstance(sent, dict):
        return gold.keys() == sent.keys() and all(_fits(gold[k], sent[k]) for k in gold)
    if isinstance(gold, list) and isinstance(sent, list):
        return not sent or _fits(gold[0], sent[0])
    return bool(gold == sent or sent == "null")


def test_every_gold_item_has_the_inputs_its_scorer_sends_on_a_course() -> None:
    """What each scorer sends on the sample course, recorded: a gold item's inputs have the same
    shape, so the judge is calibrated on the request a scored course makes."""
    from stay.scoring import score_course

    sent: dict[str, list[Any]] = {}

    def record(request: ModelRequest) -> dict[str, Any]:
        inputs = {k: v for k, v in request.inputs.items() if k != "lesson"}  # the lesson is the shared block
        sent.setdefault(request.stage.removeprefix("judge-"), []).append(_shape(inputs))
        return {}

    score_course(SAMPLE, judged_scorers(ScriptedJudge(record)))
    for item in GOLD_SET.items:
        if item.judge in sent:  # a scorer on this branch (answer_key's and consistency's, once merged)
            assert any(_fits(_shape(item.inputs), shape) for shape in sent[item.judge]), item.id


@pytest.mark.parametrize("judge", GOLD_JUDGES)
def test_a_judge_answering_by_the_labels_has_kappa_one(by_labels: dict[str, Any], judge: str) -> None:
    if judge in by_labels["no_scorer"]:
        pytest.skip(f"no {judge} scorer on this branch: its gold items are calibrated once the scorer is merged")
    entry, gold = by_labels["judges"][judge], GOLD_SET.of(judge)
    assert (entry["kappa"], entry["interval"], entry["wrong"]) == (1.0, [1.0, 1.0], [])
    assert (entry["sensitivity"], entry["specificity"], entry["n"]) == (1.0, 1.0, len(gold))
    assert by_labels["judge"] == _judge(always_fine=False).name and by_labels["gold"]["sha256"] == GOLD_SET.sha256
    assert entry["version"] == next(s.version for s in judged_scorers(OfflineJudge()) if s.name == judge)


def test_a_judge_that_always_says_fine_finds_no_defect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, _path = _calibrated(tmp_path, _judge(always_fine=True))
    gold = GOLD_SET
    calibrated = {name: entry for name, entry in report["judges"].items() if not entry.get("not_run")}
    assert set(calibrated) == set(GOLD_JUDGES) - set(report["no_scorer"])
    for name, entry in calibrated.items():
        defects = {item.id for item in gold.of(name) if item.label == "defect"}
        assert (entry["sensitivity"], entry["specificity"], entry["kappa"]) == (0.0, 1.0, 0.0)
        assert {miss["id"] for miss in entry["wrong"]} == defects
    out = capsys.readouterr().out
    assert all(f"wrong: {name} " in out for name in calibrated)


def test_offline_it_says_which_judges_it_could_not_run_and_calibrates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "calibration.json"
    assert main(["evals", "calibrate", "--backend", "offline", "--gold", str(GOLD), "--output", str(output)]) == 0
    names = sorted(s.name for s in judged_scorers(OfflineJudge()))
    out = capsys.readouterr().out
    assert f"could not run: {', '.join(names)} (not judged (offline)" in out and "nothing calibrated" in out
    report = json.loads(output.read_text())
    assert sorted(report["judges"]) == names
    assert all(e["kappa"] is None and e["not_run"].startswith("not judged") for e in report["judges"].values())


@pytest.mark.parametrize(("damage", "says"), [
    (lambda text: text.replace("label: fine", "label: maybe", 1), "item rs-sql-correctness: field 'label'"),
    (lambda text: text.replace("judge: rubric_specificity", "judge: answer_key", 1),
     "item rs-sql-correctness: field 'judge'"),
    (lambda text: text.replace("id: rs-sql-quality", "id: rs-sql-correctness", 1), "item rs-sql-correctness: field 'id'"),
    (lambda text: text + "\n  - [unclosed\n", "not a gold file"),
])
def test_a_damaged_gold_file_is_one_line_naming_file_item_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Callable[[str], str], says: str) -> None:
    gold = tmp_path / "gold"
    shutil.copytree(GOLD, gold)
    target = gold / "rubric_specificity.yaml"
    target.write_text(damage(target.read_text()))
    assert main(["evals", "calibrate", "--gold", str(gold), "--output", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(target) in err and says in err and "Traceback" not in err


JUDGE = "model:claude-sonnet-5-5"
SCORERS = ("distractor_quality", "validator")


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A baseline and a candidate whose distractor_quality dropped by a quarter (the validator held)."""
    versions = {"distractor_quality": DistractorQuality.version, "validator": 1}
    paths = []
    for label, drop in (("baseline", None), ("candidate", {"distractor_quality": 0.25})):
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(make_report(steady(scorers=SCORERS, drop=drop), label=label, versions=versions)))
        paths.append(path)
    yield paths[0], paths[1]


def _calibration(path: Path, kappa: float, interval: list[float], judge: str = JUDGE) -> None:
    path.write_text(json.dumps({"calibration": 1, "judge": judge, "gold": {"sha256": "0" * 64}, "judges": {
        "distractor_quality": {"version": DistractorQuality.version, "kappa": kappa, "interval": interval}}}))


def test_compare_shows_the_kappa_and_gates_only_on_a_calibrated_judge(
        runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = map(str, runs)
    _calibration(tmp_path / "calibration.json", 0.84, [0.71, 0.93])  # beside the candidate: read by default
    assert main(["evals", "compare", base, cand]) == 1
    out = capsys.readouterr().out
    assert "judge: kappa 0.84 [0.71, 0.93]" in out and "regression: distractor_quality" in out
    validator = next(line for line in out.splitlines() if line.startswith("validator "))
    assert "judge:" not in validator  # no judge to calibrate: it gates as before
    assert f"calibration: {tmp_path / 'calibration.json'} (judge {JUDGE}" in out

    _calibration(tmp_path / "low.json", 0.55, [0.40, 0.70])
    page = tmp_path / "compare.html"
    assert main(["evals", "compare", base, cand, "--calibration", str(tmp_path / "low.json"), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("distractor_quality"))
    assert "not gating: distractor_quality worse, but its judge is not calibrated to gate" in out
    assert " worse " in row and "judge: kappa 0.55 [0.40, 0.70]; does not gate: below 0.7" in row  # verdict stands
    assert "judge: kappa 0.55 [0.40, 0.70]; does not gate: below 0.7" in page.read_text()

    _calibration(tmp_path / "other.json", 0.95, [0.90, 0.99], judge="model:another-judge")
    assert main(["evals", "compare", base, cand, "--calibration", str(tmp_path / "other.json")]) == 0
    assert "judge: uncalibrated; does not gate" in capsys.readouterr().out
    assert main(["evals", "compare", base, cand, "--calibration", str(tmp_path / "other.json"),
                 "--allow", "uncalibrated"]) == 1
    assert "allowed: gating by --allow uncalibrated: distractor_quality (judge uncalibrated)" in capsys.readouterr().out
