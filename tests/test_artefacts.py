"""Typed artefacts: the exact on-disk form, deterministic dumps, one-line load errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stay.artefacts as artefacts
from stay.artefacts import (
    ArtefactLoadError,
    Brief,
    Glossary,
    GlossaryTerm,
    LessonContent,
    LessonPlan,
    Quiz,
)
from stay.stages import REGISTRY
from tests.conftest import ROOT, SAMPLE
from tests.parity.harness import examples

FILES = sorted(p for p in SAMPLE.rglob("*") if p.is_file())


def test_the_sample_course_has_every_kind_of_artefact() -> None:
    """Every kind of course file stay declares (its stages' kinds among them, registered as
    stay.stages is imported), and nothing else."""
    kinds = {artefacts.artefact_type(path) for path in FILES}
    declared = {kind for kind in artefacts.FILES.values() if kind.__module__.startswith("stay.")}
    assert {stage.kind for stage in REGISTRY} <= declared
    # and a data file under assets/ (example.yaml's), read as its text; but a lesson's review,
    # which only a model's build writes (the committed sample has none: no rev rule fires on it)
    assert {kind.__name__ for kind in kinds} == ({kind.__name__ for kind in declared} | {
        artefacts.AssetText.__name__}) - {artefacts.LessonReview.__name__}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(SAMPLE).as_posix())
def test_every_sample_file_round_trips_byte_for_byte(path: Path) -> None:
    model = artefacts.load(path)
    assert artefacts.dump(model).encode("utf-8") == path.read_bytes()


def test_dumping_is_deterministic_and_keeps_field_order() -> None:
    plan = artefacts.load(next(p for p in FILES if p.name.endswith(".plan.yaml")), LessonPlan)
    rebuilt = LessonPlan.model_validate(plan.model_dump())
    assert artefacts.dump(rebuilt) == artefacts.dump(plan)
    assert list(artefacts.to_data(plan)) == list(LessonPlan.model_fields)  # declared order, not sorted


def test_unknown_fields_are_kept_where_they_were() -> None:
    text = ("terms:\n  - term: scheme\n    definition: The protocol part.\n"
            "    introduced_in: m01-l01\n    note: kept\n")
    glossary = artefacts.parse(Glossary, text)
    assert artefacts.dump(glossary) == text


TERMS = st.text(st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp")), min_size=1,
                max_size=64).filter(str.strip)


@settings(max_examples=examples(300, dev=100))
@given(st.lists(st.tuples(TERMS, st.text(min_size=1).filter(str.strip)), max_size=4))
def test_any_glossary_survives_a_dump_and_load(pairs: list[tuple[str, str]]) -> None:
    glossary = Glossary(terms=[GlossaryTerm(term=t, definition=d, introduced_in="m01-l01")
                               for t, d in pairs])
    assert artefacts.parse(Glossary, artefacts.dump(glossary)) == glossary


def test_markdown_keeps_its_body_exactly() -> None:
    text = "---\nlesson: m01-l01\ntitle: What a URL names\n---\n# What a URL names\n\n## Hook\nProse.\n"
    lesson = artefacts.parse(LessonContent, text)
    assert lesson.body == "# What a URL names\n\n## Hook\nProse.\n"
    assert artefacts.dump(lesson) == text


def test_multi_line_strings_are_literal_blocks() -> None:
    quiz = Quiz(lesson="m01-l01", items=[{"id": "m01-l01-q1", "outcome": "m01-l01-o1",
                                          "type": "short", "stem": "Run:\ncurl -v x",
                                          "answer": "a", "explanation": "b"}])
    assert "stem: |-\n      Run:\n      curl -v x\n" in artefacts.dump(quiz)


@pytest.mark.parametrize("text, fragment", [
    ("lesson: m01-l01\nitems: nope\n", "field 'items': Input should be a valid list"),
    ("lesson: '  '\nitems: []\n", "field 'lesson': must not be empty"),
    ("lesson: m01-l01\nitems: [\n", "not valid YAML at line"),
    ("lesson: m01-l01\nitems:\n  - {id: q, type: essay, stem: s, explanation: e}\n",
     "field 'items.0.type': Input should be 'mcq' or 'short'"),
])
def test_a_bad_file_is_one_line_naming_file_and_field(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "m01-l01.quiz.yaml"
    path.write_text(text)
    with pytest.raises(ArtefactLoadError) as caught:
        artefacts.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and fragment in message and "\n" not in message


def test_strict_types_refuse_coercion() -> None:
    with pytest.raises(ArtefactLoadError, match="minutes"):
        artefacts.parse(LessonPlan, "lesson: m01-l01\ntitle: b\nminutes: '20'\noutcomes: []\n"
                        "sections: []\nnew_terms: []\nprerequisites: []\nrevisits: []\n")


def test_the_sample_brief_is_the_course_manifest_brief() -> None:
    brief = artefacts.load(ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml", Brief)
    manifest = artefacts.load(SAMPLE / "course.yaml")
    assert manifest.brief == brief  # type: ignore[attr-defined]


def test_atomic_write_leaves_the_old_file_when_dumping_fails(tmp_path: Path) -> None:
    target = tmp_path / "glossary.yaml"
    target.write_text("old\n")

    class Unwritable(str):
        def encode(self, *args: object, **kwargs: object) -> bytes:
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        artefacts.write_text_atomic(target, Unwritable("new\n"))
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["glossary.yaml"]


# -- ids read from disk are checked like ids from a model ------------------------------

CURRICULUM = ("modules:\n  - id: {module}\n    slug: {slug}\n    title: T\n    summary: S\n    lessons:\n"
              "      - id: {lesson}\n        title: L\n        minutes: 20\n        summary: S\n")
GOOD = {"module": "m01", "slug": "foundations", "lesson": "m01-l01"}


@pytest.mark.parametrize("field, value, why", [
    ("module", "../../../../escaped", "path separator"),
    ("module", "m01/../..", "path separator"),
    ("module", "..", "'..'"),
    ("module", "m\\\\01", "path separator"),  # YAML "m\\01" is m\01
    ("module", "m1", "is not a module id"),
    ("lesson", "m01-l01/../../x", "path separator"),
    ("lesson", "m01-l01\\u0000", "NUL byte"),
    ("lesson", "m01-l01\\t", "control character"),
    ("lesson", "m01-l" + "1" * 300, "characters long, at most 64"),
    ("slug", "../up", "path separator"),
    ("slug", "Foundations", "is not a slug"),
    ("slug", "a" * 61, "at most 60"),
])
def test_an_id_that_could_name_a_path_is_refused_naming_file_and_field(
        tmp_path: Path, field: str, value: str, why: str) -> None:
    path = tmp_path / "curriculum.yaml"
    quoted = '"' + value + '"'
    path.write_text(CURRICULUM.format(**{**GOOD, field: quoted}))
    with pytest.raises(ArtefactLoadError) as caught:
        artefacts.load(path)
    message = str(caught.value)
    name = {"module": "modules.0.id", "slug": "modules.0.slug", "lesson": "modules.0.lessons.0.id"}[field]
    assert message.startswith(f"{path}: field '{name}': ") and why in message and "\n" not in message


def test_a_repeated_lesson_id_is_refused_because_two_lessons_would_be_one_file(tmp_path: Path) -> None:
    text = CURRICULUM.format(**GOOD)
    text += "      - id: m01-l01\n        title: Again\n        minutes: 20\n        summary: S\n"
    with pytest.raises(ArtefactLoadError, match="lesson id 'm01-l01' is used more than once"):
        artefacts.parse(artefacts.Curriculum, text, "curriculum.yaml")


@pytest.mark.parametrize("term", ["a\x00b", "line\nbreak", "x" * 65, "\u2028"])
def test_a_term_with_a_control_character_or_too_long_is_refused(term: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        artefacts.NewTerm(term=term, definition="d")


def test_a_term_may_hold_a_slash() -> None:
    assert artefacts.NewTerm(term="TCP/IP", definition="d").term == "TCP/IP"


@given(st.text(max_size=80))
def test_an_accepted_module_or_lesson_id_can_never_leave_its_directory(value: str) -> None:
    from pydantic import TypeAdapter, ValidationError

    from stay.artefacts import LessonId, ModuleId, Slug

    for kind in (ModuleId, LessonId, Slug):
        try:
            accepted = TypeAdapter(kind).validate_python(value)
        except ValidationError:
            continue
        assert accepted == value and len(value) <= 64
        assert "/" not in value and "\\" not in value and ".." not in value and value.isprintable()
        assert Path("/courses", value).resolve().parent == Path("/courses")
