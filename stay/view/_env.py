"""The Jinja2 environment the course and report pages share, with its filters: Markdown
(markdown-it-py, raw HTML disabled) and the links between pages. Autoescaping is on for every
template: everything read from a course or a report is text."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from itertools import takewhile
from typing import Any, cast

from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context
from jinja2.runtime import Context
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from stay._display import fixed
from stay.artefacts import text_format
from stay.view._load import CourseView, badge_class

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
    env.filters["lesson_table"] = lesson_table
    return env


@pass_context
def _field(context: Context, owner: Any, name: str, item: str | None = None, breaks: bool = False) -> Markup:
    """``{{ exercise | field("task") }}``: a text field as its model declares it is written;
    ``{{ exercise | field("hints", hint) }}``: one ``item`` of a list or mapping field."""
    links = context.get("links")  # the course pages have them; links between lessons follow
    text = str(getattr(owner, name)) if item is None else item
    return item_html(owner, name, text, getattr(links, "lesson_pages", None), breaks=breaks)


def lesson_table(lessons: Iterable[Any]) -> str:
    """The lessons as ``data-lessons`` JSON for progress.js; autoescaped in a quoted attribute."""
    table = [{"id": lesson.id, "page": lesson.page, "title": lesson.title} for lesson in lessons]
    return json.dumps(table, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def static_text(name: str) -> str:
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


PYGMENTS_STYLE = "default"
MAX_HIGHLIGHT = 100_000
"""Longer code blocks are shown plain: highlighting is a courtesy, not worth a slow page."""

_LESSON_LINK = re.compile(r"(?:\.{1,2}/)*(?:[a-z0-9-]+/)?(m\d{2}-l\d{2})\.md(#[A-Za-z0-9_-]*)?")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    """The heading's source text, as the validator compares it with the plan."""
    anchor: str


@dataclass(frozen=True)
class Rendered:
    html: str
    headings: tuple[Heading, ...]


def _highlight(code: str, lang: str, _attrs: str) -> str:
    if not lang or len(code) > MAX_HIGHLIGHT:
        return ""  # markdown-it escapes it and wraps it in <pre><code>
    try:
        lexer = get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return ""
    body: str = pygments_highlight(code, lexer, _formatter())
    css_lang = re.sub(r"[^A-Za-z0-9_+-]", "", lang)
    return f'<pre class="highlight"><code class="language-{css_lang}">{body}</code></pre>\n'


@cache
def _formatter() -> HtmlFormatter[str]:
    return HtmlFormatter(nowrap=True, style=PYGMENTS_STYLE)


def pygments_css() -> str:
    """The stylesheet for highlighted code (same Pygments version, same bytes)."""
    css: str = HtmlFormatter(style=PYGMENTS_STYLE).get_style_defs(".highlight")  # type: ignore[no-untyped-call]
    return css + "\n"


def _image_as_link(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = token.attrGet("src") or ""
    return f'<a class="image-link" href="{escapeHtml(str(src))}">[image: {escapeHtml(alt)}]</a>'


def _table_open(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """A table scrolls inside its own keyboard-focusable region, never the page."""
    head = takewhile(lambda token: token.type != "thead_close", tokens[idx + 1:])
    heads = [token.content.strip() for token in head if token.type == "inline"]
    label = "Table: " + ", ".join(h for h in heads if h) if any(heads) else "Table"
    return (f'<div class="scroll" role="region" aria-label="{escapeHtml(label)}" tabindex="0">\n'
            + str(self.renderToken(tokens, idx, options, env)))


def _table_close(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return str(self.renderToken(tokens, idx, options, env)) + "</div>\n"


def _focusable(original: Any) -> Any:
    """A code block scrolls sideways inside itself: ``tabindex`` lets a keyboard reach it."""

    def render(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        html = str(original(tokens, idx, options, env))
        end = html.index(">", html.index("<pre"))  # the attribute goes last: <pre class=.. tabindex="0">
        return html[:end] + ' tabindex="0"' + html[end:]

    return render


@cache
def _parser(breaks: bool = False) -> MarkdownIt:
    """The lesson parser; ``breaks``: a newline inside a paragraph is a line break."""
    md = MarkdownIt("commonmark", {"html": False, "highlight": _highlight, "breaks": breaks})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_link)
    md.add_render_rule("table_open", _table_open)
    md.add_render_rule("table_close", _table_close)
    for rule in ("fence", "code_block"):
        md.add_render_rule(rule, _focusable(cast(RendererHTML, md.renderer).rules[rule]))
    return md


def anchor_for(text: str, used: set[str], prefix: str = "sec-", empty: str = "untitled") -> str:
    """A stable, unique fragment id for a heading (or a term): ``sec-`` and its words."""
    base = prefix + ("-".join(re.findall(r"[a-z0-9]+", text.lower())) or empty)
    anchor, n = base, 2
    while anchor in used:
        anchor, n = f"{base}-{n}", n + 1
    used.add(anchor)
    return anchor


def render_markdown(text: str, *, lesson_pages: Mapping[str, str] | None = None,
                    drop_title: str | None = None, breaks: bool = False) -> Rendered:
    """``text`` as safe HTML, an id on every heading, links between lessons pointed at their pages."""
    md = _parser(breaks)
    env: dict[str, Any] = {}
    tokens = md.parse(text, env)
    if (drop_title is not None and len(tokens) >= 3 and tokens[0].type == "heading_open"
            and tokens[0].tag == "h1" and tokens[1].content.strip() == drop_title.strip()):
        tokens = tokens[3:]
    headings: list[Heading] = []
    used: set[str] = set()
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            inline = tokens[index + 1]
            source = inline.content.strip() if inline.type == "inline" else ""
            anchor = anchor_for(source, used)
            token.attrSet("id", anchor)
            headings.append(Heading(int(token.tag[1]), source, anchor))
        if token.type == "inline" and lesson_pages is not None:
            for child in token.children or []:
                if child.type == "link_open":
                    _point_at_page(child, lesson_pages)
    html: str = md.renderer.render(tokens, md.options, env)
    return Rendered(html, tuple(headings))


def _point_at_page(link: Token, pages: Mapping[str, str]) -> None:
    href = str(link.attrGet("href") or "")
    match = _LESSON_LINK.fullmatch(href)
    if match is not None and match.group(1) in pages:
        link.attrSet("href", pages[match.group(1)] + (match.group(2) or ""))


def item_html(owner: Any, name: str, text: str, lesson_pages: Mapping[str, str] | None = None, *,
              breaks: bool = False) -> Markup:
    """A text field (or one item of it) as HTML by the format its model declares: Markdown in a
    ``div.markdown``; anything else escaped in a ``span.as-written``, so a "- x" stays text."""
    if text_format(type(owner), name) == "markdown":
        rendered = render_markdown(text.strip(), lesson_pages=lesson_pages, breaks=breaks).html
        return Markup(f'<div class="markdown">{rendered}</div>')
    return Markup(f'<span class="as-written">{escape(text.strip())}</span>')


_SAFE_FRAGMENT = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,79}")


def fragment(identifier: str) -> str:
    """An HTML id for any string read from disk: itself when a plain id, else a stable hash of it."""
    if _SAFE_FRAGMENT.fullmatch(identifier):
        return identifier
    return "id-" + hashlib.sha256(identifier.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Ref:
    label: str
    href: str | None


@dataclass
class OutcomeRow:
    id: str
    bloom: str
    text: str
    lesson_ref: Ref
    methods: list[str] = field(default_factory=list)
    sections: list[Ref] = field(default_factory=list)
    exercises: list[Ref] = field(default_factory=list)
    quiz: list[Ref] = field(default_factory=list)
    rubric: list[Ref] = field(default_factory=list)

    @property
    def gaps(self) -> list[str]:
        return [gap for missing, gap in (
            (not self.sections, "no plan section covers it"),
            (not self.quiz, "no quiz item"),
            ("exercise" in self.methods and not self.exercises, "no exercise, though the assessment expects one"),
            ("capstone" in self.methods and not self.rubric, "no rubric criterion, though the assessment expects one"),
        ) if missing]


class Links:
    """Where everything lives on the site. ``learner``: outcome and term links go to lessons."""

    def __init__(self, course: CourseView, *, learner: bool = False) -> None:
        self.learner = learner
        self.lesson_pages = {lesson.id: lesson.page for lesson in course.lessons}  # a page is named by its id
        self.with_terms = {lesson.id for lesson in course.lessons
                           if lesson.plan.model is not None and lesson.plan.model.new_terms}
        self.modules = {module.id: module.title for module in course.modules}
        outcomes = course.outcomes.model.outcomes if course.outcomes.model else []
        self.outcomes = {outcome.id: outcome.text for outcome in outcomes  # the home lists an outcome under its lesson
                         if not learner or outcome.lesson in self.lesson_pages}
        used: set[str] = set()
        self.terms: dict[str, str] = {}  # term -> its unique anchor, ``term-<words>``
        for term in course.glossary.model.terms if course.glossary.model else []:
            if term.term not in self.terms:
                self.terms[term.term] = anchor_for(term.term, used, "term-", "x")

    def lesson(self, lesson_id: str, part: str | None = None) -> str | None:
        page = self.lesson_pages.get(lesson_id)
        if page is None:
            return None
        return f"{page}#{fragment(part)}" if part else page

    def introduced_in(self, lesson_id: str) -> str | None:
        """The lesson's list of new terms, or the lesson when its plan lists none."""
        return self.lesson(lesson_id, "terms" if lesson_id in self.with_terms and not self.learner else None)

    def outcome(self, outcome_id: str) -> str | None:
        page = "index.html" if self.learner else "outcomes.html"
        return f"{page}#{fragment(outcome_id)}" if outcome_id in self.outcomes else None

    def term(self, term: str) -> str | None:
        anchor = self.terms.get(term)
        return f"glossary.html#{anchor}" if anchor else None

    def module(self, module_id: str) -> str | None:
        return f"index.html#{fragment(module_id)}" if module_id in self.modules else None


def outcomes_map(course: CourseView, links: Links, headings: Mapping[str, Mapping[str, str]] | None = None
                 ) -> tuple[list[OutcomeRow], list[str]]:
    """One row per outcome with everything that serves it, and the references to undefined outcomes."""
    headings = headings or {}
    rows: dict[str, OutcomeRow] = {}
    for outcome in course.outcomes.model.outcomes if course.outcomes.model else []:
        if outcome.id not in rows:
            rows[outcome.id] = OutcomeRow(outcome.id, outcome.bloom, outcome.text,
                                          Ref(outcome.lesson, links.lesson(outcome.lesson)))
    unknown: set[str] = set()

    def add(outcome_id: str | None, kind: str, ref: Ref) -> None:
        if outcome_id is None:
            return
        row = rows.get(outcome_id)
        if row is None:
            unknown.add(f"{outcome_id} (named by {ref.label})")
            return
        getattr(row, kind).append(ref)

    for evidence in course.assessment.model.evidence if course.assessment.model else []:
        row = rows.get(evidence.outcome)
        if row is not None:
            row.methods.extend(evidence.methods)
        else:
            unknown.add(f"{evidence.outcome} (named by assessment.yaml)")
    for lesson in course.lessons:
        if lesson.plan.model is not None:
            for section in lesson.plan.model.sections:
                for outcome_id in section.covers:
                    anchor = headings.get(lesson.id, {}).get(section.heading, "plan")
                    add(outcome_id, "sections", Ref(f"{lesson.id}: {section.heading}",
                                                    links.lesson(lesson.id, anchor)))
        if lesson.exercises.model is not None:
            for exercise in lesson.exercises.model.exercises:
                add(exercise.outcome, "exercises", Ref(exercise.id, links.lesson(lesson.id, exercise.id)))
        if lesson.quiz.model is not None:
            for item in lesson.quiz.model.items:
                add(item.outcome, "quiz", Ref(item.id, links.lesson(lesson.id, item.id)))
    for criterion in course.project.model.rubric if course.project.model else []:
        for outcome_id in criterion.outcomes:
            add(outcome_id, "rubric", Ref(criterion.id, f"capstone.html#{fragment(criterion.id)}"))
    return list(rows.values()), sorted(unknown)
