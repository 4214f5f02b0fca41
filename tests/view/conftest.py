from __future__ import annotations

import fcntl
import html.parser
import os
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


def authors_nav(page: bytes | str) -> str | None:
    """The inside of a course page's "For authors" navigation (its footer's), or None."""
    found = re.search(r'<nav class="authors" aria-label="For authors">(.*?)</nav>',
                      page.decode("utf-8") if isinstance(page, bytes) else page, re.DOTALL)
    return found.group(1) if found else None


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="session")
def built_course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course freshly built by stay (offline), with its ledger: the sample brief."""
    courses = tmp_path_factory.mktemp("built")
    result = build_course(HTTP_BRIEF, courses_dir=courses, yes=True, backend="offline", progress=quiet)
    assert result.complete, result.reason
    return result.course_dir


EVAL_BRIEFS = (ROOT / "evals" / "briefs" / "accessible-web-forms.yaml", ROOT / "evals" / "briefs" / "home-energy-audit.yaml")
EVAL_EPOCHS = 3
"""Two briefs at three epochs a run: 20 ways to split each brief's six builds, so the
smallest p-value is 2/400 and a clear regression can pass Holm's 0.01 (at two epochs the
design cannot reach it: every builds test would be inconclusive)."""


@pytest.fixture(scope="session")
def eval_reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two real offline eval runs, built in-process the way `pytest evals/` builds them: a
    baseline with nothing degraded and a candidate whose distractors the offline backend's
    quality knob degrades (a third of them), each two briefs x three epochs. Returns the
    paths of their reports (baseline, candidate)."""
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is a directory of this session's own: its parent is
    # shared by the workers (and by no other session); alone, the base is the session's
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "eval-reports"
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker builds them; the others wait, then read
        done = shared / "done"
        if not done.exists():
            _write_eval_reports(shared)
            done.touch()
    return shared / "baseline.json", shared / "fewer-misconceptions.json"


def _write_eval_reports(tmp: Path) -> None:
    from stay.scoring import default_scorers, scorer_versions
    from stay.scoring._report import report, write_report
    from stay.suite import OFFLINE, evaluate_build
    from stay.testing import heuristic_judge

    for label, seed, quality in (("baseline", 1, {"distractors": 0.0}), ("fewer-misconceptions", 2,
                                                                         {"distractors": 0.3})):
        builds: dict[str, list[dict[str, object]]] = {}
        for brief in EVAL_BRIEFS:
            for epoch in range(1, EVAL_EPOCHS + 1):
                slug, entry = evaluate_build(brief, epoch=epoch, courses_dir=tmp / label, backend=OFFLINE,
                                             prompts_dir=None, judge=heuristic_judge(), run_seed=seed, quality=quality)
                builds.setdefault(slug, []).append(entry)
        path = tmp / f"{label}.json"
        write_report(path, report(label=label, backend=OFFLINE, prompts_dir="prompts (packaged)", prompt_hashes={},
                                  scorers=scorer_versions(default_scorers(heuristic_judge())), builds=builds,
                                  epochs=EVAL_EPOCHS, seed=seed, quality=quality))


@pytest.fixture(scope="session")
def rendered_sites(tmp_path_factory: pytest.TempPathFactory, eval_reports: tuple[Path, Path]) -> Path:
    """Every kind of site the viewer writes, in one directory (tests/view/sites.py)."""
    from tests.view.sites import write_sites

    return write_sites(tmp_path_factory.mktemp("sites"), tmp_path_factory.mktemp("courses"), eval_reports)
