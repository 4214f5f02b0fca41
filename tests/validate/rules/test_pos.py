"""The pos rules (`stay/validate/rules/pos.py`) on their fixtures (`tests/fixtures/rules/pos.py`),
where they stay silent, and the spread of correct positions in the sample and in an offline build.

Positions are read here from the quiz files themselves, not through the rules, so a rule
that never fired would not make these tests pass."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from syrupy.assertion import SnapshotAssertion

from stay.validate import RULES, validate_course
from tests.conftest import ROOT, SAMPLE
from tests.fixtures.rules import codes_of, make_fixture
from tests.fixtures.rules._edit import edit_quiz
from tests.fixtures.rules.pos import correct_at, lessons_of
from tests.validate.rules._fires import assert_fires_on_its_fixture

HTTP = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"
FIX = "vary which option is correct"


def positions(course: Path) -> dict[str, dict[str, list[int]]]:
    """module dir -> quiz file name -> the 0-based position of each mcq item's correct option."""
    found: dict[str, dict[str, list[int]]] = {}
    for path in sorted((course / "modules").glob("*/*.quiz.yaml")):
        items = yaml.safe_load(path.read_text(encoding="utf-8"))["items"]
        found.setdefault(path.parent.name, {})[path.name] = [
            [option["correct"] for option in item["options"]].index(True) for item in items if item["type"] == "mcq"]
    return found


def pos_defects(course: Path) -> list[Any]:
    return list(validate_course(course, select="pos").defects)


def assert_spread(course: Path) -> Counter[int]:
    """No quiz, and no module, with two or more mcq items puts them all in one position."""
    everywhere: Counter[int] = Counter()
    for module, quizzes in positions(course).items():
        for name, found in quizzes.items():
            assert len(found) < 2 or len(set(found)) > 1, (name, found)
            everywhere.update(found)
        in_module = [p for found in quizzes.values() for p in found]
        assert len(in_module) < 2 or len(set(in_module)) > 1, (module, in_module)
    return everywhere


@pytest.mark.parametrize("code", codes_of("pos"))
def test_rule_fires_on_its_fixture(code: str, tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    assert_fires_on_its_fixture(code, tmp_path, snapshot)


def test_a_quiz_of_all_b_is_named_with_its_letter_and_the_fix(tmp_path: Path) -> None:
    course = make_fixture("pos001", tmp_path)
    quiz = next(name for name, found in positions(course)[_module_dir(course, "m01")].items()
                if name.startswith("m01-l01."))
    (defect,) = pos_defects(course)
    assert (defect.code, defect.path.rpartition("/")[2], defect.subject) == ("pos001", quiz, "m01-l01")
    n = len(positions(course)[_module_dir(course, "m01")][quiz])
    assert defect.message == f"every correct answer of its {n} mcq items is option B: {FIX}"


def test_a_module_of_all_c_across_its_quizzes_is_named_with_its_quizzes(tmp_path: Path) -> None:
    course = make_fixture("pos002", tmp_path)
    module = _module_dir(course, "m01")
    quizzes = positions(course)[module]
    found = {d.code: d for d in pos_defects(course) if d.code == "pos002"}
    defect = found["pos002"]
    assert (defect.path, defect.subject) == (f"modules/{module}", "m01")
    n = sum(len(p) for p in quizzes.values())
    assert defect.message == f"every correct answer of its {n} mcq items ({', '.join(quizzes)}) is option C: {FIX}"
    # each of the module's quizzes with two or more mcq items is named by pos001 too, and no other module
    assert sorted(d.path for d in pos_defects(course) if d.code == "pos001") == sorted(
        f"modules/{module}/{name}" for name, p in quizzes.items() if len(p) >= 2)


def test_a_module_of_one_mcq_item_per_quiz_all_at_c_is_the_modules_finding_alone(tmp_path: Path) -> None:
    """No quiz shows a pattern with one item, so pos001 evaluates none of m01's; pos002 fires."""
    course = make_fixture("pos002", tmp_path)
    for lesson_id in lessons_of(course, "m01"):
        edit_quiz(course, lesson_id, lambda d: d.__setitem__("items", _one_mcq(d["items"])))
    module = _module_dir(course, "m01")
    assert all(len(found) == 1 for found in positions(course)[module].values())
    (defect,) = pos_defects(course)
    assert (defect.code, defect.path) == ("pos002", f"modules/{module}") and "is option C" in defect.message


def test_silent_when_positions_vary_across_a_module_whose_quizzes_are_each_uniform(tmp_path: Path) -> None:
    """Each quiz of m01 put in one position of its own: every quiz fires, the module does not."""
    course = make_fixture("pos002", tmp_path / "made")  # all C, then each lesson moved to its own letter
    for position, lesson_id in enumerate(lessons_of(course, "m01")):
        correct_at(course, lesson_id, position)
    codes = Counter(d.code for d in pos_defects(course))
    assert codes == Counter({"pos001": len(lessons_of(course, "m01"))})


def test_silent_on_the_sample_whose_positions_vary(tmp_path: Path) -> None:
    report = validate_course(SAMPLE, select="pos")
    assert not report.defects
    quizzes = [found for module in positions(SAMPLE).values() for found in module.values()]
    assert report.evaluated["pos001"] == sum(len(found) >= 2 for found in quizzes)
    assert report.evaluated["pos002"] == sum(sum(bool(f) for f in module.values()) >= 2
                                             for module in positions(SAMPLE).values())


def test_silent_when_a_quiz_and_its_module_hold_one_mcq_item(tmp_path: Path) -> None:
    """m01 cut to one mcq item, all at A: one item is no pattern, so nothing is evaluated there."""
    course = make_fixture("pos002", tmp_path)  # every m01 item at C, which both rules report
    first, *rest = lessons_of(course, "m01")
    edit_quiz(course, first, lambda d: d.__setitem__("items", _one_mcq(d["items"])))
    for lesson_id in rest:
        edit_quiz(course, lesson_id, lambda d: d.__setitem__("items", [i for i in d["items"] if i["type"] != "mcq"]))
    module = _module_dir(course, "m01")
    assert sum(len(found) for found in positions(course)[module].values()) == 1
    report = validate_course(course, select="pos")
    assert not [d for d in report.defects if d.path.startswith(f"modules/{module}")]
    assert report.evaluated["pos002"] == len(positions(course)) - 1  # every module but m01


def test_the_sample_spreads_its_correct_positions() -> None:
    spread = assert_spread(SAMPLE)
    assert len(spread) > 1


def test_an_offline_build_spreads_its_correct_positions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stay.pipeline import build_course

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    built = build_course(HTTP, courses_dir=tmp_path, yes=True, progress=lambda _line: None)
    spread = assert_spread(built.course_dir)
    assert len(spread) > 1 and sum(spread.values()) > 1
    assert built.validation is not None and not [d for d in built.validation.defects if d.code in _pos_codes()]


def _pos_codes() -> list[str]:
    return [code for code in RULES if code.startswith("pos")]


def _module_dir(course: Path, module_id: str) -> str:
    return next(p.name for p in (course / "modules").iterdir() if p.name.startswith(f"{module_id}-"))


def _one_mcq(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items with every mcq item but the first dropped."""
    first = next(i for i in items if i["type"] == "mcq")
    return [i for i in items if i["type"] != "mcq" or i is first]


def test_the_quiz_prompt_asks_for_what_the_rules_check() -> None:
    """The quiz stage's prompt asks for the fix the pos rules' messages name, so a model is
    told up front what a repair would later be told."""
    from stay.stages import Prompts

    prompt = (Path(Prompts.load().directory) / "quiz.md").read_text(encoding="utf-8").lower()
    fixes = {RULES[code].template.rpartition(": ")[2] for code in _pos_codes()}
    assert fixes == {FIX} and FIX in " ".join(prompt.split())


def test_the_docs_table_of_stays_rules_is_the_registrys() -> None:
    """docs/validator.md lists every stay-group rule with its severity, owner ("file's stage"
    for a rule owned by the file it names, as the contract's table writes it) and message."""
    from stay.validate import Group

    section = (ROOT / "docs" / "validator.md").read_text(encoding="utf-8").split("### stay's own rules", 1)[1]
    rows = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in section.split("\n## ", 1)[0].splitlines()
            if line.startswith("| ") and not line.startswith(("| code", "| ---"))]
    documented = [(code, severity, None if owner.startswith("file") else owner, message.strip("`"))
                  for code, severity, owner, _per, message in rows]
    assert documented == [(r.code, str(r.severity), r.owner, r.template) for r in RULES.values() if r.group is Group.STAY]
