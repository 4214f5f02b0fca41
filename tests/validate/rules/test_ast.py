"""The ast rules (`stay/validate/rules/ast.py`) on their fixtures (`tests/fixtures/rules/ast.py`),
silent on the sample (which carries data files of its own) and on the sample given more,
and reading assets/ safely: no link followed, no read past the limit, no traceback.

What each rule should evaluate is counted here from the fixture's own tables (the data
files it writes and where it names them, and the sample's own, read from its files), not
through the rules."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from stay._bounds import MAX_ASSET_BYTES
from stay.validate import RULES, validate_course
from stay.validate.rules.ast import KINDS, data_files, names_in
from tests.conftest import ROOT, SAMPLE
from tests.fixtures.rules import codes_of, make_fixture
from tests.fixtures.rules._edit import append_text, edit_plan, edit_yaml, lesson_file
from tests.fixtures.rules.ast import (
    ALL_DATA,
    DATA,
    FOLDER,
    LOG,
    MISSING,
    NAMED,
    SAMPLE_DATA,
    SAMPLE_NAMED,
    STRAY,
    TIMINGS,
    name,
    named_in,
    with_data_files,
    without_data_files,
)
from tests.validate.rules._fires import assert_fires_on_its_fixture

CODES = codes_of("ast")


def _course(tmp_path: Path) -> Path:
    """A copy of the sample (its own data files among it) with :data:`DATA` named where
    :data:`NAMED` says."""
    course = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    with_data_files(course)
    return course


def _places(*tables: dict[str, tuple[tuple[str, str], ...]]) -> list[tuple[str, tuple[str, str]]]:
    """(data file, place) for each place a table names a data file in, once each."""
    return [(path, place) for table in tables for path, where in table.items() for place in where]


def _ast(course: Path) -> list[tuple[str, str, str]]:
    return [(d.code, d.path, d.subject) for d in validate_course(course, select="ast").defects]


@pytest.mark.parametrize("code", CODES)
def test_rule_fires_on_its_fixture(code: str, tmp_path: Path, snapshot: SnapshotAssertion) -> None:
    assert_fires_on_its_fixture(code, tmp_path, snapshot)


def test_the_sample_passes_every_ast_rule_on_its_own_data_files() -> None:
    """The sample carries the data files its example.yaml writes, each named where a
    learner uses it: every ast rule evaluates on them, and none fires."""
    assert SAMPLE_DATA and all(SAMPLE_NAMED[path] for path in SAMPLE_DATA)
    report = validate_course(SAMPLE, select="ast")
    assert report.defects == ()
    assert report.evaluated == {"ast001": len(_places(SAMPLE_NAMED)), **{code: len(SAMPLE_DATA) for code in CODES[1:]}}
    assert data_files(SAMPLE) == SAMPLE_DATA


def test_every_ast_rule_passes_on_the_sample_with_data_files_and_evaluates_each_file(tmp_path: Path) -> None:
    assert not SAMPLE_DATA.keys() & DATA.keys()  # the fixture's files are added, none replaced
    course = _course(tmp_path)
    report = validate_course(course)  # every rule: the data files and the names break nothing else
    assert report.defects == ()
    places = len(_places(SAMPLE_NAMED, NAMED))  # each file names each data file once
    assert {code: report.evaluated.get(code) for code in CODES} == {
        "ast001": places, **{code: len(ALL_DATA) for code in CODES[1:]}}
    assert data_files(course) == ALL_DATA  # the viewer's reading: every data file, byte for byte


def test_no_ast_rule_evaluates_on_a_course_without_assets(tmp_path: Path) -> None:
    """The sample with its assets/ removed, and the sentences naming its files with it."""
    course = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    without_data_files(course)
    assert not (course / "assets").exists()
    report = validate_course(course, select="ast")
    assert report.evaluated == {} and report.defects == ()
    assert validate_course(course).defects == ()  # only those sentences went: the course is whole


def test_before_the_wave_no_data_file_is_reported_unnamed(tmp_path: Path) -> None:
    """At the plan gate no lesson, exercise, quiz or capstone exists to name a data file:
    ast002 has no subject yet, while the file's own checks still run."""
    course = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    for path in [*course.glob("modules/*/*.md"), *course.glob("modules/*/*.exercises.yaml"),
                 *course.glob("modules/*/*.quiz.yaml"), course / "project.yaml"]:
        path.unlink()
    report = validate_course(course, select="ast")
    assert "ast002" not in report.evaluated and report.evaluated.get("ast004") == len(list((course / "assets").iterdir()))


def test_each_failing_fixture_names_the_file_and_the_path(tmp_path: Path) -> None:
    """ast001 is said in the file that names the missing path, by its writer; the others on
    the data file itself."""
    found = {code: _ast(make_fixture(code, tmp_path / code)) for code in CODES}
    lesson = lesson_file(tmp_path / "ast001" / SAMPLE.name, "m01-l02", ".md").relative_to(tmp_path / "ast001" / SAMPLE.name)
    assert found["ast001"] == [("ast001", lesson.as_posix(), MISSING)]
    assert found["ast002"] == [("ast002", STRAY, "-")]
    assert found["ast003"] == [("ast003", TIMINGS, "-")]
    assert found["ast004"] == [("ast004", LOG, "-")]
    assert found["ast005"] == [("ast005", FOLDER, "-")]
    (defect,) = validate_course(tmp_path / "ast001" / SAMPLE.name, select="ast001").defects
    assert defect.owner == "content"
    assert all(Path(p).name in defect.message for p in ALL_DATA)  # the files it could name instead


@pytest.mark.parametrize(("lesson_id", "suffix", "owner"), [
    ("m01-l03", ".exercises.yaml", "exercises"), ("m02-l02", ".quiz.yaml", "quiz"), ("", "project.yaml", "capstone")])
def test_a_missing_file_is_owned_by_the_writer_of_the_file_that_names_it(lesson_id: str, suffix: str, owner: str,
                                                                         tmp_path: Path) -> None:
    course = _course(tmp_path)
    name(course, MISSING, lesson_id, suffix)
    (defect,) = validate_course(course, select="ast").defects
    path = named_in(course, lesson_id, suffix).relative_to(course).as_posix()
    assert (defect.code, defect.path, defect.subject, defect.owner) == ("ast001", path, MISSING, owner)


def test_names_in_plans_example_yaml_and_course_yaml_do_not_count(tmp_path: Path) -> None:
    """Only learner-facing text names a data file: the authors' files would make ast002 a
    check that cannot fail."""
    course = _course(tmp_path)
    stray = b"name,phone\nBean Co,555-0100\n"
    (course / STRAY).write_bytes(stray)
    edit_plan(course, "m01-l01", lambda plan: plan.__setitem__("example_facts", [f"The suppliers are in {STRAY}."]))
    edit_yaml(course / "example.yaml", lambda example: example["files"].append(  # as the example stage writes it
        {"path": STRAY, "about": f"The suppliers, as {STRAY} lists them.", "text": stray.decode()}))
    append_text(course / "course.yaml", f"# {STRAY}\n")
    assert validate_course(course).defects == validate_course(course, select="ast").defects  # nothing else broke
    assert _ast(course) == [("ast002", STRAY, "-")]


@pytest.mark.parametrize(("text", "named"), [
    ("Open `assets/request-log.csv`.", ["assets/request-log.csv"]),
    ("See [the log](assets/request-log.csv) and assets/dns-answers.json, then assets/request-log.csv.",
     ["assets/request-log.csv", "assets/dns-answers.json"]),
    ("assets/archive/old.csv", ["assets/archive/old.csv"]),
    ("https://example.com/assets/x.csv or ../assets/x.csv or myassets/x.csv or the assets/ folder", []),
])
def test_names_are_course_relative_paths_in_the_order_first_named(text: str, named: list[str]) -> None:
    assert names_in(text) == named
    assert names_in({"hints": [text, text]}) == named


@pytest.mark.parametrize(("name", "data", "problem"), [
    ("a.csv", b"a,b\n\xff,1\n", "byte 5 is not UTF-8"),
    ("a.csv", b"", "no header row"),
    ("a.csv", b"a,,c\n1,2,3\n", "leaves a column unnamed"),
    ("a.csv", b'a,b\n1,"2"x\n', "line 2: "),
    ("a.csv", b"a,b\n1,2,3\n", "line 2 has 3 fields where the header row has 2"),
    ("a.json", b'{"a": }', "Expecting value at line 1, column 7"),
    ("a.json", b"[" * 100_000, "nested too deeply to read"),
    ("a.txt", b"one\x00two", "a NUL byte at character 4"),
    ("a.txt", b"caf\xe9", "byte 4 is not UTF-8"),
])
def test_each_type_must_read_as_itself(name: str, data: bytes, problem: str, tmp_path: Path) -> None:
    course = _course(tmp_path)
    (course / "assets" / name).write_bytes(data)
    append_text(lesson_file(course, "m01-l01", ".md"), f"\nAnd `assets/{name}`.\n")
    (defect,) = validate_course(course, select="ast").defects
    assert (defect.code, defect.path) == ("ast004", f"assets/{name}")
    assert defect.message.startswith(f"does not read as {KINDS[name.rpartition('.')[2]]}: ")
    assert problem in defect.message


@pytest.mark.parametrize("case", ["link to a file", "link to a folder", "linked assets", "fifo", "folder",
                                  "unknown type", "capitals", "assets is a file"])
def test_what_is_no_data_file_is_named_and_never_read(case: str, tmp_path: Path) -> None:
    """Links (kept inside the course, so the course itself is not refused), a FIFO that would
    block a read forever, a folder, a file of another type or name: each is ast005's, named,
    and not opened; the course's other data files are still checked."""
    course = _course(tmp_path)
    assets = course / "assets"
    where = {"link to a file": "assets/copy.csv", "link to a folder": "assets/more", "linked assets": "assets",
             "fifo": "assets/live.csv", "folder": FOLDER, "unknown type": "assets/log.xlsx",
             "capitals": "assets/Log.csv", "assets is a file": "assets"}[case]
    if case == "link to a file":
        os.symlink("../course.yaml", course / where)
    elif case == "link to a folder":
        os.symlink("../modules", course / where)
    elif case == "linked assets":
        shutil.move(assets, course / "data")
        os.symlink("data", assets)
    elif case == "fifo":
        os.mkfifo(course / where)
    elif case == "folder":
        (course / where).mkdir()
    elif case == "assets is a file":
        shutil.rmtree(assets)
        assets.write_text("not a folder\n", encoding="utf-8")
    else:
        (course / where).write_bytes(DATA[LOG])
    found = _ast(course)
    assert ("ast005", where, "-") in found
    if where == "assets":  # nothing under it is looked at: every name in the text is missing
        places = _places(SAMPLE_NAMED, NAMED)
        assert sorted(found) == sorted([("ast005", "assets", "-"), *(
            ("ast001", named_in(course, lesson, suffix).relative_to(course).as_posix(), path)
            for path, (lesson, suffix) in places)])
        assert len(found) == 1 + len(places)
    else:
        assert found == [("ast005", where, "-")]  # the named files pass, the entry is said once
    assert set(data_files(course)) == (set() if where == "assets" else set(ALL_DATA))  # the viewer offers no other


def test_a_huge_file_is_never_read_past_the_limit(tmp_path: Path) -> None:
    """A sparse file of many gigabytes: ast003 says so from its size, ast004 does not read it,
    and the viewer leaves it out; reading it whole would take the machine's memory."""
    course = _course(tmp_path)
    huge = course / LOG
    with open(huge, "r+b") as handle:
        handle.truncate(64 * 2**30)
    assert huge.stat().st_size > MAX_ASSET_BYTES
    report = validate_course(course, select="ast")
    assert [(d.code, d.path) for d in report.defects] == [("ast003", LOG)]
    assert report.evaluated["ast004"] == len(ALL_DATA) - 1
    assert LOG not in data_files(course)


def test_the_command_line_reports_a_hostile_assets_folder_in_lines_never_a_traceback(tmp_path: Path) -> None:
    course = _course(tmp_path)
    os.mkfifo(course / "assets" / "live.csv")
    os.symlink("../course.yaml", course / "assets" / "copy.json")
    (course / LOG).write_bytes(b"\xff\xfe" + b"\x00" * 64)
    done = subprocess.run([sys.executable, "-m", "stay.validate", "--jobs", "1", str(course)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stderr) == (1, "")
    assert "Traceback" not in done.stdout
    for line in ("FAIL ast005 assets/live.csv -:", "FAIL ast005 assets/copy.json -:", f"FAIL ast004 {LOG} -:"):
        assert line in done.stdout


def test_the_rules_are_stays_own_and_say_why() -> None:
    from stay.validate import Group

    assert all(RULES[code].group is Group.STAY and len(RULES[code].doc) > 100 for code in CODES)
