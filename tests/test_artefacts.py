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
from tests.conftest import ROOT, SAMPLE

FILES = sorted(p for p in SAMPLE.rglob("*") if p.is_file())


def test_the_sample_course_has_every_kind_of_artefact() -> None:
    kinds = {artefacts.model_for(path).__name__ for path in FILES}
    assert kinds == {"CourseManifest", "Audience", "Curriculum", "Outcomes", "Assessment",
                     "LessonPlan", "LessonContent", "Exercises", "Quiz", "Project", "Glossary"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(SAMPLE).as_posix())
def test_every_sample_file_round_trips_byte_for_byte(path: Path) -> None:
    model = artefacts.load(path)
    assert artefacts.dump(model).encode("utf-8") == path.read_bytes()


def test_dumping_is_deterministic_and_keeps_field_order() -> None:
    plan = artefacts.load(next(p for p in FILES if p.name.endswith(".plan.yaml")), LessonPlan)
    rebuilt = LessonPlan.model_validate(plan.model_dump())
    assert artefacts.dump(rebuilt) == artefacts.dump(plan)
    assert list(artefacts.to_data(plan)) == ["lesson", "title", "minutes", "outcomes", "sections",
                                             "new_terms", "prerequisites", "revisits"]


def test_unknown_fields_are_kept_where_they_were() -> None:
    text = ("terms:\n  - term: scheme\n    definition: The protocol part.\n"
            "    introduced_in: m01-l01\n    note: kept\n")
    glossary = artefacts.parse(Glossary, text)
    assert artefacts.dump(glossary) == text


@settings(max_examples=300)
@given(st.lists(st.tuples(st.text(min_size=1).filter(str.strip), st.text(min_size=1).filter(str.strip)),
                max_size=4))
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
    ("lesson: '  '\nitems: []\n", "field 'lesson': Value error, must not be empty"),
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
        artefacts.parse(LessonPlan, "lesson: a\ntitle: b\nminutes: '20'\noutcomes: []\n"
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
