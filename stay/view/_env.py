"""The Jinja2 environment the course pages and the report pages share.

Templates and static files are package data (``stay/view/templates``,
``stay/view/static``), found through the package loader, so a wheel install has
them. Autoescaping is on for every template: everything read from a course or a
report is text; the exceptions are a lesson's HTML and the text fields its model
declares Markdown (the ``field`` and ``field_item`` filters, by ``text_format``), which
markdown-it-py rendered with raw HTML disabled (``_markdown.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context
from jinja2.runtime import Context
from markupsafe import Markup

from stay._display import fixed
from stay.view._links import fragment
from stay.view._markdown import item_html
from stay.view._status import badge_class

STATIC_FILES = ("style.css", "progress.js", "quiz.js")


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("stay.view", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fragment"] = fragment
    env.filters["badge_class"] = badge_class
    env.filters["minutes"] = _minutes
    env.filters["number"] = fixed
    env.filters["signed"] = lambda value, digits=3: fixed(value, digits, signed=True)
    env.filters["pvalue"] = _pvalue
    env.filters["field"] = _field
    env.filters["field_item"] = _field_item
    env.filters["lesson_table"] = lesson_table
    return env


@pass_context
def _field(context: Context, owner: Any, name: str, breaks: bool = False) -> Markup:
    """``{{ exercise | field("task") }}``: a text field as its model declares it is written;
    ``breaks=True`` keeps a Markdown field's newlines as line breaks (the capstone's brief,
    whose lines are its author's; a task or solution may be hard-wrapped, as the offline
    templates write them, and flows as CommonMark says)."""
    return item_html(owner, name, str(getattr(owner, name)), _lesson_pages(context), breaks=breaks)


@pass_context
def _field_item(context: Context, owner: Any, name: str, text: str) -> Markup:
    """``{{ exercise | field_item("hints", hint) }}``: one item of a list or mapping field."""
    return item_html(owner, name, text, _lesson_pages(context))


def _lesson_pages(context: Context) -> Any:
    links = context.get("links")  # the course pages have them; links between lessons follow
    return getattr(links, "lesson_pages", None)


def lesson_table(lessons: Iterable[Any]) -> str:
    """The lessons that have a page, as the JSON a "continue where you left off" link
    carries (``data-lessons``): ``[{"id", "page", "title"}]`` in course order, so
    progress.js names the stored page by its title without another link to it on the
    page (the listing has none). Autoescaping makes it safe in a quoted attribute."""
    table = [{"id": lesson.id, "page": lesson.page, "title": lesson.title} for lesson in lessons if lesson.page]
    return json.dumps(table, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def static_text(name: str) -> str:
    """A static file shipped in the package (a stylesheet or the quiz script)."""
    return resources.files("stay.view").joinpath("static", name).read_text(encoding="utf-8")


def _minutes(value: int | None) -> str:
    if value is None:
        return "n/a"
    hours, minutes = divmod(int(value), 60)
    if hours and minutes:
        return f"{hours} h {minutes} min"
    return f"{hours} h" if hours else f"{minutes} min"


def _pvalue(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value < 0.001:
        return f"{value:.1e}"
    return f"{value:.3f}"
