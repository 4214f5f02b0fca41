from __future__ import annotations

import html.parser
import re
from pathlib import Path

import pytest

from stay.pipeline import build_course
from tests.conftest import ROOT

HTTP_BRIEF = ROOT / "examples" / "briefs" / "how-http-requests-travel.yaml"


def quiet(_line: str) -> None:
    pass


_BLOCKS = frozenset(["p", "li", "td", "th", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "div", "tr", "br", "section", "article", "pre", "summary", "details", "ol", "ul", "dl", "table", "header", "footer", "nav", "main", "title"])


class _Text(html.parser.HTMLParser):
    """The text a reader sees (script and style left out), whitespace collapsed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        if tag in _BLOCKS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1
        if tag in _BLOCKS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def page_text(html_bytes: bytes | str) -> str:
    parser = _Text()
    parser.feed(html_bytes.decode("utf-8") if isinstance(html_bytes, bytes) else html_bytes)
    return normalise("".join(parser.parts))


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="session")
def built_course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course freshly built by stay (offline), with its ledger: the sample brief."""
    courses = tmp_path_factory.mktemp("built")
    result = build_course(HTTP_BRIEF, courses_dir=courses, yes=True, backend="offline", progress=quiet)
    assert result.complete, result.reason
    return result.course_dir
