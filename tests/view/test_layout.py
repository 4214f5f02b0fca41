"""The lesson page's order, field rendering, Bloom badges and wide things in their own
boxes, read from the rendered HTML and the stylesheet (no browser: see
test_layout_browser.py and test_a11y_browser.py for the pages in Chromium)."""

from __future__ import annotations

import html.parser
import re
import shutil
from pathlib import Path
from typing import get_args

import pytest
import yaml

from stay.artefacts import BloomLevel
from stay.view import build_site, render_compare_html, render_run_summary_html
from stay.view._env import static_text
from tests.conftest import SAMPLE
from tests.view.report_data import HEADER, ITEMS, ROWS


@pytest.fixture(scope="module")
def sample_site() -> dict[str, bytes]:
    return build_site(SAMPLE)


class _Elements(html.parser.HTMLParser):
    """Each start tag with its attributes and the tags open around it."""

    VOID = frozenset(["br", "img", "input", "meta", "link", "hr", "wbr", "source", "col", "area"])

    def __init__(self) -> None:
        super().__init__()
        self.open: list[tuple[str, dict[str, str | None]]] = []
        self.found: list[tuple[str, dict[str, str | None], list[tuple[str, dict[str, str | None]]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs), list(self.open)))
        if tag not in self.VOID:
            self.open.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        while self.open and self.open.pop()[0] != tag:
            pass


def elements(page: bytes | str) -> list[tuple[str, dict[str, str | None], list[tuple[str, dict[str, str | None]]]]]:
    parser = _Elements()
    parser.feed(page.decode() if isinstance(page, bytes) else page)
    return parser.found


def _pages(site: dict[str, bytes]) -> dict[str, bytes]:
    return {name: data for name, data in site.items() if name.endswith(".html")}


def report_pages() -> dict[str, str]:
    return {"compare.html": render_compare_html(HEADER, ROWS, ITEMS),
            "run.html": render_run_summary_html({"label": "minimal", "briefs": {"b": {"scorers": {"validator": {
                "score": 0.5, "items": [{"item": "x", "score": 0.5, "reason": "why"}]}}}}})}


def test_a_lesson_page_starts_with_the_lesson_and_folds_the_plan_after_it(sample_site: dict[str, bytes]) -> None:
    lessons = [name for name in sample_site if re.fullmatch(r"m\d{2}-l\d{2}\.html", name)]
    assert lessons
    for name in lessons:
        found = elements(sample_site[name])
        order = [tag + "." + str(attrs.get("class") or attrs.get("id")) for tag, attrs, _ in found]
        lesson = order.index("article.lesson")
        plan = next(i for i, (tag, attrs, _) in enumerate(found) if attrs.get("id") == "plan")
        files = order.index("details.files for-authors")
        assert lesson < plan < files, name  # the text, then the author's plan, then the files
        assert found[plan][0] == "details" and "open" not in found[plan][1], name  # folded
        sections = next(ancestors for tag, attrs, ancestors in found if attrs.get("class") == "sections")
        assert ("details", found[plan][1]) in sections, name  # the plan's table is inside the panel
        assert "<summary><h2 id=\"plan-heading\">For authors: the plan</h2></summary>" in sample_site[name].decode()


def test_a_multi_line_capstone_brief_keeps_its_lines_and_paragraphs(tmp_path: Path) -> None:
    course = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    project = yaml.safe_load((course / "project.yaml").read_text(encoding="utf-8"))
    lines = ["Pick one real HTTPS URL.", "Trace one request end to end."]
    project["brief"] = "\n".join(lines) + "\n\nThen break it on purpose."
    project["deliverable"] = "\n".join(lines)  # other fields may be hard-wrapped prose: they flow
    (course / "project.yaml").write_text(yaml.safe_dump(project, sort_keys=False), encoding="utf-8")
    page = build_site(course)["capstone.html"].decode()
    lede = re.search(r'<div class="lede"><div class="markdown">(.*?)</div></div>', page, re.DOTALL)
    assert lede is not None
    paragraphs = re.findall(r"<p>(.*?)</p>", lede.group(1), re.DOTALL)
    assert len(paragraphs) == 2  # the blank line: two paragraphs
    assert re.split(r"<br\s*/?>\s*", paragraphs[0]) == lines  # the newline: a line break, not a space
    deliverable = re.search(r'<h2 id="deliverable">Deliverable</h2>\s*<div><div class="markdown"><p>(.*?)</p>', page,
                            re.DOTALL)
    assert deliverable is not None and deliverable.group(1) == "\n".join(lines)


def _rules(css: str) -> dict[str, dict[str, str]]:
    rules: dict[str, dict[str, str]] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)):
        declarations = dict(
            (key.strip(), value.strip()) for key, value in (d.split(":", 1) for d in body.split(";") if ":" in d))
        for selector in selectors.split(","):
            rules.setdefault(selector.strip(), {}).update(declarations)
    return rules


def _luminance(colour: str) -> float:
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two #rrggbb colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_each_bloom_level_has_its_own_colour_with_aa_contrast_and_its_name_written(
        sample_site: dict[str, bytes]) -> None:
    rules = _rules(static_text("style.css"))
    levels = get_args(BloomLevel)
    colours = {level: (rules[f".bloom-{level}"]["color"], rules[f".bloom-{level}"]["background"]) for level in levels}
    assert len({background for _, background in colours.values()}) == len(levels)  # distinct
    assert len({text for text, _ in colours.values()}) == len(levels)
    assert {level: round(contrast(*pair), 2) for level, pair in colours.items()
            if contrast(*pair) < 4.5} == {}  # WCAG AA for normal text
    badges = [(attrs.get("class"), page) for page in _pages(sample_site).values()
              for tag, attrs, _ in elements(page) if "bloom" in str(attrs.get("class", "")).split()]
    assert badges
    for page in _pages(sample_site).values():
        for level, text in re.findall(r'<span class="bloom bloom-([a-z]+)">([^<]*)</span>', page.decode()):
            assert text == level and level in levels  # the name is always written: colour is not the only signal


def test_every_table_and_code_block_scrolls_in_its_own_focusable_box(sample_site: dict[str, bytes]) -> None:
    pages = {**_pages(sample_site), **report_pages()}
    tables = 0
    loose = []
    for name, page in pages.items():
        for tag, attrs, ancestors in elements(page):
            if tag == "table":
                tables += 1
                boxes = [a for t, a in ancestors if t == "div" and "scroll" in str(a.get("class", "")).split()]
                if not boxes or boxes[-1].get("tabindex") != "0" or boxes[-1].get("role") != "region" \
                        or not boxes[-1].get("aria-label"):
                    loose.append((name, "table", attrs.get("class")))
            if tag == "pre" and attrs.get("tabindex") != "0":
                loose.append((name, "pre", attrs.get("class")))
    assert tables > len(pages)  # the sample's lessons and the reports have tables
    assert loose == []


def test_a_lessons_table_is_a_region_named_by_its_header_cells(sample_site: dict[str, bytes]) -> None:
    page = sample_site["m01-l01.html"].decode()
    source = (SAMPLE / "modules" / "m01-from-url-to-connection" / "m01-l01.md").read_text(encoding="utf-8")
    header = next(line for line in source.splitlines() if line.startswith("|"))
    cells = [cell.strip() for cell in header.strip("|").split("|")]
    assert f'<div class="scroll" role="region" aria-label="Table: {", ".join(cells)}" tabindex="0">' in page
