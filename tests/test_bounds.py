"""Every input has a bound (issue 20, item 4): a course file is read no further than
``MAX_FILE_BYTES``, YAML anchors and aliases are refused (or, in the validator, never
walked past the file's own size) before anything expands them, and a curriculum
larger than house style's largest course is refused before any work grows with it.

Sizes derive from the constants; nothing here is timed (benchmarks/bounds.py times
them). Memory is measured with tracemalloc, and an oversized lesson is a sparse file,
which costs no disk.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import stay.validate._text as validator_yaml
from stay._bounds import MAX_DEPTH, MAX_FILE_BYTES, TooLarge, read_bounded, yaml_shape
from stay.artefacts import ArtefactLoadError, CourseReader, Curriculum, LessonContent, LessonPlan, load
from stay.briefs import house_limits
from stay.validate import HouseData, check_course, packaged_data_dir
from stay.view._load import load_course
from tests.conftest import ROOT, SAMPLE, run_stay

LESSON = "modules/m01-from-url-to-connection/m01-l01"
HOUSE = HouseData.load(packaged_data_dir())
OVERSIZED = 32 * MAX_FILE_BYTES
"""A lesson far past the limit (512 MB), as a sparse file."""

# Nine levels of nine: under a kilobyte of text, 9**9 (387 million) values walked out.
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True))


def _sparse(path: Path, size: int) -> None:
    with open(path, "r+b" if path.exists() else "wb") as handle:
        handle.truncate(size)


def _peak(work: Callable[[], Any]) -> tuple[Any, int]:
    """What ``work`` returns (or raises, as an exception value) and its peak traced memory."""
    tracemalloc.start()
    try:
        try:
            result: Any = work()
        except Exception as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _curriculum(root: Path, lessons: int) -> None:
    """Replace the course's curriculum with ``lessons`` lessons, as many modules as the
    lesson ids allow filled in turn (ids are two digits: 100 lessons per module)."""
    data = yaml.safe_load((root / "curriculum.yaml").read_text(encoding="utf-8"))
    module, lesson = data["modules"][0], data["modules"][0]["lessons"][0]
    modules = []
    for m in range((lessons + 99) // 100):
        count = min(100, lessons - 100 * m)
        modules.append({**module, "id": f"m{m:02d}", "slug": f"part-{m}", "lessons": [
            {**lesson, "id": f"m{m:02d}-l{n:02d}"} for n in range(count)]})
    (root / "curriculum.yaml").write_text(yaml.safe_dump({"modules": modules}, sort_keys=False), encoding="utf-8")


# -- size ---------------------------------------------------------------------------


def test_a_file_past_the_limit_is_refused_after_reading_no_more_than_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "m01-l01.md"
    _sparse(path, OVERSIZED)
    error, peak = _peak(lambda: read_bounded(path))
    assert isinstance(error, TooLarge)
    assert peak < 2 * MAX_FILE_BYTES < OVERSIZED
    _sparse(path, MAX_FILE_BYTES)
    assert len(read_bounded(path)) == MAX_FILE_BYTES  # the limit itself is read


def test_an_oversized_lesson_is_one_line_naming_the_file_and_the_limit_to_every_reader(sample_copy: Path) -> None:
    lesson = sample_copy / f"{LESSON}.md"
    _sparse(lesson, OVERSIZED)
    limit = f"{MAX_FILE_BYTES // 2**20} MB"

    error, peak = _peak(lambda: load(lesson, LessonContent))  # the pipeline's reader, Run.load's too
    assert isinstance(error, ArtefactLoadError) and peak < 2 * MAX_FILE_BYTES
    assert str(error).startswith(str(lesson)) and limit in str(error) and "\n" not in str(error)

    shown, peak = _peak(lambda: CourseReader(sample_copy).read(f"{LESSON}.md", LessonContent))
    assert shown.model is None and limit in shown.problem and peak < 2 * MAX_FILE_BYTES

    report, peak = _peak(lambda: check_course(sample_copy, HOUSE))
    assert peak < 2 * MAX_FILE_BYTES
    found = [d for d in report.defects if d.path == f"{LESSON}.md" and d.code == "sch002"]
    assert len(found) == 1 and limit in found[0].message


def test_status_hashes_an_oversized_lesson_without_holding_it(sample_copy: Path) -> None:
    from stay.pipeline import status

    _sparse(sample_copy / f"{LESSON}.md", OVERSIZED)
    found, peak = _peak(lambda: status(sample_copy.name, courses_dir=sample_copy.parent))
    assert not isinstance(found, Exception), found
    assert f"{LESSON}.md" in found and peak < 2 * MAX_FILE_BYTES


# -- anchors, aliases, depth --------------------------------------------------------


def test_the_guard_reads_events_only() -> None:
    assert yaml_shape(BOMB) == "aliases"
    assert yaml_shape("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)) == "deep"
    assert yaml_shape("[" * MAX_DEPTH + "]" * MAX_DEPTH) is None
    assert yaml_shape("a: 'x * y & z'\n") is None  # the characters inside a scalar are no anchor
    with pytest.raises(yaml.YAMLError):
        yaml_shape("a: [unclosed\n")


@pytest.mark.parametrize("relative, model", [
    ("curriculum.yaml", Curriculum), (f"{LESSON}.plan.yaml", LessonPlan), (f"{LESSON}.md", LessonContent)])
def test_an_alias_bomb_in_a_course_file_is_refused_by_the_artefacts_and_the_viewer(
        sample_copy: Path, relative: str, model: type[Any]) -> None:
    path = sample_copy / relative
    path.write_text(f"---\n{BOMB}---\nbody\n" if relative.endswith(".md") else BOMB, encoding="utf-8")
    with pytest.raises(ArtefactLoadError, match="anchors or aliases") as caught:
        load(path, model)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))
    shown = CourseReader(sample_copy).read(relative, model)
    assert shown.model is None and "anchors or aliases" in (shown.problem or "")


def test_nesting_deeper_than_any_artefact_is_refused_before_libyaml_composes_it(sample_copy: Path) -> None:
    path = sample_copy / f"{LESSON}.plan.yaml"
    path.write_text("new_terms: " + "[" * 30_000 + "]" * 30_000 + "\n", encoding="utf-8")  # libyaml's C stack
    with pytest.raises(ArtefactLoadError, match=f"deeper than {MAX_DEPTH} levels"):
        load(path, LessonPlan)


def test_the_validator_reads_aliases_as_the_reference_does_but_never_walks_a_bomb(sample_copy: Path) -> None:
    plan = sample_copy / f"{LESSON}.plan.yaml"
    text = plan.read_text(encoding="utf-8")
    assert validator_yaml.expands_past(validator_yaml.safe_load("&a [*a]\n"), len("&a [*a]\n")) is False
    plan.write_text(BOMB + text, encoding="utf-8")
    found = [d for d in check_course(sample_copy, HOUSE).defects
             if d.path == f"{LESSON}.plan.yaml" and d.code.startswith("sch")]
    assert [d.code for d in found] == ["sch002"] and "aliases expand" in found[0].message


def test_a_plan_bomb_stops_stay_status_in_one_line_within_a_gigabyte(tmp_path: Path) -> None:
    courses = tmp_path / "courses"
    shutil.copytree(SAMPLE, courses / SAMPLE.name)
    plan = courses / SAMPLE.name / f"{LESSON}.plan.yaml"
    plan.write_text(BOMB + "new_terms: [*i]\n", encoding="utf-8")
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from stay.cli import main; sys.exit(main(sys.argv[1:]))")
    result = subprocess.run([sys.executable, "-c", code, "status", SAMPLE.name, "--courses-dir", str(courses)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 5, result.stderr
    assert "anchors or aliases" in result.stderr and len(result.stderr.strip().splitlines()) == 1


# -- the size of a curriculum --------------------------------------------------------


@pytest.mark.slow
def test_a_curriculum_past_house_styles_largest_course_is_refused_before_the_graph(
        sample_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import stay.pipeline._commands as commands

    built: list[int] = []
    real = commands.artefact_graph

    def counted(curriculum: Curriculum, *args: Any, **kwargs: Any) -> Any:
        built.append(sum(len(m.lessons) for m in curriculum.modules))
        return real(curriculum, *args, **kwargs)

    monkeypatch.setattr(commands, "artefact_graph", counted)
    limit = house_limits(HOUSE).most_lessons
    _curriculum(sample_copy, 100 * limit)
    result = run_stay("status", sample_copy.name, "--courses-dir", str(sample_copy.parent))
    assert result.returncode == 5 and result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert f"{100 * limit:,} lessons" in result.stderr and f"largest course has {limit}" in result.stderr
    assert built == [0]  # only the empty graph a course starts with: nothing grew with the curriculum
    _curriculum(sample_copy, limit)  # at the limit itself, status goes on
    result = run_stay("status", sample_copy.name, "--courses-dir", str(sample_copy.parent))
    assert result.returncode == 0, result.stderr


def test_the_viewer_shows_an_oversized_curriculum_as_damaged_and_reads_no_lesson(sample_copy: Path) -> None:
    limit = house_limits(HOUSE).most_lessons
    _curriculum(sample_copy, limit + 1)
    course = load_course(sample_copy)
    assert course.curriculum.model is None and f"largest course has {limit}" in (course.curriculum.problem or "")
    assert course.lessons == ()
    _curriculum(sample_copy, limit)
    assert len(load_course(sample_copy).lessons) == limit


@pytest.mark.slow
def test_a_big_shallow_file_is_parsed_by_libyaml_not_the_pure_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many nesting indicators used to send a file to the pure parser, ten times slower:
    a 10,000-lesson curriculum took minutes. libyaml's event stream now says how deep."""
    lessons = "".join(f"  - id: m00-l{n:02d}\n    title: T\n    minutes: 20\n" for n in range(100))
    text = "modules:\n" + "".join(f"- id: m{m:02d}\n  lessons:\n{lessons}" for m in range(100))
    assert sum(text.count(c) for c in validator_yaml._INDICATORS) > validator_yaml._MAX_INDICATORS
    expected = yaml.load(text, Loader=yaml.SafeLoader)

    def refuse(_: str) -> None:
        raise AssertionError("the pure parser was used")

    monkeypatch.setattr(validator_yaml, "pure_load", refuse)
    assert validator_yaml.safe_load(text) == expected


def test_an_oversized_prompt_file_is_one_line_naming_it(tmp_path: Path) -> None:
    """A prompts directory is an input like a course: its files are read bounded too."""
    import shutil

    from stay.errors import UsageError
    from stay.stages import Prompts, packaged_prompts_dir

    prompts = tmp_path / "prompts"
    shutil.copytree(packaged_prompts_dir(), prompts)
    with (prompts / "quiz.md").open("ab") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk
    with pytest.raises(UsageError) as refused:
        Prompts.load(prompts)
    assert str(refused.value).startswith(f"{prompts / 'quiz.md'}: larger than 16 MB") and "\n" not in str(refused.value)
