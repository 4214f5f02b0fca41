"""The prc rules (`stay/validate/rules/prc.py`) on their fixtures (`tests/fixtures/rules/prc.py`),
at their bounds, on the sample, on every example brief's offline build, and in the prompts.

Minutes are read here from the course files themselves (``sums``), not through the rules,
so a rule that never fired, or summed the wrong files, would not make these tests pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from stay.artefacts import DEFAULT_LIMITS
from stay.validate import RULES, validate_course
from tests.conftest import ROOT, SAMPLE
from tests.fixtures.rules import codes_of, make_fixture
from tests.fixtures.rules.prc import capstone_minutes, exercise_minutes, house, sums
from tests.validate.rules._fires import assert_fires_on_its_fixture

BRIEFS = sorted((ROOT / "examples" / "briefs").glob("*.yaml"))


def prc(course: Path) -> list[tuple[str, str, str]]:
    return [(d.code, d.path, d.message) for d in validate_course(course, select="prc").defects]


@pytest.mark.parametrize("code", codes_of("prc"))
def test_rule_fires_on_its_fixture(code: str, tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    assert_fires_on_its_fixture(code, tmp_path, snapshot)


def test_a_course_past_its_time_fails_naming_the_three_sums(tmp_path: Path) -> None:
    course = make_fixture("prc001", tmp_path)
    available, lessons, exercises, capstone = sums(course)
    assert lessons + exercises + capstone == available + 1
    assert prc(course) == [("prc001", "project.yaml",
                            f"lessons ({lessons} minutes), exercises ({exercises}) and the capstone ({capstone}) "
                            f"total {available + 1} minutes, past the brief's {available}: shorten the capstone "
                            "or the exercises")]


def test_a_course_that_fills_its_time_exactly_passes(tmp_path: Path) -> None:
    course = make_fixture("prc001", tmp_path)
    available, lessons, exercises, _capstone = sums(course)
    capstone_minutes(course, available - lessons - exercises)
    assert prc(course) == []
    assert validate_course(course, select="prc").evaluated["prc001"] == 1


def test_exercises_and_capstone_at_their_bounds_pass_and_one_past_warns(tmp_path: Path) -> None:
    course = make_fixture("prc002", tmp_path)
    lo, hi = house("exercise", "min_minutes"), house("exercise", "max_minutes")
    for minutes, fired in ((lo, False), (hi, False), (hi + 1, True), (lo - 1, True)):
        exercise_minutes(course, "m01-l01", minutes)
        capstone_minutes(course, house("capstone", "min_minutes"))  # the total stays inside the time
        found = [m for code, _path, m in prc(course) if code == "prc002"]
        assert found == ([f"exercise m01-l01-e1 is {minutes} minutes; house style allows {lo} to {hi}"]
                         if fired else []), minutes
    lo, hi = house("capstone", "min_minutes"), house("capstone", "max_minutes")
    for minutes, fired in ((lo, False), (hi + 1, True)):
        capstone_minutes(course, minutes)
        found = [m for code, _path, m in prc(course) if code == "prc003"]
        assert found == ([f"the capstone is {minutes} minutes; house style allows {lo} to {hi}"] if fired else [])


def test_missing_minutes_warn_and_count_as_none(tmp_path: Path) -> None:
    """The contract lets a file leave minutes out; stay's group names each one that does."""
    from tests.fixtures.rules._edit import edit_yaml, lesson_file

    course = make_fixture("prc002", tmp_path)
    edit_yaml(lesson_file(course, "m01-l01", ".exercises.yaml"), lambda d: d["exercises"][0].pop("minutes"))
    edit_yaml(course / "project.yaml", lambda d: d.pop("minutes"))
    codes = [(code, message.split(";")[0]) for code, _path, message in prc(course)]
    assert codes == [("prc002", "exercise m01-l01-e1 is no minutes"), ("prc003", "the capstone is no minutes")]


def test_silent_on_the_sample() -> None:
    report = validate_course(SAMPLE, select="prc")
    assert not report.defects
    available, lessons, exercises, capstone = sums(SAMPLE)
    assert 0 < lessons + exercises + capstone <= available and exercises and capstone
    import yaml

    count = sum(len(yaml.safe_load(path.read_text(encoding="utf-8"))["exercises"])
                for path in SAMPLE.glob("modules/*/*.exercises.yaml"))
    assert count and report.evaluated["prc002"] == count and report.evaluated["prc003"] == 1


@pytest.mark.sweep
@pytest.mark.parametrize("brief", BRIEFS, ids=[b.stem for b in BRIEFS])
def test_an_offline_build_fits_its_practice_in_the_brief_time(brief: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Every example brief's offline build: audience.yaml's budget is the lessons' share, the
    lessons fit it, and lessons, exercises and capstone together fit the brief's time."""
    import yaml

    from stay.pipeline import build_course

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780000000")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    built = build_course(brief, courses_dir=tmp_path, yes=True, progress=lambda _line: None)
    course = built.course_dir
    available, lessons, exercises, capstone = sums(course)
    budget = yaml.safe_load((course / "audience.yaml").read_text(encoding="utf-8"))["time_budget_minutes"]
    assert budget == available - available * house("course", "practice_percent") // 100
    assert lessons <= budget and exercises > 0 and capstone > 0
    assert lessons + exercises + capstone <= available
    assert not validate_course(course, strict=True).defects


def test_a_data_directory_may_set_the_practice_figures(tmp_path: Path) -> None:
    """The shipped house-style.yaml is the frozen reference's and has no practice keys, so the
    figures are DurationLimits' defaults; a data directory's own house-style.yaml sets them,
    for the rules and for the pipeline's limits alike."""
    import shutil

    import yaml

    from stay.briefs import house_limits
    from stay.validate._course import PRACTICE_KEYS, HouseData
    from tests.fixtures.rules.prc import DATA

    assert not any(key.partition(".")[2] in yaml.safe_load((DATA / "house-style.yaml").read_text()).get(
        key.partition(".")[0], {}) for key in PRACTICE_KEYS)
    assert house_limits(HouseData.load(DATA)) == DEFAULT_LIMITS
    shutil.copy(DATA / "bloom-verbs.yaml", tmp_path)
    data = yaml.safe_load((DATA / "house-style.yaml").read_text())
    own = {key: value + 1 for key, value in PRACTICE_KEYS.items()}
    for key, value in own.items():
        section, _, name = key.partition(".")
        data.setdefault(section, {})[name] = value
    (tmp_path / "house-style.yaml").write_text(yaml.safe_dump(data))
    read = HouseData.load(tmp_path)
    assert {key: read[key] for key in PRACTICE_KEYS} == own
    limits = house_limits(read)
    assert limits.practice_percent == own["course.practice_percent"] and limits != DEFAULT_LIMITS
    course = make_fixture("prc002", tmp_path / "c")  # an exercise one under the shipped minimum
    found = [d.message for d in validate_course(course, select="prc", data_dir=tmp_path).defects]
    lo, hi = own["exercise.min_minutes"], own["exercise.max_minutes"]
    assert f"exercise m01-l01-e1 is {house('exercise', 'min_minutes') - 1} minutes; house style allows {lo} to {hi}" \
        in found


@pytest.mark.parametrize("name", ["audience.md", "curriculum.md", "plan.md", "exercises.md", "capstone.md"])
def test_the_prompts_say_practice_counts_in_the_time(name: str) -> None:
    """Each prompt that sizes time says what the budget is the share of, or asks for minutes."""
    from stay.stages import Prompts

    prompt = " ".join((Path(Prompts.load().directory) / name).read_text(encoding="utf-8").split())
    assert "practice_percent" in prompt or "`minutes`" in prompt, name


def test_every_prc_rule_is_a_stay_rule() -> None:
    from stay.validate import Group

    assert codes_of("prc") == [code for code in RULES if code.startswith("prc")]
    assert all(RULES[code].group is Group.STAY for code in codes_of("prc"))
