"""One course reader (``stay.artefacts.CourseReader``) for the pipeline, the scorers and the
viewer: one layout, bounded reads, one parse cache; and each of them holds a course to
the house style it was told, not to the default one.

Before (82ee6d8) a course was laid out and loaded three ways: the pipeline's ``Run.load``,
the scorers' ``CourseOnDisk.load`` (unbounded hashing) and the viewer's own parser; the
viewer's house style and the validator scorer's were always the default's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from stay.artefacts import ArtefactLoadError, CourseReader, Curriculum, LessonContent, LessonPlan, load, module_dir
from stay.briefs import house_limits
from stay.scoring import CourseOnDisk, OfflineJudge
from stay.settings import Settings
from stay.suite import OFFLINE, evaluate_build
from stay.validate import HouseData, validate_course
from stay.view import build_site
from stay.view._load import load_course
from tests.conftest import ROOT

READERS = ("scoring", "view")
"""The packages that read courses and are not the pipeline (which reads through ``Run.load``)."""
PARSING = {"load", "parse", "parse_bytes", "parse_markdown", "read_bytes", "read_bounded", "validate_as",
           "safe_load", "yaml_shape"}
"""The names a module would read or parse a course file with, bypassing the reader."""
NOT_COURSES = {("stay/scoring/_judges.py", "yaml_shape")}
"""Uses of those names on files that are no course: the gold set's YAML (evals/gold)."""


def _data(tmp_path: Path, change: dict[str, dict[str, object]]) -> Path:
    """The packaged data directory with some house-style values changed."""
    data = tmp_path / "house"
    data.mkdir()
    (data / "bloom-verbs.yaml").write_bytes((ROOT / "data" / "bloom-verbs.yaml").read_bytes())
    house = yaml.safe_load((ROOT / "data" / "house-style.yaml").read_text(encoding="utf-8"))
    for section, values in change.items():
        house[section].update(values)
    (data / "house-style.yaml").write_text(yaml.safe_dump(house), encoding="utf-8")
    return data


def test_the_scorers_and_the_viewer_read_course_files_through_the_course_reader_only() -> None:
    bypassing = sorted(
        (path.relative_to(ROOT).as_posix(), alias.name)
        for package in READERS for path in sorted((ROOT / "stay" / package).glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("stay.artefacts", "stay._bounds",
                                                                                "stay.validate._text"))
        for alias in node.names if alias.name in PARSING)
    assert [use for use in bypassing if use not in NOT_COURSES] == []


def test_the_reader_lays_a_course_out_as_the_pipeline_writes_it(sample_copy: Path) -> None:
    curriculum = load(sample_copy / "curriculum.yaml", Curriculum)
    reader = CourseReader(sample_copy)
    written = {p.relative_to(sample_copy).as_posix() for p in (sample_copy / "modules").rglob("*") if p.is_file()}
    course = CourseOnDisk.load(sample_copy)
    viewed = load_course(sample_copy)
    assert {f.path for lesson in viewed.lessons for f in lesson.files()} == written and viewed.unlisted == ()
    assert [lesson.id for lesson in course.lessons] == [lesson.id for lesson in viewed.lessons]
    assert {path.rsplit("/", 1)[0] for path in written} == {module_dir(module) for module in curriculum.modules}
    first = viewed.lessons[0]
    assert reader.load(first.plan.path, LessonPlan) == first.plan.model
    assert reader.load(first.content.path, LessonContent) == first.content.model


def test_the_reader_parses_a_file_again_only_when_its_bytes_change(sample_copy: Path) -> None:
    reader = CourseReader(sample_copy)
    first = reader.load("curriculum.yaml", Curriculum)
    assert reader.load("curriculum.yaml", Curriculum) is first
    path = sample_copy / "curriculum.yaml"
    path.write_bytes(path.read_bytes() + b"\n")
    again = reader.load("curriculum.yaml", Curriculum)
    assert again is not first and again == first


def test_the_course_hash_reads_each_file_bounded(sample_copy: Path) -> None:
    from stay._bounds import MAX_FILE_BYTES

    stray = sample_copy / "notes.txt"
    with stray.open("wb") as handle:  # sparse: no disk used, but read whole it would be
        handle.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ArtefactLoadError) as refused:
        _ = CourseOnDisk.load(sample_copy).sha256
    assert str(refused.value).startswith(f"{stray}: larger than") and "\n" not in str(refused.value)


def test_the_viewer_holds_a_course_to_the_house_style_it_is_given(sample_copy: Path, tmp_path: Path) -> None:
    small = _data(tmp_path, {"course": {"max_modules": 1}, "module": {"max_lessons": 1}})
    limit = house_limits(HouseData.load(small)).most_lessons
    lessons = sum(len(m.lessons) for m in load(sample_copy / "curriculum.yaml", Curriculum).modules)
    assert limit < lessons
    site = build_site(sample_copy, data_dir=small)
    assert f"largest course has {limit}".encode() in site["status.html"]
    assert b"largest course has" not in build_site(sample_copy)["status.html"]  # the default allows the course


def test_the_suites_validator_scorer_holds_a_build_to_its_house_style(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./data: the default is the packaged house style
    monkeypatch.delenv("STAY_DATA_DIR", raising=False)
    strict = _data(tmp_path, {})
    house = yaml.safe_load((strict / "house-style.yaml").read_text(encoding="utf-8"))
    house["prose"]["banned_phrases"].append("the")  # every lesson's prose: a FAIL each, whatever repair does
    (strict / "house-style.yaml").write_text(yaml.safe_dump(house), encoding="utf-8")
    slug, entry = evaluate_build(ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml", epoch=1,
                                 courses_dir=tmp_path / "courses", backend=OFFLINE, prompts_dir=None,
                                 judge=OfflineJudge(), settings=Settings(data_dir=strict))
    course = tmp_path / "courses" / "e01" / slug
    report = validate_course(course, data_dir=strict, strict=True)
    content = next(item for item in entry["scorers"]["validator"]["items"] if item["item"] == "owner content")
    found = sum(d.owner == "content" for d in report.defects)
    assert found > 0 and content["reason"] == f"{found} defects" and content["score"] == 0.0
