"""The rendered pages in a real browser: headless Chromium (Debian's ``chromium``)
driven by Playwright. Playwright is told which browser to run and never downloads
one. Every page is loaded over a loopback HTTP server, as ``stay view --serve``
offers it; screenshots go to tests/view/screenshots/ (git-ignored).

Locally these tests skip, naming the missing package, when Chromium or Playwright is
not installed; under CI (``CI`` set) a missing browser fails instead, since
.ci/run installs it.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

import pytest

from stay.scoring.scorers import SCORERS
from stay.view import render_compare_html, render_course, render_run_summary_html
from tests.conftest import SAMPLE
from tests.expected import artefacts_of
from tests.fixtures.rules.ast import SAMPLE_DATA, own_data
from tests.view.report_data import HEADER, ITEMS, ROWS

SCREENSHOTS = Path(__file__).parent / "screenshots"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must provide it (.ci/run installs it)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        _missing("headless Chromium is not installed: install Debian's package chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the Python package playwright is not installed: pip install -e '.[dev]'")
    executable = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    with sync_playwright() as playwright:
        # launch() gives every browser a fresh, empty profile (a new --user-data-dir) and --headless
        launched = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        yield launched
        launched.close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(directory: Path) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
        # a short poll: shutdown() waits for the loop to notice, 0.5 s a server by default
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@dataclass
class Watch:
    """What went wrong while pages loaded: console errors, script errors, failed or
    refused requests, and any request that left the loopback server."""

    base: str
    problems: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> None:
        page.on("console", lambda m: m.type == "error" and self.problems.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: self.problems.append(f"script error: {e}"))
        page.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.url} {r.failure}"))
        page.on("response", lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"))
        page.on("request", lambda r: (not r.url.startswith(self.base) and not r.url.startswith("data:")
                                      and self.problems.append(f"fetched from outside: {r.url}")))


@contextmanager
def watched_context(browser: Any, base: str, pages: int = 1) -> Iterator[tuple[list[Any], Watch]]:
    """A fresh browser context (its own, empty localStorage) at a desktop width, with
    ``pages`` pages (tabs), each watched for what goes wrong; closed afterwards."""
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    try:
        watch = Watch(base)
        opened = [context.new_page() for _ in range(pages)]
        for page in opened:
            watch.attach(page)
        yield opened, watch
    finally:
        context.close()


@dataclass
class Crawl:
    """What a crawl from index.html found."""

    ids: dict[str, set[str]]
    """Every page reached, by URL: its element ids."""
    links: list[tuple[str, str]]
    """Every internal link, (page, href): to a page, or a data file to download."""
    downloads: dict[str, bytes]
    """Every data file a link offers for download (``<a download>``), by URL: its bytes, as
    the server gave them with status 200; a browser would save it, not open it."""
    problems: list[str]


def crawl(browser: Any, base: str) -> Crawl:
    """Every page reachable from index.html, and every download its links offer: each
    fetched once, never navigated to."""
    page = browser.new_page()
    watch = Watch(base)
    watch.attach(page)
    found = Crawl({}, [], {}, watch.problems)
    queue = [base + "index.html"]
    tried: set[str] = set()
    while queue:
        url = queue.pop()
        if url in tried:
            continue
        tried.add(url)
        response = page.goto(url)
        if response is None or response.status != 200:
            continue  # the watch records the failure; links to it count as broken
        found.ids[url] = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
        anchors = page.eval_on_selector_all("a[href]", "els => els.map(a => [a.href, a.hasAttribute('download')])")
        for href, download in anchors:
            if not href.startswith(base):
                continue
            found.links.append((url, href))
            target = urldefrag(href).url
            if download:
                if target not in found.downloads:
                    fetched = page.request.get(target)
                    if fetched.status == 200:
                        found.downloads[target] = fetched.body()
                    else:
                        watch.problems.append(f"HTTP {fetched.status}: {target} (a download)")
            elif target not in tried:
                queue.append(target)
    page.close()
    return found


def _broken(found: Crawl) -> list[tuple[str, str]]:
    broken = []
    for source, href in found.links:
        target, fragment = urldefrag(href)
        if target in found.downloads and not fragment:
            continue
        if target not in found.ids or (fragment and fragment not in found.ids[target]):
            broken.append((source, href))
    return broken


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path))  # what the window shows (a full-page one costs ten times more)
    print(f"screenshot: {path}")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_course(SAMPLE, tmp_path_factory.mktemp("site") / "sample")


def test_the_sample_site_has_no_errors_and_every_internal_link_resolves(browser: Any, serve: Any,
                                                                       sample_site: Path) -> None:
    base = serve(sample_site)
    found = crawl(browser, base)
    assert found.problems == []
    pages = {urlsplit(url).path.lstrip("/") for url in found.ids}
    assert pages == {p.name for p in sample_site.glob("*.html")}  # every page is reachable from home
    assert len(found.links) > 300
    assert _broken(found) == []
    assert SAMPLE_DATA  # the sample's data files are offered, and download byte for byte
    assert {urlsplit(url).path.lstrip("/"): body for url, body in found.downloads.items()} == SAMPLE_DATA


def test_a_freshly_built_course_is_browsable(browser: Any, serve: Any, built_course: Path, tmp_path: Path) -> None:
    """A course stay just built, with its ledger: its home and status pages load cleanly,
    every artefact is current, and every link on them names a page of the site. (The
    sample's crawl above follows every link of every page; this site has the same pages.)"""
    site = render_course(built_course, tmp_path / "built")
    base = serve(site)
    page = browser.new_page()
    watch = Watch(base)
    watch.attach(page)
    data = own_data(built_course)  # the data files the build wrote, which the site copies
    pages = {p.name for p in site.glob("*.html")} | set(data)
    for name in ("index.html", "status.html"):
        page.goto(base + name)
        hrefs, ids = _in_page_links(page)
        internal = [h for h in hrefs if not h.startswith(("http:", "https:", "mailto:"))]
        assert len(internal) >= 6  # the site's navigation at least
        assert [h for h in internal if (h.split("#")[0] or name) not in pages] == []
        assert [h for h in internal if h.startswith("#") and h[1:] not in ids] == []
        if name == "index.html":  # the home offers every data file
            assert sorted(h for h in internal if h in data) == sorted(data)
    assert own_data(site) == data  # copied byte for byte
    assert page.locator("table.statuses .badge.status-current").count() == len(artefacts_of(built_course))
    screenshot(page, "built-course-status.png")
    assert watch.problems == []
    page.close()


def test_the_compare_report_and_the_run_summary_render_cleanly(browser: Any, serve: Any, tmp_path: Path) -> None:
    (tmp_path / "compare.html").write_text(render_compare_html(HEADER, ROWS, ITEMS), encoding="utf-8")
    report = {"version": 1, "label": "baseline", "backend": "offline", "judge": "offline heuristic judge",
              "models": {"judging": "claude-sonnet-5-5"}, "means": {"validator": 0.5},
              "briefs": {"b": {"slug": "b", "build": {"cost": 0.0},
                               "scorers": {"validator": {"score": 0.5, "judge": "j", "items": [
                                   {"item": "x", "score": 0.5, "reason": "why", "failed": False}]}}}}}
    (tmp_path / "run.html").write_text(render_run_summary_html(report), encoding="utf-8")
    base = serve(tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    watch = Watch(base)
    watch.attach(page)
    page.goto(base + "compare.html")
    assert page.locator("table.scorers tbody tr").count() == len(ROWS)
    assert page.locator("table.scorers svg.interval").count() == 2 * len(ROWS) - 1  # no difference: no bar
    assert page.locator("td.verdict-worse").inner_text() == "worse"
    assert page.locator("table.items tbody tr").count() == len(ITEMS)
    screenshot(page, "compare-report.png")
    page.goto(base + "run.html")
    assert page.locator("table.scorers svg.interval").count() == 1
    screenshot(page, "run-summary.png")
    assert watch.problems == []
    page.close()


def test_the_site_works_opened_from_disk(browser: Any, sample_site: Path) -> None:
    """No server: file:// pages load their stylesheet and the quiz script (the pages'
    Content-Security-Policy allows only the site's own files)."""
    page = browser.new_page()
    watch = Watch("file://")
    watch.attach(page)
    page.goto((sample_site / "m01-l01.html").as_uri())
    assert page.eval_on_selector("header.site", "e => getComputedStyle(e).display") == "flex"
    question = page.locator("#m01-l01-q1")
    question.locator("label[for='m01-l01-q1-o1']").click()  # quizzes in a browser: test_learner_browser.py
    question.locator("button.check-answer").click()
    question.locator(".explanation > .markdown").wait_for(state="visible", timeout=5000)
    assert watch.problems == []
    page.close()


def _in_page_links(page: Any) -> tuple[list[str], set[str]]:
    """Every link's href as written, and every element id, of the open page."""
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(a => a.getAttribute('href'))")
    return hrefs, set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))


def test_the_pages_the_evals_commands_write_from_two_real_runs(browser: Any, serve: Any, tmp_path: Path,
                                                              eval_reports: tuple[Path, Path]) -> None:
    """`stay evals compare A B --html` and `stay evals show B --html`, run on two offline
    eval runs whose candidate has degraded distractors, open cleanly in Chromium."""
    from stay.cli import main

    baseline, candidate = eval_reports
    assert main(["evals", "compare", str(baseline), str(candidate), "--html", str(tmp_path / "compare.html"),
                 "--allow", "uncalibrated"]) == 1
    assert main(["evals", "show", str(candidate), "--html", str(tmp_path / "run.html")]) == 0
    base = serve(tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    watch = Watch(base)
    watch.attach(page)
    for name, links in (("compare.html", 8), ("run.html", 10)):
        page.goto(base + name)
        hrefs, ids = _in_page_links(page)
        assert len(hrefs) >= links and all(h.startswith("#") for h in hrefs), hrefs  # self-contained: no other page
        assert [h for h in hrefs if h[1:] not in ids] == []
        for href in hrefs[:3]:  # following one scrolls to its target
            page.click(f'a[href="{href}"]')
            assert page.evaluate("location.hash") == href
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")  # nothing spills sideways
        screenshot(page, f"evals-{name.replace('.html', '.png')}")
    page.goto(base + "compare.html")
    assert page.locator("#gate").inner_text().startswith("Gate fires (exit 1):")
    # each verdict, then the judge's calibration under it (a test double's is none: allowed to gate)
    worse = page.locator("#scorer-distractor_quality td.verdict-worse").inner_text().splitlines()
    assert worse == ["worse", "judge: uncalibrated"]
    verdicts = [text.splitlines()[0] for text in page.locator("td.verdict-none").all_inner_texts()]
    assert verdicts == ["no detectable difference"] * (len(SCORERS) - 1)
    assert page.locator("table.scorers svg.interval").count() == 2 * len(SCORERS)  # the means, and the difference
    assert watch.problems == []
    page.close()
