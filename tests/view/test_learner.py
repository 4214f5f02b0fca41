"""The learner's side of the rendered pages, read as HTML (the browser's side is
test_learner_browser.py): no quiz shows its right option before an answer, the
no-script answer key lists each right option, and the progress hooks progress.js
reads (the convention's elements) carry the course's slug and ids."""

from __future__ import annotations

import html.parser
from dataclasses import dataclass, field
from typing import Any

import pytest

import stay.artefacts as artefacts
from stay.view import build_site
from stay.view._env import STATIC_FILES
from stay.view._load import load_course
from tests.conftest import SAMPLE
from tests.view.conftest import normalise

VOID = frozenset(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"])


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list[Node | str] = field(default_factory=list)

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def find(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if (tag is None or child.tag == tag) and (cls is None or cls in child.classes()):
                    found.append(child)
                found.extend(child.find(tag, cls))
        return found

    def text(self, shown_only: bool = False) -> str:
        """The text inside, or only what shows: no ``hidden`` element, no closed ``details``
        beyond its summary (a page's state before any click or script)."""
        parts = []
        for child in self.children:
            if isinstance(child, str):
                parts.append(child)
            elif not (shown_only and "hidden" in child.attrs):
                if shown_only and child.tag == "details" and "open" not in child.attrs:
                    parts.extend(c.text(True) for c in child.find("summary"))
                else:
                    parts.append(child.text(shown_only))
        return normalise(" ".join(parts))


class _Tree(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        while len(self.stack) > 1:  # the templates close what they open; this only guards
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(data: bytes) -> Node:
    tree = _Tree()
    tree.feed(data.decode("utf-8"))
    return tree.root


@pytest.fixture(scope="module")
def site() -> dict[str, bytes]:
    return build_site(SAMPLE)


def _lessons() -> list[Any]:
    return [lesson for lesson in load_course(SAMPLE).lessons if lesson.page]


def _quiz(lesson_id: str) -> artefacts.Quiz:
    quiz = artefacts.load(next(SAMPLE.glob(f"modules/*/{lesson_id}.quiz.yaml")))
    assert isinstance(quiz, artefacts.Quiz)
    return quiz


def test_no_quiz_shows_its_right_option_before_an_answer(site: dict[str, bytes]) -> None:
    lessons = _lessons()
    assert lessons
    for lesson in lessons:
        page = parse(site[lesson.page])
        (section,) = [s for s in page.find("section", "quiz") if s.attrs.get("id") == "quiz"]
        shown = section.text(shown_only=True)
        for item in _quiz(lesson.id).items:
            (article,) = [a for a in section.find("article", "quiz-item") if a.attrs.get("data-item") == item.id]
            assert article.find("details") == [], item.id  # no disclosure a learner could open per item
            assert normalise(item.explanation) not in shown, item.id
            if item.type == "short":
                assert item.answer is not None and normalise(item.answer) not in shown, item.id
                continue
            assert item.options is not None
            (fieldset,) = article.find("fieldset")
            assert normalise(item.stem) in fieldset.find("legend")[0].text()
            radios = fieldset.find("input")
            labels = {label.attrs.get("for"): label.text() for label in fieldset.find("label")}
            assert [r.attrs.get("type") for r in radios] == ["radio"] * len(item.options)
            assert len({r.attrs.get("name") for r in radios}) == 1  # one choice per item
            assert [labels[r.attrs.get("id")] for r in radios] == [normalise(o.text) for o in item.options]
            marked = [i for i, li in enumerate(fieldset.find("li", "option")) if "data-correct" in li.attrs]
            assert marked == [i for i, o in enumerate(item.options) if o.correct]  # only for the script
            for option in item.options:
                assert not option.why_wrong or normalise(option.why_wrong) not in shown, item.id
        assert "Correct." not in shown and "right answer" not in shown.lower()


def test_the_answer_key_without_script_is_one_disclosure_naming_each_right_option(site: dict[str, bytes]) -> None:
    for lesson in _lessons():
        page = parse(site[lesson.page])
        (key,) = page.find("details", "answers")
        assert key.find("summary")[0].text() == "Check your answers"
        text = key.text()
        for item in _quiz(lesson.id).items:
            assert normalise(item.explanation) in text
            for index, option in enumerate(item.options or []):
                if option.correct:
                    assert f"Right answer: {chr(ord('A') + index)}. {normalise(option.text)}" in text
                elif option.why_wrong:
                    assert normalise(option.why_wrong) in text
            if item.type == "short" and item.answer:
                assert f"Model answer: {normalise(item.answer)}" in text


def test_the_pages_carry_the_progress_hooks_with_the_courses_ids(site: dict[str, bytes]) -> None:
    course = load_course(SAMPLE)
    lessons = _lessons()
    index = parse(site["index.html"])
    (bar,) = index.find("div", "progress")
    assert bar.attrs == {"class": "progress", "data-course": course.slug, "data-title": course.title,
                         "data-lessons": ",".join(lesson.id for lesson in lessons)}
    assert bar.text()  # what a page without script says
    (link,) = index.find("a", "continue")
    assert link.attrs.get("data-course") == course.slug and "hidden" in link.attrs
    (reset,) = index.find("button", "reset-progress")
    assert reset.attrs.get("data-course") == course.slug
    for lesson in lessons:
        page = parse(site[lesson.page])
        (host,) = page.find("section", "lesson-progress")
        assert (host.attrs.get("data-course"), host.attrs.get("data-lesson"), host.attrs.get("data-page")) == \
            (course.slug, lesson.id, lesson.page)
        assert len(host.find("button", "finish")) == 1
        exercises = artefacts.load(next(SAMPLE.glob(f"modules/*/{lesson.id}.exercises.yaml")))
        assert isinstance(exercises, artefacts.Exercises)
        boxes = [box.attrs.get("data-exercise") for box in page.find("input") if "data-exercise" in box.attrs]
        assert boxes == [exercise.id for exercise in exercises.exercises]
    for name in ["index.html", *(lesson.page for lesson in lessons)]:
        scripts = [s.attrs.get("src") for s in parse(site[name]).find("script")]
        assert "progress.js" in scripts and set(scripts) <= set(STATIC_FILES), name
        assert all(site[src] for src in scripts)  # shipped with the site

