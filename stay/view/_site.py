"""A course as a static site, and a library of them (every course in a courses directory, never read
through a symlink, with a listing and each one's health): pages in memory first (the same course, the
same bytes), then written whole into a directory outside the course that is new, empty, or an earlier
site: only files whose bytes the viewer wrote (``.stay-site``) are overwritten, never a person's."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from stay._bounds import Damaged, load_stored_json, read_stored
from stay._lock import sweep_temporaries
from stay._words import command_name, course_hint, no_course, option_name
from stay.artefacts import Loaded, write_bytes_atomic, write_text_atomic
from stay.briefs import check_slug
from stay.errors import CourseNotFound, CoursePathError, UsageError
from stay.settings import Settings
from stay.validate import data_files, default_data_dir, names_in
from stay.view._env import (
    STATIC_FILES,
    Links,
    Rendered,
    environment,
    outcomes_map,
    pygments_css,
    render_markdown,
    static_text,
)
from stay.view._load import PAGE as REVIEW_PAGE
from stay.view._load import (
    CourseView,
    Ledger,
    LessonView,
    Validation,
    load_course,
    read_ledger,
    review_page,
    run_validator,
    tracked,
)

PAGES = (("index.html", "Course"), ("glossary.html", "Glossary"), ("capstone.html", "Capstone"))
"""The learners' pages besides the lessons: all a ``learner`` site has (``stay view --learner``)."""
AUTHOR_PAGES = (("status.html", "Status"), ("outcomes.html", "Outcomes map"))
"""The author's pages (and the review page, while something waits), linked under "For authors"."""


@dataclass(frozen=True)
class DataFile:
    """A data file offered for download at its course path, so a lesson's own link to it works."""

    path: str
    size: int

    @property
    def name(self) -> str:
        return self.path.rpartition("/")[2]

    @property
    def facts(self) -> str:
        """Its type and size, for a learner deciding to download it: "CSV, 2.1 KB"."""
        size = f"{self.size} bytes" if self.size < 1024 else f"{self.size / 1024:.1f} KB"
        return f"{self.path.rpartition('.')[2].upper()}, {size}"


@dataclass(frozen=True)
class LessonPage:
    lesson: LessonView
    rendered: Rendered | None
    anchors: dict[str, str]
    """plan section heading -> the anchor of the lesson's heading with the same text."""
    previous: LessonView | None
    next: LessonView | None
    data: tuple[DataFile, ...] = ()
    """The data files the lesson's text (its body, exercises and quiz) names, in the order first named."""


def build_site(course_dir: str | os.PathLike[str], *, data_dir: str | os.PathLike[str] | None = None,
               library: str | None = None, backend: str | None = None, learner: bool = False) -> dict[str, bytes]:
    """Every file of the site, by name. ``library``: the listing's address, in a library; ``backend``: the
    models the statuses judge against; ``learner``: only the learners' pages."""
    return site_and_health(course_dir, data_dir=data_dir, library=library, backend=backend, learner=learner)[0]


def not_a_directory(root: Path, message: str) -> CoursePathError:
    """The refusal of a path that is not a directory: a CourseNotFound (a FileNotFoundError too)."""
    return (CoursePathError if os.path.lexists(root) else CourseNotFound)(message, path=root)


def missing_course(root: Path) -> CoursePathError:
    """A course path given from Python that is not a course's directory, with the nearest course."""
    fix = "give the course's own directory, the one holding its course.yaml"
    if os.path.lexists(root):
        return not_a_directory(root, f"course directory '{root}' is not a directory; {fix}")
    return not_a_directory(root, f"{no_course(root.name, root.parent)}; {fix}")


def site_and_health(course_dir: str | os.PathLike[str], *, data_dir: str | os.PathLike[str] | None = None,
                    library: str | None = None, backend: str | None = None, learner: bool = False,
                    package: str | None = None, banner: str | None = None,
                    ) -> tuple[dict[str, bytes], CourseView, Ledger, Validation]:
    """``build_site``'s files, with what they were made from (a library's listing sums them up).
    ``package`` ("scorm" or "cc"): the pages an LMS package holds (stay.view._export); ``banner``: a
    line every page shows at its top."""
    root = Path(course_dir)
    if not root.is_dir():
        raise missing_course(root)
    settings = Settings.from_env(backend=backend) if backend is not None else None
    house = Path(data_dir) if data_dir is not None else default_data_dir()  # one resolution, for both reads
    course = load_course(root, house)
    ledger = read_ledger(root, settings)
    validation = run_validator(root, house)
    links = Links(course, learner=learner)
    env = environment()
    # the validator's reading of assets/ (no link followed, nothing read past the limit):
    # what it offers is exactly what ast003-ast005 let through
    data = data_files(root)
    offered = {path: DataFile(path, len(raw)) for path, raw in data.items()}
    # a course stay tracks gets a review page; it is offered only while a gate or a
    # proposal (`stay revise --show`) waits, so a page nobody needs is not offered
    review = review_page(root, course, validation, settings) if tracked(root) and not learner else None
    pending = review.gate if review is not None and review.pending else None
    proposals = review.data.proposals if review is not None and review.data is not None else ()
    waiting = sum(1 for w in proposals if w.anew or not w.problem)  # a refused folder is no proposal
    authors = () if learner else (*AUTHOR_PAGES, REVIEW_PAGE) if pending or proposals else AUTHOR_PAGES
    common: dict[str, Any] = {
        "course": course, "ledger": ledger, "validation": validation, "links": links, "learner": learner,
        "nav": PAGES, "authors": authors, "review_pending": pending, "proposals_waiting": waiting,
        "file_state": lambda loaded: file_state(loaded, ledger, validation),
        "budget": _budget(course), "file_kind": file_kind, "library": library,
        "data_files": tuple(offered.values()), "capstone_files": _named(offered, course.project.model),
        "package": package, "banner": banner,
    }
    lessons = course.lessons
    views = [_lesson_page(lesson, links, lessons[i - 1] if i else None,
                          lessons[i + 1] if i + 1 < len(lessons) else None, offered)
             for i, lesson in enumerate(lessons)]
    rows, unknown = outcomes_map(course, links, {view.lesson.id: view.anchors for view in views})
    pages = PAGES if learner else (*PAGES, *AUTHOR_PAGES)
    site = {name: env.get_template(name + ".j2").render(common, page=name, rows=rows, unknown=unknown)
            for name, _ in pages}
    if review is not None:
        site[REVIEW_PAGE[0]] = env.get_template("review.html.j2").render(common, page=REVIEW_PAGE[0], review=review)
    lesson_template = env.get_template("lesson.html.j2")
    for view in views:
        site[view.lesson.page] = lesson_template.render(common, page=view.lesson.page, view=view)
    for name in STATIC_FILES:
        site[name] = static_text(name)
    site["pygments.css"] = pygments_css()
    # a file name that is not UTF-8 (shown in a defect) is shown as its escapes, never a crash
    encoded = {name: text.encode("utf-8", "backslashreplace") for name, text in site.items()}
    files = dict(sorted({**encoded, **data}.items()))  # the data files as they are, byte for byte
    return files, course, ledger, validation


def _named(offered: dict[str, DataFile], *sources: str | BaseModel | None) -> tuple[DataFile, ...]:
    """The offered data files ``sources`` name (every string of them), in the order first named."""
    found = names_in(*(source.model_dump() if isinstance(source, BaseModel) else source
                       for source in sources if source is not None))
    return tuple(offered[path] for path in found if path in offered)


def _lesson_page(lesson: LessonView, links: Links, previous: LessonView | None,
                 following: LessonView | None, offered: dict[str, DataFile]) -> LessonPage:
    rendered = None
    if lesson.content.model is not None:
        rendered = render_markdown(lesson.content.model.body, lesson_pages=links.lesson_pages,
                                   drop_title=lesson.title)
    anchors: dict[str, str] = {}
    for heading in rendered.headings if rendered else ():
        if heading.level == 2:
            anchors.setdefault(heading.text, heading.anchor)
    return LessonPage(lesson, rendered, anchors, previous, following, lesson_data(lesson, offered))


def lesson_data(lesson: LessonView, offered: dict[str, DataFile]) -> tuple[DataFile, ...]:
    """The offered data files the lesson's text (its body, exercises and quiz) names."""
    body = lesson.content.model.body if lesson.content.model is not None else None
    return _named(offered, body, lesson.exercises.model, lesson.quiz.model)


def _budget(course: CourseView) -> dict[str, int | None]:
    lessons = sum(lesson.minutes for lesson in course.lessons)
    budget = course.audience.model.time_budget_minutes if course.audience.model else None
    return {"budget": budget, "lessons": lessons, "over": (lessons - budget) if budget is not None else None}


def file_state(loaded: Loaded[Any], ledger: Ledger, validation: Validation) -> dict[str, Any]:
    """What a page says about one file: its ledger status, whether it could be read, its defects."""
    status = ledger.statuses.get(loaded.path)
    shown: list[tuple[str, str]] = []
    if status is not None:
        state, why = status
        shown.append((state, state + (f" (changed: {', '.join(why)})" if why else "")))
    elif loaded.missing:
        shown.append(("missing", "missing"))
    if loaded.problem is not None and not loaded.missing:
        shown.append(("damaged", "damaged"))
    defects = tuple(d for d in validation.defects if d.path == loaded.path)
    return {"badges": shown, "problem": loaded.problem, "defects": defects}


def file_kind(path: str) -> str:
    """What a course file is, for a label: plan, lesson, exercises, quiz, or its name."""
    for suffix, kind in ((".plan.yaml", "plan"), (".exercises.yaml", "exercises"), (".quiz.yaml", "quiz"),
                         (".md", "lesson")):
        if path.endswith(suffix):
            return kind
    return path


def default_out_dir(slug: str) -> Path:
    """``site/<slug>`` under the current directory, beside the project (as mkdocs'), never inside a course."""
    return Path("site") / slug


def write_site(site: dict[str, bytes], out_dir: str | os.PathLike[str], course_dir: str | os.PathLike[str]) -> Path:
    """Write ``site`` into ``out_dir``, refusing a place inside the course or a file it did not write."""
    out, owned = check_out_dir(site, out_dir, course_dir)
    new = {name: digest(data) for name, data in site.items()}
    sweep_temporaries(out)  # a killed render's, of this site's or an earlier one's files
    out.mkdir(parents=True, exist_ok=True)
    # the record first: an interrupted render leaves only files whose bytes it lists
    write_marker(out, owned, writing=new)
    settle_folder(out, site)
    for name, data in site.items():
        if owned.get(name) != new[name]:
            write_bytes_atomic(out / name, data)  # a page's UTF-8, or a data file's bytes as they are
    for name in sorted(set(owned) - set(site)):
        if file_digest(out / name) == owned[name]:  # still the bytes it wrote a moment ago
            (out / name).unlink()
    settle_folder(out, site)
    write_marker(out, new)
    return out


def check_out_dir(site: dict[str, bytes], out_dir: str | os.PathLike[str], course_dir: str | os.PathLike[str],
                  *, among_sites: bool = False) -> tuple[Path, dict[str, str]]:
    """``write_site``'s refusals, before anything is written; the directory and the viewer's files in it."""
    out = Path(out_dir).resolve()
    course = Path(course_dir).resolve()
    named = f"{option_name('--out')} {out_dir}"  # as the caller gave it: the flag, or out_dir from Python
    if out == course or out.is_relative_to(course):
        raise UsageError(f"{named} is inside the course {course_dir}; the viewer never writes into a "
                         "course: choose a directory outside it")
    if course.is_relative_to(out):
        raise UsageError(f"{named} contains the course {course_dir}; choose a directory of its own")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{named} is a file; give a directory")
    recorded = {} if among_sites and only_sites(out) else read_marker(out, named)
    owned = owned_now(out, recorded)
    refused = conflicts(out, site, owned)
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise UsageError(f"{named} holds {refused[0]!r}{more}, which {command_name('view')} did not write "
                         "or which changed since; move it away or choose another directory")
    return out, owned


def only_sites(out: Path) -> bool:
    """Whether ``out`` has no marker and holds only earlier sites (``site/`` after renders into ``site/<slug>``)."""
    if not out.is_dir() or os.path.lexists(out / MARKER):
        return False
    with os.scandir(out) as entries:
        return all(entry.is_dir(follow_symlinks=False) and (Path(entry.path) / MARKER).is_file()
                   and not (Path(entry.path) / MARKER).is_symlink() for entry in entries)


def render_course(course_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None, *,
                  data_dir: str | os.PathLike[str] | None = None, backend: str | None = None,
                  learner: bool = False) -> Path:
    """Render the course into ``out_dir`` (default ``site/<slug>``); returns the site directory."""
    out = default_out_dir(Path(course_dir).resolve().name) if out_dir is None else out_dir
    site = build_site(course_dir, data_dir=data_dir, backend=backend, learner=learner)
    return write_site(site, out, course_dir)


__all__ = ["DEFAULT_OUT", "Library", "Row", "build_library", "build_site", "default_out_dir", "find_courses",
           "health_of", "load_course", "render_course", "render_library", "write_library", "write_site"]


MARKER = ".stay-site"
"""The viewer's record of the files it wrote, by name, with their sha256."""
FOLDER = "assets"
"""The one folder of a site: the course's data files (``assets/<name>``), as in the course."""
_NAME_MAX = 255  # the longest file name POSIX file systems take

Recorded = dict[str, frozenset[str]]
"""file name -> every sha256 the viewer recorded for it (old and about-to-be-written)."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def site_name(name: object) -> bool:
    """Whether a name read from a marker is one a render may write: a plain file name, or one in :data:`FOLDER`."""
    plain = name.removeprefix(FOLDER + "/") if isinstance(name, str) else ""
    return (0 < len(plain) <= _NAME_MAX and plain not in (".", "..", MARKER)
            and not any(c in plain for c in "/\\\x00") and all(c.isprintable() for c in plain))


def folder_state(out: Path) -> str:
    """What ``out``/:data:`FOLDER` is, never through a link: "absent", "folder", or "other"."""
    try:
        mode = (out / FOLDER).lstat().st_mode
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "other"
    return "folder" if stat.S_ISDIR(mode) else "other"


def _reachable(out: Path, name: str) -> bool:
    """Whether ``out``/``name`` can be looked at without following a link."""
    return "/" not in name or folder_state(out) == "folder"


def _sha256(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch("[0-9a-f]{64}", value) is not None


def file_digest(path: Path) -> str | None:
    """The sha256 of a regular file at ``path`` (never through a symlink); None for anything else."""
    try:
        return digest(read_stored(path))  # no page nor data file is near the bound
    except (OSError, Damaged):
        return None


def read_marker(out: Path, named: str) -> Recorded:
    """What an earlier render recorded in ``out`` (``named`` in refusals); an unreadable marker owns nothing."""
    if not out.is_dir():
        return {}
    marker = out / MARKER
    try:
        mode = marker.lstat().st_mode
    except FileNotFoundError:
        if any(out.iterdir()):
            raise UsageError(f"{named} is not empty and was not written by {command_name('view')}; choose an "
                             "empty or new directory") from None
        return {}
    if not stat.S_ISREG(mode):
        raise UsageError(f"{named}: {MARKER} is not a file {command_name('view')} wrote (a link, a directory "
                         "or a device); remove it or choose another directory")
    try:
        return _recorded(load_stored_json(marker))
    except (OSError, Damaged):
        return {}


def _recorded(data: object) -> Recorded:
    """The well-formed names and hashes of a marker; anything else (an older viewer's list) owns nothing."""
    if not isinstance(data, dict):
        return {}
    found: dict[str, set[str]] = {}
    for key in ("files", "writing"):
        table = data.get(key)
        if not isinstance(table, dict):
            continue
        for name, sha in table.items():
            if site_name(name) and _sha256(sha):
                found.setdefault(name, set()).add(sha)
    return {name: frozenset(hashes) for name, hashes in found.items()}


def owned_now(out: Path, recorded: Recorded) -> dict[str, str]:
    """name -> current sha256, for the recorded files whose bytes are still the viewer's."""
    owned = {}
    for name, hashes in recorded.items():
        sha = file_digest(out / name) if _reachable(out, name) else None
        if sha is not None and sha in hashes:
            owned[name] = sha
    return owned


def conflicts(out: Path, site: Mapping[str, bytes], owned: Mapping[str, str]) -> list[str]:
    """The names the site would overwrite that are not the viewer's (a person's file, a page
    edited since, a symlink, a directory); a file already holding the new bytes is none."""
    found = []
    if any("/" in name for name in site) and folder_state(out) == "other":
        found.append(FOLDER)
    for name, data in site.items():
        path = out / name
        if name in owned or not _reachable(out, name) or not os.path.lexists(path):
            continue
        if file_digest(path) != digest(data):
            found.append(name)
    return found


def settle_folder(out: Path, site: Mapping[str, bytes]) -> None:
    """Make :data:`FOLDER` when ``site`` has data files, else remove a real folder left empty."""
    if any("/" in name for name in site):
        (out / FOLDER).mkdir(exist_ok=True)  # a link or a file there was refused before (conflicts)
    elif folder_state(out) == "folder":
        with contextlib.suppress(OSError):  # not empty
            (out / FOLDER).rmdir()


def write_marker(out: Path, files: Mapping[str, str], writing: Mapping[str, str] | None = None) -> None:
    """Record ``files`` (name -> sha256 on disk) and ``writing`` (name -> sha256 about to be written)."""
    data: dict[str, dict[str, str]] = {"files": dict(sorted(files.items()))}
    if writing is not None:
        data["writing"] = dict(sorted(writing.items()))
    write_text_atomic(out / MARKER, json.dumps(data, indent=1) + "\n")


MANIFEST = "course.yaml"
"""What makes a directory a course (as stay/_words.py's course_slugs counts them)."""
LISTING = "index.html"
BACK = "../" + LISTING
"""The listing's address from a course's pages, one directory down."""
DEFAULT_OUT = Path("site")
"""``site/``: a single course renders to ``site/<slug>``, which is where a library puts it."""
FINE = ("complete", "valid (no ledger)")


@dataclass(frozen=True)
class Row:

    slug: str
    title: str
    audience: str | None
    minutes: int
    budget: int | None
    modules: int
    pages: tuple[LessonView, ...]
    """The lessons (the progress bar counts them; the continue link names them)."""
    health: str
    kind: str
    """ok, waiting or bad: the health's badge."""
    problem: str | None
    """Why the course manifest cannot be read, if it cannot."""

    @property
    def lessons(self) -> tuple[str, ...]:
        return tuple(lesson.id for lesson in self.pages)


@dataclass(frozen=True)
class Library:
    listing: dict[str, bytes]
    courses: dict[str, dict[str, bytes]]
    """slug -> that course's site."""
    rows: tuple[Row, ...]
    skipped: tuple[str, ...]
    """One line per directory that is not a course, saying why."""


def find_courses(courses_dir: str | os.PathLike[str]) -> tuple[list[Path], list[str]]:
    """The course directories in ``courses_dir`` (sorted), and a line for each other directory saying why."""
    root = Path(courses_dir)
    if not root.is_dir():
        raise not_a_directory(root, f"{option_name('--courses-dir')} {os.fspath(courses_dir)} is not a directory; "
                              "pass the directory that holds your courses")
    courses: list[Path] = []
    skipped: list[str] = []
    with os.scandir(root) as scanned:
        entries = sorted(scanned, key=lambda entry: entry.name)
    for entry in entries:
        if entry.is_symlink():
            skipped.append(f"skipped {entry.name}: a symbolic link (stay never reads through one)")
        elif not entry.is_dir(follow_symlinks=False):
            continue
        elif not os.path.lexists(os.path.join(entry.path, MANIFEST)):
            skipped.append(f"skipped {entry.name}: no {MANIFEST}, so not a course")
        else:
            try:
                check_slug(entry.name)
            except UsageError as exc:
                skipped.append(f"skipped {entry.name}: {exc}")
                continue
            courses.append(Path(entry.path))
    return courses, skipped


def build_library(courses_dir: str | os.PathLike[str], *, data_dir: str | os.PathLike[str] | None = None,
                  backend: str | None = None, learner: bool = False) -> Library:
    """Every file of the library's site: the listing's, and each course's by slug."""
    found, skipped = find_courses(courses_dir)
    if not found:
        why = f" ({'; '.join(skipped)})" if skipped else ""
        raise UsageError(f"{os.fspath(courses_dir)} holds no course (a directory with a {MANIFEST}){why}; build one "
                         f"with {course_hint(courses_dir, 'build', 'BRIEF')} or pass {option_name('--courses-dir')}",
                         path=courses_dir)
    courses: dict[str, dict[str, bytes]] = {}
    rows = []
    for root in found:
        files, course, ledger, validation = site_and_health(root, data_dir=data_dir, library=BACK,
                                                             backend=backend, learner=learner)
        courses[root.name] = files
        rows.append(_row(course, ledger, validation))
    page = environment().get_template("library.html.j2").render(
        rows=rows, progress_script="progress.js" in STATIC_FILES, learner=learner)
    listing = {LISTING: page.encode("utf-8", "backslashreplace")}
    listing.update((name, static_text(name).encode("utf-8")) for name in STATIC_FILES)
    return Library(dict(sorted(listing.items())), courses, tuple(rows), tuple(skipped))


def write_library(library: Library, out_dir: str | os.PathLike[str], courses_dir: str | os.PathLike[str]) -> Path:
    """Write the listing and each course under ``out_dir``, every directory checked before any is written."""
    out = Path(out_dir)
    check_out_dir(library.listing, out, courses_dir, among_sites=True)
    for slug, files in library.courses.items():
        check_out_dir(files, out / slug, Path(courses_dir) / slug)
    if only_sites(out):
        # earlier single-course renders (site/<slug>) are the library's to take over, each
        # under its own marker: the listing's marker starts out owning nothing
        write_marker(out, {})
    written = write_site(library.listing, out, courses_dir)
    for slug, files in library.courses.items():
        write_site(files, out / slug, Path(courses_dir) / slug)
    return written


def render_library(courses_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], *,
                   data_dir: str | os.PathLike[str] | None = None,
                   backend: str | None = None, learner: bool = False) -> Library:
    library = build_library(courses_dir, data_dir=data_dir, backend=backend, learner=learner)
    write_library(library, out_dir, courses_dir)
    return library


def _row(course: CourseView, ledger: Ledger, validation: Validation) -> Row:
    manifest = course.manifest.model
    audience = manifest.brief.audience if manifest else (
        course.audience.model.learners if course.audience.model else None)
    budget = course.audience.model.time_budget_minutes if course.audience.model else None
    health = health_of(course, ledger, validation)
    if health in FINE:
        kind = "ok"
    elif _damaged(course) or not validation.ran or validation.fails or (ledger.tracked and ledger.note):
        kind = "bad"
    else:
        kind = "waiting"
    return Row(slug=course.slug, title=course.title, audience=audience,
               minutes=sum(lesson.minutes for lesson in course.lessons), budget=budget,
               modules=len(course.modules), pages=course.lessons,
               health=health, kind=kind, problem=course.manifest.problem)


def _damaged(course: CourseView) -> int:
    return sum(1 for loaded in course.all_files() if loaded.problem is not None and not loaded.missing)


def health_of(course: CourseView, ledger: Ledger, validation: Validation) -> str:
    """A course's health in a few words ("complete", "stopped at the design gate", "1 damaged, 3 FAIL")."""
    parts: list[str] = []
    counts = ledger.counts()
    if ledger.tracked and ledger.note:
        parts.append("ledger unreadable")
    elif counts.get("missing"):
        # the first gate not yet approved is where a build stopped; without one, files went missing
        waiting = next((gate for gate, verdict in ledger.gates.items() if verdict != "approved"), None)
        parts.append(f"stopped at the {waiting} gate" if waiting else f"{counts['missing']} missing")
    for state in ("stale", "edited", "orphaned"):
        if counts.get(state):
            parts.append(f"{counts[state]} {state}")
    if damaged := _damaged(course):
        parts.append(f"{damaged} damaged")
    if not validation.ran:
        parts.append("the validator could not run")
    elif validation.fails:
        parts.append(f"{validation.fails} FAIL")
    if not ledger.tracked:
        return ", ".join([*parts, "no ledger"]) if parts else FINE[1]
    return ", ".join(parts) if parts else FINE[0]
