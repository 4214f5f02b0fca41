"""The course viewer without a browser: what the pages say, that they say it safely,
and that rendering never touches the course."""

from __future__ import annotations

import hashlib
import html.parser
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stay.artefacts as artefacts
from stay.validate import validate_course
from stay.view import build_package, build_site, render_course
from stay.view._env import render_markdown
from stay.view._load import NO_LEDGER, badge_class, load_course
from tests.conftest import ROOT, SAMPLE, run_stay
from tests.expected import artefacts_of
from tests.fixtures.rules import MUTATIONS, make_fixture
from tests.fixtures.rules.ast import SAMPLE_DATA
from tests.view.conftest import normalise, page_text

SCRIPTS = ("progress.js", "quiz.js", "scorm.js")  # the only scripts a page may load: the site's own
CODE_FENCE = re.compile(r"^(```|~~~)")


def _plain(line: str) -> str | None:
    """A Markdown line as the text a reader sees, when it is plain prose; else None."""
    text = line.strip()
    if not text or text[0] in "#|>-*+`<" or re.match(r"\d+\.", text):
        return None
    text = text.replace("**", "").replace("`", "")
    if re.search(r"[\[\]*_<>\\]", text):
        return None
    return normalise(text)


def shown(owner: Any, name: str, text: str | None = None) -> str:
    """What a reader sees of a text field (or one item of it): a field declared Markdown as
    its rendered text, any other as written."""
    value = str(getattr(owner, name) if text is None else text)
    if artefacts.text_format(type(owner), name) == "markdown":
        return page_text(render_markdown(value).html)
    return value


def expectations(course: Path) -> Iterator[tuple[str, str]]:
    """(page, text) for every artefact of a course and every part of it a reader needs."""
    manifest = artefacts.load(course / "course.yaml")
    yield "index.html", manifest.title
    yield "index.html", manifest.brief.topic
    brief = manifest.brief  # the raw brief is the author's
    for text in (brief.title, brief.topic, brief.audience, brief.time_available, brief.industry or "",
                 *(brief.constraints or [])):
        yield "status.html", text
    audience = artefacts.load(course / "audience.yaml")
    yield "index.html", audience.learners  # who the course is for, and what it expects they know
    for text in audience.prior_knowledge:
        yield "index.html", text
    for text in [audience.learners, *audience.prior_knowledge, *audience.goals, *(audience.constraints or []),
                 *(audience.misconceptions or [])]:
        yield "status.html", text
    assessment = artefacts.load(course / "assessment.yaml")
    yield "outcomes.html", assessment.strategy
    for evidence in assessment.evidence:
        yield "outcomes.html", evidence.outcome
    curriculum = artefacts.load(course / "curriculum.yaml")
    for module in curriculum.modules:
        for text in (module.title, module.summary):
            yield "index.html", text
        for lesson in module.lessons:
            for text in (lesson.title, lesson.summary):
                yield "index.html", text
            yield from _lesson(course / "modules" / f"{module.id}-{module.slug}", lesson.id)
    for outcome in artefacts.load(course / "outcomes.yaml").outcomes:
        yield "outcomes.html", outcome.id
        yield "outcomes.html", outcome.text
        yield "index.html", outcome.text
        yield f"{outcome.lesson}.html", outcome.text
    project = artefacts.load(course / "project.yaml")
    for text in (project.title, shown(project, "brief"), shown(project, "deliverable")):
        yield "capstone.html", text
    for milestone in project.milestones:
        for text in (milestone.id, milestone.title, shown(milestone, "description")):
            yield "capstone.html", text
    for criterion in project.rubric:
        for text in (criterion.id, criterion.criterion, *criterion.levels, *criterion.levels.values()):
            yield "capstone.html", text
    for term in artefacts.load(course / "glossary.yaml").terms:
        for text in (term.term, term.definition, term.introduced_in):
            yield "glossary.html", text


def _lesson(directory: Path, lesson_id: str) -> Iterator[tuple[str, str]]:
    page = f"{lesson_id}.html"
    plan = artefacts.load(directory / f"{lesson_id}.plan.yaml")
    for section in plan.sections:
        yield page, section.heading
        yield page, section.kind
    for term in plan.new_terms:
        yield page, term.term
        yield page, term.definition
    for term in [*plan.prerequisites, *plan.revisits]:
        yield page, term
    content = artefacts.load(directory / f"{lesson_id}.md")
    fenced = False
    for line in content.body.splitlines():
        if CODE_FENCE.match(line.strip()):
            fenced = not fenced
            continue
        text = line if fenced else _plain(line)
        if text and text.strip():
            yield page, normalise(text)
    for exercise in artefacts.load(directory / f"{lesson_id}.exercises.yaml").exercises:
        for text in (exercise.id, exercise.outcome, shown(exercise, "task"), shown(exercise, "solution"),
                     *(shown(exercise, "hints", hint) for hint in exercise.hints)):
            yield page, normalise(text)
    for item in artefacts.load(directory / f"{lesson_id}.quiz.yaml").items:
        for text in (item.id, shown(item, "stem"), shown(item, "explanation"), item.answer, item.outcome,
                     item.retrieves):
            if text:
                yield page, normalise(text)
        for option in item.options or []:
            yield page, option.text
            if option.why_wrong:
                yield page, option.why_wrong


@pytest.fixture(scope="module")
def sample_site() -> dict[str, bytes]:
    return build_site(SAMPLE)


def test_every_artefact_of_the_sample_appears_on_its_page(sample_site: dict[str, bytes]) -> None:
    texts = {name: page_text(data) for name, data in sample_site.items() if name.endswith(".html")}
    wanted = list(expectations(SAMPLE))
    assert len(wanted) > 600  # the sample is 30 files; this is every part of every one
    missing = [(page, text) for page, text in wanted if normalise(text) not in texts[page]]
    assert missing == []


def test_the_pages_are_the_ones_the_issue_lists(sample_site: dict[str, bytes]) -> None:
    """The pages and the viewer's own files, and beside them the sample's data files at the
    paths its lessons name them by, byte for byte."""
    lessons = [f"m0{m}-l0{n}.html" for m in (1, 2) for n in (1, 2, 3)]
    assert SAMPLE_DATA
    assert sorted(sample_site) == sorted(["index.html", "outcomes.html", "glossary.html", "capstone.html",
                                          "status.html", "style.css", "pygments.css", "progress.js", "quiz.js", *lessons,
                                          *SAMPLE_DATA])
    assert {path: sample_site[path] for path in SAMPLE_DATA} == SAMPLE_DATA


def test_the_status_page_shows_the_budget_against_the_lessons_and_the_validator(sample_site: dict[str, bytes]
                                                                               ) -> None:
    status = page_text(sample_site["status.html"])
    assert "Lessons add up to 2 h 40 min of a budget of 3 h (20 min to spare)" in status
    checks = validate_course(SAMPLE).checks  # the viewer counts the rules every command runs
    assert f"default 0 0 {checks} --strict 0 0 {checks}" in status
    assert NO_LEDGER in status


def test_a_course_without_a_ledger_says_so_instead_of_inventing_statuses(sample_site: dict[str, bytes]) -> None:
    status = page_text(sample_site["status.html"])
    assert NO_LEDGER in status
    for name, data in sample_site.items():
        assert not name.endswith(".html") or b"status-edited" not in data, name  # stay.status calls every unledgered file edited


def test_glossary_terms_link_to_the_lesson_that_introduces_them(sample_site: dict[str, bytes]) -> None:
    glossary = sample_site["glossary.html"].decode()
    for term in artefacts.load(SAMPLE / "glossary.yaml").terms:
        assert re.search(rf'<dt id="term-[a-z0-9-]+">{re.escape(term.term)}</dt>\s*<dd>.*?'
                         rf'href="{term.introduced_in}\.html#terms"', glossary, re.DOTALL), term.term


def test_the_outcomes_map_lists_what_serves_each_outcome(sample_site: dict[str, bytes]) -> None:
    page = sample_site["outcomes.html"].decode()
    row = re.search(r'<tr id="m01-l01-o3".*?</tr>', page, re.DOTALL)
    assert row is not None
    cells = row.group(0)
    assert 'href="m01-l01.html#sec-encoding-awkward-characters"' in cells  # the plan section that teaches it
    assert 'href="m01-l01.html#m01-l01-e1"' in cells  # the exercise
    assert 'href="m01-l01.html#m01-l01-q5"' in cells and 'href="m01-l01.html#m01-l01-q6"' in cells
    assert "quiz, exercise" in cells
    assert "gap-note" not in page  # the sample serves every outcome


def test_the_lesson_page_renders_markdown_with_highlighting_and_section_links(sample_site: dict[str, bytes]) -> None:
    page = sample_site["m01-l01.html"].decode()
    assert '<pre class="highlight" tabindex="0"><code class="language-python">' in page  # focusable: it scrolls
    assert '<span class="kn">from</span>' in page  # Pygments tokens
    assert "<table>" in page  # the lesson's GFM table
    assert '<h2 id="sec-the-parts-of-a-url">The parts of a URL</h2>' in page
    assert '<a href="#sec-the-parts-of-a-url">The parts of a URL</a>' in page  # from the plan's sections
    assert page.count("<h1") == 1  # the lesson's own title heading is the page's
    solution = re.search(r'<details class="solution">.*?</details>', page, re.DOTALL)
    assert solution is not None and "Z%C3%BCrich" in solution.group(0)


def test_the_same_course_renders_to_the_same_bytes(tmp_path: Path, sample_copy: Path) -> None:
    """Every file of the site, its data files under assets/ among them."""
    one = render_course(sample_copy, tmp_path / "one")
    os.utime(sample_copy / "project.yaml", (1, 1))  # a touched file changes nothing
    two = render_course(sample_copy, tmp_path / "two")
    entries = sorted(p.relative_to(one).as_posix() for p in one.rglob("*"))
    assert entries == sorted(p.relative_to(two).as_posix() for p in two.rglob("*"))
    assert set(SAMPLE_DATA) <= set(entries)
    for name in entries:
        assert (one / name).is_file() == (two / name).is_file(), name
        assert not (one / name).is_file() or (one / name).read_bytes() == (two / name).read_bytes(), name


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def test_rendering_never_writes_into_the_course(tmp_path: Path, built_course: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    before = _snapshot(built_course)
    render_course(built_course, tmp_path / "site")
    monkeypatch.chdir(tmp_path)  # the command's default --out is ./site
    done = run_stay("view", built_course.name, "--courses-dir", str(built_course.parent))
    assert done.returncode == 0, done.stderr
    assert _snapshot(built_course) == before
    assert (tmp_path / "site" / built_course.name / "index.html").is_file()  # the default --out


def test_a_built_course_shows_its_statuses_gates_and_an_edit(tmp_path: Path, built_course: Path) -> None:
    course = tmp_path / "courses" / built_course.name
    shutil.copytree(built_course, course)
    site = build_site(course)
    status = page_text(site["status.html"])
    assert "design gate: approved" in status and "plan gate: approved" in status
    table = re.search(r'<table class="statuses">.*?</table>', site["status.html"].decode(), re.DOTALL)
    assert table is not None
    assert table.group(0).count('<span class="badge status-current">current</span>') == len(artefacts_of(course))
    quiz = next(course.glob("modules/*/m01-l02.quiz.yaml"))
    quiz.write_text(quiz.read_text() + "# a note\n")
    edited = build_site(course)
    assert b'<span class="badge status-edited">edited</span>' in edited["status.html"]
    assert b"quiz: edited" in edited["m01-l02.html"]  # in the lesson's "For authors" files
    assert b"edited" not in edited["index.html"]  # the learners' home shows no ledger


def test_any_status_string_gets_a_badge(tmp_path: Path, built_course: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    import stay.pipeline

    statuses = {"audience.yaml": ("orphaned", []), "curriculum.yaml": ("<b>new-kind</b>", ["x"])}
    monkeypatch.setattr(stay.pipeline, "status", lambda slug, courses_dir, settings=None: statuses)
    page = build_site(built_course)["status.html"].decode()
    assert '<span class="badge status-orphaned">orphaned</span>' in page
    assert '<span class="badge status-other">&lt;b&gt;new-kind&lt;/b&gt;</span>' in page
    assert badge_class("Stale") == "status-stale" and badge_class('" onclick="x') == "status-other"


def test_a_damaged_ledger_shows_on_the_page(tmp_path: Path, built_course: Path) -> None:
    course = tmp_path / built_course.name
    shutil.copytree(built_course, course)
    (course / ".state" / "hashes.json").write_text("{not json")
    status = page_text(build_site(course)["status.html"])
    assert "statuses cannot be derived" in status


HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def _hostile_course(tmp_path: Path) -> Path:
    course = tmp_path / "courses" / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    lesson_dir = course / "modules" / "m01-from-url-to-connection"
    md = lesson_dir / "m01-l01.md"
    md.write_text(md.read_text().replace("## Where a request begins\n", "## Where a request begins\n\n"
                  f"{HOSTILE}\n\n[click](javascript:alert(3)) ![pic](https://example.com/x.png)\n"
                  "<iframe src=https://example.com></iframe>\n"))
    quiz = lesson_dir / "m01-l01.quiz.yaml"
    quiz.write_text(quiz.read_text().replace("which part is the authority?", f"which part {HOSTILE}?"))
    curriculum = course / "curriculum.yaml"
    curriculum.write_text(curriculum.read_text().replace("title: From URL to open connection",
                                                         "title: From <script>URL</script> to connection")
                          .replace("What a URL names", "What a <script>URL</script> names"))
    glossary = course / "glossary.yaml"
    glossary.write_text(glossary.read_text().replace("- term: authority", '- term: "authority\\" onmouseover=\\"x"'))
    return course


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _pages(course: Path, kind: str) -> dict[str, bytes]:
    """The HTML a reader's browser gets: the site's pages, or a package's pages and the HTML its QTI
    quizzes hold (XML-escaped text an LMS renders)."""
    if kind in ("site", "learner"):
        return build_site(course, learner=kind == "learner")
    package = zipfile.ZipFile(io.BytesIO(build_package(course, kind, allow_incomplete=True)))
    pages = {name: package.read(name) for name in package.namelist()}
    for name in [name for name in pages if name.startswith("quizzes/")]:
        texts = ElementTree.fromstring(pages.pop(name)).iter("{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}mattext")
        pages[name + ".html"] = "".join(text.text or "" for text in texts).encode()
    return {name.removeprefix("web_resources/"): data for name, data in pages.items()}


@pytest.mark.parametrize("kind", ["site", "learner", "scorm", "cc"])
def test_everything_read_from_a_course_is_escaped(tmp_path: Path, kind: str) -> None:
    site = _pages(_hostile_course(tmp_path), kind)
    assert any(name.startswith("quizzes/") for name in site) == (kind == "cc")
    for name, data in site.items():
        if not name.endswith(".html"):
            continue
        parser = _Tags()
        parser.feed(data.decode())
        for tag, attrs in parser.tags:
            assert tag not in ("img", "iframe", "object", "embed"), (name, tag)
            assert tag != "script" or attrs in ({"src": js, "defer": None} for js in SCRIPTS), (name, attrs)
            assert not any(key.startswith("on") for key in attrs), (name, tag, attrs)
            for key in ("href", "src"):
                value = (attrs.get(key) or "").strip().lower()
                assert not value.startswith(("javascript:", "data:text", "vbscript:")), (name, tag, attrs)
    lesson = site["m01-l01.html"].decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in lesson
    assert "<h1>What a &lt;script&gt;URL&lt;/script&gt; names</h1>" in lesson  # the heading, and
    if kind in ("site", "learner"):  # a package has no breadcrumbs: the LMS navigates
        assert ">From &lt;script&gt;URL&lt;/script&gt; to connection</a>" in lesson  # the module in them
    if kind == "cc":  # the quiz's stem, as the LMS shows it
        assert "which part &lt;script&gt;alert(1)&lt;/script&gt;" in site["quizzes/m01-l01.xml.html"].decode()
    assert '<a class="image-link" href="https://example.com/x.png">[image: pic]</a>' in lesson


def test_damaged_and_missing_files_show_as_such(tmp_path: Path, no_validator: None) -> None:
    course = tmp_path / "courses" / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    m01 = course / "modules" / "m01-from-url-to-connection"
    (m01 / "m01-l01.quiz.yaml").write_text("items: [unclosed\n")
    (m01 / "m01-l01.exercises.yaml").unlink()
    (m01 / "m01-l02.md").write_bytes(b"---\nlesson: m01-l02\n---\n\xff\xfe not utf-8")
    (m01 / "m01-l02.plan.yaml").write_text("[" * 30_000)  # deep enough to overflow a C parser
    (m01 / "m01-l03.quiz.yaml").write_text("lesson: m01-l03\nitems:\n  - id: m01-l03-q1\n    type: essay\n")
    (course / "glossary.yaml").write_text("- just\n- a list\n")
    site = build_site(course)
    l01, l02, l03 = (page_text(site[f"m01-l0{n}.html"]) for n in (1, 2, 3))
    assert "The quiz cannot be shown: modules/m01-from-url-to-connection/m01-l01.quiz.yaml: not valid YAML" in l01
    assert "No exercises: modules/m01-from-url-to-connection/m01-l01.exercises.yaml is missing." in l01
    assert "The lesson text cannot be shown: not UTF-8 text" in l02
    assert "The plan cannot be shown:" in l02
    assert "field 'items.0.type'" in l03
    assert "The glossary cannot be shown:" in page_text(site["glossary.html"])
    assert "damaged" in page_text(site["status.html"])


def test_ids_that_could_name_paths_are_shown_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.plan.yaml"
    outside.write_text("lesson: x\n")
    course = tmp_path / "courses" / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    link = course / "modules" / "m01-from-url-to-connection" / "m01-l03.plan.yaml"
    link.unlink()
    link.symlink_to(outside)
    view = load_course(course)
    lessons = {lesson.id: lesson for lesson in view.lessons}
    assert lessons["m01-l03"].plan.problem == "a link that leaves the course directory; not followed"

    curriculum = course / "curriculum.yaml"
    text = curriculum.read_text().replace("id: m02-l03", "id: ../../../secret").replace("id: m02\n", "id: m02/..\n")
    curriculum.write_text(text)
    view = load_course(course)
    assert view.curriculum.model is None and view.lessons == ()  # the curriculum's own type refuses it
    assert "is not a module id" in str(view.curriculum.problem)
    site = build_site(course)
    assert not any("secret" in name for name in site)
    assert {name for name in site if "/" in name} == set(SAMPLE_DATA)  # the data files alone sit below the top
    assert "is not a module id: it holds a path separator" in page_text(site["index.html"])


def test_links_between_lesson_files_point_at_lesson_pages(tmp_path: Path) -> None:
    course = tmp_path / "courses" / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    md = course / "modules" / "m01-from-url-to-connection" / "m01-l01.md"
    md.write_text(md.read_text() + "\nSee [DNS](m01-l02.md) and [HTTP](../m02-the-http-conversation/m02-l01.md#x).\n")
    page = build_site(course)["m01-l01.html"].decode()
    assert '<a href="m01-l02.html">DNS</a>' in page and '<a href="m02-l01.html#x">HTTP</a>' in page


def test_write_site_refuses_a_directory_it_did_not_write_and_prunes_its_own(tmp_path: Path) -> None:
    course = tmp_path / "courses" / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(stay_usage_error()) as refused:
        render_course(course, foreign)
    assert "not empty and was not written by `stay.view`" in str(refused.value)  # a Python caller: its module
    out = render_course(course, tmp_path / "out")
    (out / "keep.txt").write_text("a file of the user's")
    curriculum = course / "curriculum.yaml"
    curriculum.write_text(curriculum.read_text().split("      - id: m02-l03")[0])
    render_course(course, out)
    assert not (out / "m02-l03.html").exists()
    assert (out / "m02-l02.html").is_file() and (out / "keep.txt").read_text() == "a file of the user's"
    recorded = json.loads((out / ".stay-site").read_text())["files"]
    assert recorded == {name: hashlib.sha256(data).hexdigest() for name, data in build_site(course).items()}


def stay_usage_error() -> type[Exception]:
    from stay.errors import UsageError

    return UsageError


@pytest.mark.parametrize(("args", "message"), [
    (["../etc"], "'../etc' is not a course slug"),
    (["no-such-course"], "there is no course 'no-such-course'"),
    (["how-http-requests-travel", "--out", "{sample}/site"], "is inside the course"),
    (["how-http-requests-travel", "--port", "9"], "--port needs --serve"),
])
def test_the_command_refuses_bad_input_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   args: list[str], message: str) -> None:
    args = [a.replace("{sample}", str(SAMPLE)) for a in args]
    monkeypatch.chdir(tmp_path)  # in-process: whatever it might write lands here
    done = run_stay("view", *args, "--courses-dir", str(SAMPLE.parent))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_serve_offers_the_site_on_loopback_only(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "stay.cli", "view", SAMPLE.name, "--courses-dir", str(SAMPLE.parent), "--out",
         str(tmp_path / "site"), "--serve", "--port", "0"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        match = re.search(r"at (http://127\.0\.0\.1:(\d+)/)", lines[1])
        assert match, lines
        deadline = time.monotonic() + 60  # at once when it works: the bound is for a loaded machine
        while True:
            try:
                with urllib.request.urlopen(match.group(1) + "m01-l01.html", timeout=5) as response:
                    body = response.read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert b"What a URL names" in body
    finally:
        process.terminate()
        process.wait(timeout=10)


class _Anchors(html.parser.HTMLParser):
    """A page's ids, its anchors' hrefs, and every local link of any tag (href or src; an
    external one is shown, never fetched)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.local: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href") is not None:
            self.hrefs.append(str(found["href"]))
        self.local += [str(found[key]) for key in ("href", "src")
                       if found.get(key) and not re.match(r"[a-z]+:", str(found[key]))]


_PARSED: dict[bytes, _Anchors] = {}


def _anchors(page: bytes) -> _Anchors:
    """A page's ids and links, parsed once per distinct page: the per-rule fixtures damage
    one file each, so most of their pages are byte-identical to the sample's."""
    if page not in _PARSED:
        parser = _Anchors()
        parser.feed(page.decode())
        parser.close()
        _PARSED[page] = parser
    return _PARSED[page]


def broken_links(site: dict[str, bytes]) -> list[tuple[str, str]]:
    """Internal links (to a page of the site, a fragment of one, or another file of it: a
    data file to download) that name nothing."""
    pages = {name: _anchors(data) for name, data in site.items() if name.endswith(".html")}
    broken = []
    for name, parser in pages.items():
        for href in parser.hrefs:
            if re.match(r"[a-z]+:", href):
                continue  # an external link: shown, never fetched
            target, _, fragment = href.partition("#")
            target = target or name
            if target not in site or (fragment and (target not in pages or fragment not in pages[target].ids)):
                broken.append((name, href))
    return broken


@pytest.fixture
def no_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The validator is proven elsewhere; these tests are about the pages, so skip its cost."""
    from stay.view import _site
    from stay.view._load import Validation

    monkeypatch.setattr(_site, "run_validator", lambda course, data_dir=None: Validation(ran=False, note="skipped"))


def test_the_sample_has_no_broken_internal_link(sample_site: dict[str, bytes]) -> None:
    assert broken_links(sample_site) == []


_RENDERED: dict[tuple[object, ...], Any] = {}
_PARSED_FILES: dict[tuple[object, ...], Any] = {}


@pytest.fixture
def remembered_markdown(monkeypatch: pytest.MonkeyPatch) -> None:
    """render_markdown and the course reader's parse_bytes are functions of their arguments alone,
    and the per-rule fixtures share all but one file of the sample: render and parse each
    distinct file once, so these tests pay for the pages, not for Markdown and YAML 101
    times over. The damaged file of each fixture is new text: parsed for real."""
    from stay.view import _site

    real = _site.render_markdown

    def remembered(text: str, *, lesson_pages: Mapping[str, str] | None = None,
                   drop_title: str | None = None) -> Any:
        key = (text, tuple(sorted(lesson_pages.items())) if lesson_pages is not None else None, drop_title)
        if key not in _RENDERED:
            _RENDERED[key] = real(text, lesson_pages=lesson_pages, drop_title=drop_title)
        return _RENDERED[key]

    monkeypatch.setattr(_site, "render_markdown", remembered)

    import stay.artefacts as _course

    parse = _course.parse_bytes

    def parsed(model: type[Any], data: bytes, where: str) -> Any:
        """A file's model, parsed once per distinct bytes (a failure is raised afresh)."""
        key = (model, data, where)
        if key not in _PARSED_FILES:
            _PARSED_FILES[key] = parse(model, data, where)
        return _PARSED_FILES[key]

    monkeypatch.setattr(_course, "parse_bytes", parsed)


@pytest.mark.sweep
@pytest.mark.parametrize("code", sorted(MUTATIONS))
def test_every_rule_fixture_renders_with_its_links_intact(code: str, tmp_path: Path, no_validator: None,
                                                          remembered_markdown: None) -> None:
    site = build_site(make_fixture(code, tmp_path))
    assert {"index.html", "outcomes.html", "glossary.html", "capstone.html", "status.html"} <= set(site)
    assert broken_links(site) == []


ARTEFACTS = sorted(p.relative_to(SAMPLE).as_posix() for p in SAMPLE.rglob("*") if p.is_file())


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(ARTEFACTS),
       content=st.binary(max_size=2_000) | st.text(max_size=400).map(str.encode)
       | st.recursive(st.none() | st.integers() | st.text(max_size=20),
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                   max_size=4)
                      ).map(lambda data: json.dumps(data).encode()))
def test_any_damage_to_any_file_renders_and_is_reported(path: str, content: bytes, tmp_path_factory: pytest.TempPathFactory,
                                                        no_validator: None) -> None:
    course = tmp_path_factory.mktemp("fuzz") / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    (course / path).write_bytes(content)
    site = build_site(course)
    assert broken_links(site) == []
    view = load_course(course)
    damaged = [f for f in view.all_files() if f.path == path and not f.ok]
    if damaged:  # the file no longer reads as its artefact: the status page says why
        assert normalise(damaged[0].problem or "") in page_text(site["status.html"])


def test_a_validator_that_cannot_run_says_why_in_one_line_naming_the_data_file(tmp_path: Path) -> None:
    """What a page and an export refusal show when the house data cannot be read: the error's class
    and its message, one line (the class is the validator's own, as it has always been shown)."""
    from stay.view._load import run_validator

    validation = run_validator(SAMPLE, data_dir=tmp_path)
    missing = tmp_path / "bloom-verbs.yaml"
    assert not validation.ran and validation.note is not None and "\n" not in validation.note
    assert validation.note.startswith(f"the validator could not run: DataError: data file '{missing}' is missing")
