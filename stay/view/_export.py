"""A course as a package a learning management system imports: SCORM 1.2 (one SCO a lesson, its
quiz scored for the LMS) or IMS Common Cartridge 1.3 (the lessons as web content, each quiz a QTI 1.2
assessment the LMS scores). The pages are the viewer's learner pages: the same templates, escaping
and CSS. A package is self-contained, and the same course gives the same bytes (fixed dates, sorted
entries). docs/export.md says what each format keeps and drops."""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, get_args
from xml.etree import ElementTree as ET

from markupsafe import Markup

from stay._words import SPEAKS, command_hint, no_course, option_name
from stay.artefacts import Option, Quiz, QuizItem, write_bytes_atomic
from stay.briefs import course_dir
from stay.errors import UsageError
from stay.view._env import fragment, item_html, static_text
from stay.view._load import CourseView, Ledger, LessonView, Validation
from stay.view._site import DataFile, lesson_data, missing_course, not_a_directory, site_and_health

Format = Literal["scorm", "cc"]
FORMATS: tuple[Format, ...] = get_args(Format)
SUFFIXES: Mapping[Format, str] = {"scorm": "-scorm12.zip", "cc": ".imscc"}
TITLES: Mapping[Format, str] = {"scorm": "SCORM 1.2", "cc": "Common Cartridge 1.3"}
DEFAULT_OUT = Path("exports")
"""``exports/`` under the current directory, beside the project, as the viewer's ``site/``."""
ALLOW = {"shell": "--allow-incomplete", "python": "allow_incomplete=True"}

SCORM_NS = {
    "xmlns": "http://www.imsproject.org/xsd/imscp_rootv1p1p2",
    "xmlns:adlcp": "http://www.adlnet.org/xsd/adlcp_rootv1p2",
    "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
    "xsi:schemaLocation": "http://www.imsproject.org/xsd/imscp_rootv1p1p2 imscp_rootv1p1p2.xsd "
                          "http://www.adlnet.org/xsd/adlcp_rootv1p2 adlcp_rootv1p2.xsd",
}
CC_NS = {
    "xmlns": "http://www.imsglobal.org/xsd/imsccv1p3/imscp_v1p1",
    "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
    "xsi:schemaLocation": "http://www.imsglobal.org/xsd/imsccv1p3/imscp_v1p1 "
                          "http://www.imsglobal.org/profile/cc/ccv1p3/ccv1p3_imscp_v1p2_v1p0.xsd",
}
QTI_NS = {
    "xmlns": "http://www.imsglobal.org/xsd/ims_qtiasiv1p2",
    "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
    "xsi:schemaLocation": "http://www.imsglobal.org/xsd/ims_qtiasiv1p2 "
                          "http://www.imsglobal.org/profile/cc/ccv1p3/ccv1p3_qtiasiv1p2p1_v1p0.xsd",
}
QTI_TYPE = "imsqti_xmlv1p2/imscc_xmlv1p3/assessment"
WEB = "web_resources/"
"""Where a cartridge keeps its pages and files: an LMS imports the folder as the course's files."""
SHARED = ("index.html", "glossary.html", "style.css", "pygments.css", "progress.js", "quiz.js", "scorm.js")
"""The files every page may use; the lessons and the capstone depend on them."""
SCO = {"adlcp:scormtype": "sco"}
ASSET = {"adlcp:scormtype": "asset"}
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
"""The earliest date a zip holds: every entry gets it, so a package's bytes depend on the course alone."""


def export(slug: str, format: Format = "scorm", *, out_dir: str | os.PathLike[str] | None = None,
           courses_dir: str | os.PathLike[str] = "courses", allow_incomplete: bool = False) -> Path:
    """Write course ``slug`` as one ``format`` package (``scorm`` or ``cc``) into ``out_dir``
    (default ``exports/``, never inside the course); its path. A course that does not pass
    ``validate --strict``, or waits at a gate, is refused unless ``allow_incomplete``."""
    root = course_dir(courses_dir, slug)
    if not (root / "course.yaml").is_file():
        fix = f"check the slug and {option_name('--courses-dir')}"
        raise not_a_directory(root, f"{no_course(slug, courses_dir)}; {fix}")
    out = Path(out_dir) if out_dir is not None else DEFAULT_OUT
    # refused before the course is rendered: a wrong --out costs nothing
    if out.resolve() == root or root in out.resolve().parents:
        raise UsageError(f"{option_name('--out')} {out} is inside the course {root}; give a directory outside it",
                         path=out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{option_name('--out')} {out} is a file; give a directory", path=out)
    data = _package(root, format, allow_incomplete, os.fspath(courses_dir))
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{root.name}{SUFFIXES[format]}"
    write_bytes_atomic(target, data)
    return target


def build_package(course: str | os.PathLike[str], format: Format = "scorm", *,
                  allow_incomplete: bool = False) -> bytes:
    """The package of the course at ``course`` (its own directory), in memory; refused as ``export``
    refuses it."""
    root = Path(course).resolve()
    if not (root / "course.yaml").is_file():
        raise missing_course(Path(course))
    return _package(root, format, allow_incomplete, os.fspath(root.parent))


def _package(root: Path, format: Format, allow_incomplete: bool, courses_arg: str) -> bytes:
    """``courses_arg``: the courses directory as the caller named it, for the hints."""
    if format not in FORMATS:
        raise UsageError(f"no export format '{format}'; give one of {', '.join(FORMATS)}", field="format")
    files, view, ledger, validation = site_and_health(root, learner=True, package=format)
    why = unfinished(root, ledger, validation, courses_arg)
    if why is not None:
        state, fix = why
        if not allow_incomplete:
            raise UsageError(f"{TITLES[format]} export refused: course '{root.name}' {state}; {fix}; "
                             f"or export it as it stands with {ALLOW[SPEAKS.get()]}", path=root)
        banner = f"This course {state}: parts of it may be missing or wrong."
        files = site_and_health(root, learner=True, package=format, banner=banner)[0]
    if format == "scorm":
        files["scorm.js"] = static_text("scorm.js").encode("utf-8")
        return _zip({"imsmanifest.xml": _manifest(view, files, format, {}), **files})
    entries = {WEB + name: data for name, data in files.items()}
    quizzes = {f"quizzes/{fragment(lesson.id)}.xml": _qti(lesson, lesson.quiz.model)
               for lesson in view.lessons if lesson.quiz.model is not None}
    return _zip({"imsmanifest.xml": _manifest(view, files, format, quizzes), **entries, **quizzes})


def unfinished(root: Path, ledger: Ledger, validation: Validation, courses_arg: str) -> tuple[str, str] | None:
    """What keeps the course from being ready to export, and the command that finishes it; None when
    nothing does."""
    slug = root.name
    if ledger.tracked and ledger.note is not None:
        return (f"has a ledger that cannot be read ({ledger.note})",
                f"{command_hint(courses_arg, 'status', slug)} says why")
    for gate, state in ledger.gates.items() if ledger.tracked else ():
        if state != "approved":
            return (f"is stopped at the {gate} gate ({state})",
                    f"{command_hint(courses_arg, 'approve', slug, gate)} answers it, then "
                    f"{command_hint(courses_arg, 'build', slug)} finishes the course")
    if not validation.ran:
        return f"cannot be validated ({validation.note})", "the validator's line says what to fix"
    if validation.strict_fails:
        adopt = "" if ledger.tracked else f"{command_hint(courses_arg, 'adopt', slug)}, then "
        return (f"does not pass validate --strict ({validation.strict_fails} FAIL, 0 WARN)",
                f"{adopt}{command_hint(courses_arg, 'repair', slug)} repairs it")
    return None


def _element(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    child = ET.SubElement(parent, tag, {name: _xml_chars(value) for name, value in attrs.items()})
    child.text = None if text is None else _xml_chars(text)
    return child


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""What XML 1.0 cannot hold at all (a control character a course's YAML may escape in): ElementTree
would write it, and the manifest would not parse."""


def _xml_chars(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _item(parent: ET.Element, identifier: str, resource: str | None, title: str) -> ET.Element:
    item = _element(parent, "item", identifier=identifier, **({"identifierref": resource} if resource else {}))
    _element(item, "title", title)
    return item


def _resource(parent: ET.Element, identifier: str, href: str | None, files: list[str], *,
              depends: str | None = "res-shared", **attrs: str) -> None:
    resource = _element(parent, "resource", identifier=identifier, **attrs, **({"href": href} if href else {}))
    for name in files:
        _element(resource, "file", href=name)
    if depends:
        _element(resource, "dependency", identifierref=depends)


def _manifest(view: CourseView, files: Mapping[str, bytes], format: Format,
              quizzes: Mapping[str, bytes]) -> bytes:
    """SCORM: one organization, an item per lesson (each lesson a SCO with its data files), then the
    capstone. A cartridge: a rooted hierarchy, a folder per module holding its lessons and their quizzes,
    then the capstone, every page and file under ``WEB``."""
    scorm = format == "scorm"
    prefix, lesson_attrs, asset_attrs = ("", SCO, ASSET) if scorm else (WEB, {}, {})
    header = {"version": "1", **SCORM_NS} if scorm else CC_NS
    manifest = ET.Element("manifest", {"identifier": f"stay-{fragment(view.slug)}", **header})
    metadata = _element(manifest, "metadata")
    _element(metadata, "schema", "ADL SCORM" if scorm else "IMS Common Cartridge")
    _element(metadata, "schemaversion", "1.2" if scorm else "1.3.0")
    if scorm:
        root = _element(_element(manifest, "organizations", default="org"), "organization", identifier="org")
        _element(root, "title", view.title)
        groups = [(root, view.lessons)]
    else:
        organization = _element(_element(manifest, "organizations"), "organization", identifier="org",
                                structure="rooted-hierarchy")
        root = _element(organization, "item", identifier="root")
        groups = [(_item(root, f"module-{fragment(module.id)}", None, module.title), module.lessons)
                  for module in view.modules if module.lessons]
    resources = _element(manifest, "resources")
    claimed: set[str] = set()  # the data files some lesson names
    offered = {path: DataFile(path, len(data)) for path, data in files.items() if path.startswith("assets/")}
    for parent, lessons in groups:
        for lesson in lessons:
            key = fragment(lesson.id)
            _item(parent, f"item-lesson-{key}", f"res-lesson-{key}", lesson.title)
            data = [f.path for f in lesson_data(lesson, offered)]
            claimed.update(data)
            _resource(resources, f"res-lesson-{key}", prefix + lesson.page,
                      [prefix + name for name in (lesson.page, *data)], type="webcontent", **lesson_attrs)
            quiz = f"quizzes/{key}.xml"
            if quiz in quizzes:
                _item(parent, f"item-quiz-{key}", f"res-quiz-{key}", f"Quiz: {lesson.title}")
                _resource(resources, f"res-quiz-{key}", None, [quiz], depends=None, type=QTI_TYPE)
    if "capstone.html" in files:
        title = view.project.model.title if view.project.model is not None else "Capstone"
        _item(root, "item-capstone", "res-capstone", f"Capstone: {title}")
        _resource(resources, "res-capstone", prefix + "capstone.html", [prefix + "capstone.html"],
                  type="webcontent", **asset_attrs)
    # the files every page may use, and the data files no lesson names (the capstone's, say)
    shared = [name for name in files if name in SHARED or (name.startswith("assets/") and name not in claimed)]
    _resource(resources, "res-shared", None, [prefix + name for name in shared], depends=None, type="webcontent",
              **asset_attrs)
    return _xml(manifest)


def _metadata(parent: ET.Element, fields: Mapping[str, str]) -> None:
    block = _element(parent, "qtimetadata")
    for label, entry in fields.items():
        field = _element(block, "qtimetadatafield")
        _element(field, "fieldlabel", label)
        _element(field, "fieldentry", entry)


def _material(parent: ET.Element, html: str) -> None:
    # plain str: Markup's own replace() would escape what ElementTree's escaping puts in
    _element(_element(parent, "material"), "mattext", str(html), texttype="text/html")


def _qti(lesson: LessonView, quiz: Quiz) -> bytes:
    """The lesson's quiz as a QTI 1.2 assessment of the cartridge profile: a multiple-choice item
    scored on its right option, with each wrong option's ``why_wrong`` as its feedback; a short
    answer as an essay item, its model answer given as feedback for the teacher who marks it."""
    root = ET.Element("questestinterop", dict(QTI_NS))
    assessment = _element(root, "assessment", ident=f"quiz-{fragment(lesson.id)}", title=f"Quiz: {lesson.title}")
    _metadata(assessment, {"cc_profile": "cc.exam.v0p1", "qmd_assessmenttype": "Examination",
                           "qmd_scoretype": "Percentage"})
    section = _element(assessment, "section", ident="root_section")
    for number, item in enumerate(quiz.items, 1):
        _qti_item(section, item, number)
    return _xml(root)


def _qti_item(section: ET.Element, item: QuizItem, number: int) -> None:
    choice = item.type == "mcq" and bool(item.options)
    element = _element(section, "item", ident=f"item-{fragment(item.id)}", title=f"Question {number}")
    profile = "cc.multiple_choice.v0p1" if choice else "cc.essay.v0p1"
    _metadata(_element(element, "itemmetadata"), {"cc_profile": profile, "cc_weighting": "1"})
    presentation = _element(element, "presentation")
    _material(presentation, item_html(item, "stem", item.stem))
    options: list[Option] = (item.options or []) if choice else []
    if choice:
        render = _element(_element(presentation, "response_lid", ident="response1", rcardinality="Single"),
                          "render_choice", shuffle="No")
        for index, option in enumerate(options):
            _material(_element(render, "response_label", ident=f"o{index}"), item_html(option, "text", option.text))
    else:
        _element(_element(_element(presentation, "response_str", ident="response1", rcardinality="Single"),
                          "render_fib"), "response_label", ident="answer1", rshuffle="No")
    processing = _element(element, "resprocessing")
    _element(_element(processing, "outcomes"), "decvar", varname="SCORE", vartype="Decimal", minvalue="0",
             maxvalue="100")
    general = _element(processing, "respcondition", **{"continue": "Yes"})
    _element(_element(general, "conditionvar"), "other")
    _element(general, "displayfeedback", feedbacktype="Response", linkrefid="general_fb")
    for index, option in enumerate(options):
        condition = _element(processing, "respcondition", **{"continue": "No" if option.correct else "Yes"})
        _element(_element(condition, "conditionvar"), "varequal", f"o{index}", respident="response1")
        if option.correct:
            _element(condition, "setvar", "100", action="Set", varname="SCORE")
        elif option.why_wrong:
            _element(condition, "displayfeedback", feedbacktype="Response", linkrefid=f"o{index}_fb")
    explanation = item_html(item, "explanation", item.explanation)
    if not choice:
        answer = item_html(item, "answer", item.answer) if item.answer else "(no answer given)"
        explanation = Markup("<p><strong>Model answer:</strong> {}</p>{}").format(answer, explanation)
    _feedback(element, "general_fb", explanation)
    for index, option in enumerate(options):
        if not option.correct and option.why_wrong:
            _feedback(element, f"o{index}_fb", item_html(option, "why_wrong", option.why_wrong))


def _feedback(item: ET.Element, ident: str, html: str) -> None:
    _material(_element(_element(item, "itemfeedback", ident=ident), "flow_mat"), html)


def _xml(root: ET.Element) -> bytes:
    ET.indent(root)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{ET.tostring(root, encoding="unicode")}\n'.encode()


def _zip(entries: Mapping[str, bytes]) -> bytes:
    """The entries as one zip, the manifest first and the rest by name, each dated ``ZIP_DATE``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(entries, key=lambda name: (name != "imsmanifest.xml", name)):
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, wherever it is made
            info.external_attr = 0o100644 << 16  # a plain file, rw-r--r--
            archive.writestr(info, entries[name])
    return buffer.getvalue()
