"""Each text field is rendered as its model declares it is written (issue 19 item 5):
Markdown through the safe renderer, plain text escaped, from one declaration
(``stay.artefacts.text_format``) that the answer schema also carries to the model."""

from __future__ import annotations

import html.parser
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel

from stay import artefacts
from stay.artefacts import FORMAT_NOTES, text_format
from stay.stages import REGISTRY, answer_schema
from stay.view import build_site
from tests.wire_schema import wire

LESSON = Path("modules") / "m01-from-url-to-connection"
HOSTILE = "<script>alert(1)</script> [click](javascript:alert(3))"


class _Tree(html.parser.HTMLParser):
    """Start tags inside the element with id ``root`` (every one, for None), each with
    the tag.class path it sits in."""

    def __init__(self, root: str | None) -> None:
        super().__init__()
        self.root = root
        self.depth = 0
        self.tags: list[tuple[tuple[str, ...], dict[str, str | None]]] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if self.root is None:
            self.tags.append(((tag,), found))
        elif self.depth or found.get("id") == self.root:
            self.depth += 1
            self.stack.append(f"{tag}.{found.get('class') or ''}")
            self.tags.append((tuple(self.stack), dict(found)))

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1
            self.stack.pop()


def _tags(page: bytes, root: str | None) -> list[tuple[tuple[str, ...], dict[str, str | None]]]:
    tree = _Tree(root)
    tree.feed(page.decode())
    return tree.tags


def _edit(path: Path, change: Any) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def test_a_task_holding_a_markdown_list_renders_as_a_list_and_a_plain_dash_stays_text(sample_copy: Path) -> None:
    def exercise(data: Any) -> None:
        data["exercises"][0]["task"] = "Look up two names:\n\n- `example.com`\n- **www.example.com**\n"

    def quiz(data: Any) -> None:
        wrong = next(o for o in data["items"][0]["options"] if not o["correct"])
        wrong["why_wrong"] = "- x is not a list"

    _edit(sample_copy / LESSON / "m01-l01.exercises.yaml", exercise)
    _edit(sample_copy / LESSON / "m01-l01.quiz.yaml", quiz)
    _edit(sample_copy / "project.yaml", lambda data: data["rubric"][0]["levels"].update(exemplary="- y as written"))
    site = build_site(sample_copy)
    tags = [path[-1] for path, _attrs in _tags(site["m01-l01.html"], "m01-l01-e1")]
    task = tags.index("div.task")
    assert tags[task + 1:task + 8] == ["div.markdown", "p.", "ul.", "li.", "code.", "li.", "strong."]
    page = site["m01-l01.html"].decode()
    assert '<span class="as-written">- x is not a list</span>' in page
    assert not any(path[-1] == "ul." for path, _attrs in _tags(site["m01-l01.html"], "m01-l01-q1"))
    capstone = site["capstone.html"].decode()
    assert '<dd><span class="as-written">- y as written</span></dd>' in capstone


def test_markdown_fields_stay_safe(sample_copy: Path) -> None:
    _edit(sample_copy / LESSON / "m01-l01.exercises.yaml",
          lambda data: data["exercises"][0].update(task=HOSTILE, solution=HOSTILE))
    _edit(sample_copy / "project.yaml", lambda data: data.update(brief=HOSTILE))
    site = build_site(sample_copy)
    for name in ("m01-l01.html", "capstone.html"):
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in site[name].decode()
        for (tag,), attrs in _tags(site[name], None):
            assert tag != "script" or attrs.get("src") in ("progress.js", "quiz.js"), (name, attrs)
            assert not (attrs.get("href") or "").lower().startswith("javascript:"), (name, attrs)


def _models(model: type[BaseModel]) -> list[type[BaseModel]]:
    """``model`` and every model its fields hold, at any depth."""
    found: list[type[BaseModel]] = []

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in found:
            found.append(annotation)
            for info in annotation.model_fields.values():
                visit(info.annotation)
        for arg in get_args(annotation):
            visit(arg)

    visit(model)
    return found


def test_every_declared_format_reaches_the_wire_schema_and_the_issues_fields_are_declared() -> None:
    declared = set()
    for stage in REGISTRY:
        schema = wire(answer_schema(stage.answer))
        for model in _models(stage.answer):
            shape = schema if model is stage.answer else schema["$defs"][model.__name__]
            for name, info in model.model_fields.items():
                kind = text_format(model, name)
                if kind is not None:
                    declared.add((model.__name__, name))
                    assert FORMAT_NOTES[kind] in shape["properties"][info.alias or name]["description"]
    wanted = {("Exercise", f) for f in ("task", "hints", "solution")} | {
        ("QuizItem", "stem"), ("QuizItem", "explanation"), ("Option", "text"), ("Option", "why_wrong"),
        ("Project", "brief"), ("Project", "deliverable"), ("Milestone", "description"),
        ("RubricLevels", "exemplary")}
    assert wanted <= declared
    assert text_format(artefacts.RubricCriterion, "levels") == "plain"  # the file's model, for the viewer


def test_each_stage_prompt_names_its_markdown_fields_as_markdown() -> None:
    from stay.stages import Prompts

    prompts = Prompts.load()
    for stage in REGISTRY:
        fields = {name for model in _models(stage.answer) for name in model.model_fields
                  if text_format(model, name) == "markdown"}
        head = prompts.template(stage.prompt).split("\n- ", 1)[0]  # the lines before the first rule
        assert all(f"`{name}`" in head for name in fields) and ("Markdown" in head or not fields), stage.name
