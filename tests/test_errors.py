"""stay's errors follow Python's conventions where they apply (a missing file is a
FileNotFoundError, a usage error a ValueError) and carry what they are about as fields
(``path``, ``field``), not only in the message. Every expected field is derived from the
input the test breaks."""

from __future__ import annotations

import errno
import inspect
import pickle
import shutil
from pathlib import Path

import pytest
import yaml

import stay
from stay import errors
from tests.conftest import ROOT, SAMPLE

BRIEF = ROOT / "examples" / "briefs" / "first-aid-at-work.yaml"
TREE = [value for name in errors.__all__ if inspect.isclass(value := getattr(errors, name))]


def test_every_usage_error_is_a_value_error_and_every_exit_code_is_stays() -> None:
    usage = [cls for cls in TREE if issubclass(cls, errors.UsageError)]
    assert errors.BriefNotFound in usage and errors.CourseNotFound in usage
    assert all(issubclass(cls, ValueError) for cls in usage)
    # Python's bases change no exit code: the table holds stay's classes alone, and each
    # class means the code of its nearest stay class, as it did before they were added
    assert all(issubclass(cls, errors.StayError) for cls in errors.EXIT_CODES)
    for cls in TREE:
        if issubclass(cls, errors.StayError):
            nearest = next(c for c in cls.__mro__ if c in errors.EXIT_CODES)
            assert errors.exit_code(cls("x")) == errors.EXIT_CODES[nearest], cls
    assert errors.exit_code(errors.BriefNotFound("x")) == errors.exit_code(errors.BriefError("x"))
    assert errors.exit_code(errors.CourseNotFound("x")) == errors.exit_code(errors.CoursePathError("x"))


def _missing(error: BaseException, path: Path | str) -> None:
    """What Python's own open() of a missing file gives, and stay's one line unchanged."""
    assert isinstance(error, FileNotFoundError) and isinstance(error, OSError) and isinstance(error, ValueError)
    assert error.errno == errno.ENOENT and error.filename == str(path) and error.path == str(path)  # type: ignore[attr-defined]
    assert "[Errno" not in str(error) and str(error) == error.args[0] and "\n" not in str(error)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error) and str(again) == str(error) and again.filename == str(path)


def test_a_missing_brief_is_a_file_not_found_error_with_its_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-brief.yaml"
    with pytest.raises(FileNotFoundError) as raised:
        stay.Brief.from_yaml(missing)
    _missing(raised.value, missing)
    assert isinstance(raised.value, stay.BriefError)
    assert str(raised.value) == f"{missing}: brief not found; give the path of a brief YAML file"


def test_build_course_lets_a_missing_brief_through_as_itself(tmp_path: Path) -> None:
    """The run's own net turns an OSError into an EnvironmentProblem: not this one."""
    missing = tmp_path / "no-such-brief.yaml"
    with pytest.raises(stay.BriefNotFound) as raised:
        stay.build_course(missing, courses_dir=tmp_path / "courses", backend="offline", progress=lambda _: None)
    assert not isinstance(raised.value, stay.EnvironmentProblem)
    _missing(raised.value, missing)


def test_a_missing_course_is_a_file_not_found_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-course"
    with pytest.raises(stay.CourseNotFound) as raised:
        stay.validate_course(missing)
    _missing(raised.value, missing)
    with pytest.raises(FileNotFoundError) as many:
        stay.validate_courses([missing])
    assert many.value.filename == str(missing)  # type: ignore[attr-defined]
    for call in (stay.status, stay.adopt):
        with pytest.raises(FileNotFoundError) as named:
            call("no-such-course", courses_dir=tmp_path)
        assert isinstance(named.value, stay.CoursePathError) and Path(named.value.filename) == missing


def test_a_path_that_is_a_file_is_a_course_path_error_but_not_missing(tmp_path: Path) -> None:
    afile = tmp_path / "course"
    afile.write_text("")
    with pytest.raises(stay.CoursePathError) as raised:
        stay.validate_course(afile)
    assert not isinstance(raised.value, FileNotFoundError) and raised.value.path == str(afile)


def test_a_usage_error_from_python_is_a_value_error(tmp_path: Path) -> None:
    result = stay.build_course(BRIEF, courses_dir=tmp_path, backend="offline", progress=lambda _: None)
    with pytest.raises(ValueError, match="unknown gate"):
        stay.approve(result.slug, "no-such-gate", courses_dir=tmp_path)


# -- structured fields ------------------------------------------------------------------


def _brief_data() -> dict[str, object]:
    data = yaml.safe_load(BRIEF.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _broken_briefs() -> list[tuple[str, dict[str, object]]]:
    """(the field broken, the brief's data): each required field dropped, a field
    misspelt, a field of the wrong type, a list item empty, an impossible duration."""
    data = _brief_data()
    cases: list[tuple[str, dict[str, object]]] = []
    for name, field in stay.Brief.model_fields.items():
        if field.is_required():
            cases.append((name, {k: v for k, v in data.items() if k != name}))
    first = next(iter(data))
    cases.append((first + "x", {first + "x" if k == first else k: v for k, v in data.items()}))
    cases.append(("topic", {**data, "topic": 7}))
    cases.append(("constraints.1", {**data, "constraints": ["fine", " "]}))
    cases.append(("time_available", {**data, "time_available": "two fortnights and a bit"}))
    return cases


@pytest.mark.parametrize(("field", "data"), _broken_briefs(), ids=[f for f, _ in _broken_briefs()])
def test_a_brief_error_names_its_file_and_field(tmp_path: Path, field: str, data: dict[str, object]) -> None:
    path = tmp_path / "brief.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(stay.BriefError) as raised:
        stay.Brief.from_yaml(path)
    assert raised.value.path == str(path) and raised.value.field == field, str(raised.value)
    assert f"'{field}'" in str(raised.value)  # the field named in the message is the one in the attribute


def test_a_brief_error_of_the_whole_file_names_the_file_and_no_field(tmp_path: Path) -> None:
    path = tmp_path / "brief.yaml"
    path.write_text("- a list, not a mapping\n", encoding="utf-8")
    with pytest.raises(stay.BriefError) as raised:
        stay.Brief.from_yaml(path)
    assert raised.value.path == str(path) and raised.value.field is None


def test_an_artefact_error_names_its_file_and_the_field_pydantic_found(tmp_path: Path) -> None:
    from stay.artefacts import load

    course = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    path = course / "curriculum.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    lessons = data["modules"][-1]["lessons"]
    lessons[-1]["minutes"] = "many"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(stay.ArtefactError) as raised:
        load(path)
    field = f"modules.{len(data['modules']) - 1}.lessons.{len(lessons) - 1}.minutes"
    assert raised.value.path == str(path) and raised.value.field == field
    assert f"field '{field}'" in str(raised.value)
    missing = course / "audience.yaml"
    missing.unlink()
    with pytest.raises(stay.ArtefactError) as gone:
        load(missing)
    assert gone.value.path == str(missing) and gone.value.field is None


def test_an_answer_error_names_the_file_and_the_field() -> None:
    from stay.artefacts import Audience
    from stay.requests import ModelAnswer
    from stay.stages._stage import parse_answer

    good = yaml.safe_load((SAMPLE / Audience.FILE).read_text(encoding="utf-8"))
    answer = ModelAnswer(data={**good, "time_budget_minutes": 0}, model="any")
    with pytest.raises(stay.AnswerError) as raised:
        parse_answer(Audience, answer, "audience", Audience.FILE)
    assert raised.value.path == Audience.FILE and raised.value.field == "time_budget_minutes"


def test_a_data_file_error_names_the_file_and_the_dotted_key(tmp_path: Path) -> None:
    from stay.validate._course import _HOUSE_KEYS, HOUSE_FILE

    shutil.copytree(ROOT / "data", tmp_path, dirs_exist_ok=True)
    dotted = _HOUSE_KEYS[-1][0]
    house = tmp_path / HOUSE_FILE
    data = yaml.safe_load(house.read_text(encoding="utf-8"))
    section, key = dotted.split(".")
    del data[section][key]
    house.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(stay.DataFileError) as raised:
        stay.validate_course(SAMPLE, data_dir=tmp_path)
    assert raised.value.path == str(house) and raised.value.field == dotted


def test_an_unsafe_batch_id_names_the_record_and_its_field(tmp_path: Path) -> None:
    from stay.models._batch import checked_id

    record = tmp_path / "msgbatch_x.json"
    with pytest.raises(stay.UnsafeId) as raised:
        checked_id("../../etc", f"{record}: field 'batch_id'", path=record)
    assert raised.value.path == str(record) and raised.value.field == "batch_id"


def test_an_environment_problem_names_the_path_of_the_os_error() -> None:
    where = "/courses/x/course.yaml"
    problem = stay.EnvironmentProblem.from_os_error(OSError(errno.ENOSPC, "No space left on device", where))
    assert problem.path == where and problem.field is None and str(problem).startswith(where)


def test_path_and_field_are_keyword_only_and_default_to_none() -> None:
    plain = stay.StayError("a message")
    assert plain.path is None and plain.field is None and str(plain) == "a message"
    with pytest.raises(TypeError):
        stay.StayError("a message", "a path", "a field", path=1, field=2, other=3)  # type: ignore[call-arg]
    made = stay.UsageError("m", path=Path("p"), field="f")
    assert (made.path, made.field, made.args) == ("p", "f", ("m",))


@pytest.mark.parametrize("damage", ["not json", '{"hashes": []}'])
def test_a_damaged_ledger_names_its_file_and_the_section(tmp_path: Path, damage: str) -> None:
    from stay.pipeline._state import read_ledger

    ledger = tmp_path / "hashes.json"
    ledger.write_text(damage)
    section = "hashes"
    with pytest.raises(stay.EnvironmentProblem) as raised:
        read_ledger(ledger, section)
    assert raised.value.path == str(ledger)
    assert raised.value.field == (section if damage.startswith("{") else None)  # the section, once it is JSON
