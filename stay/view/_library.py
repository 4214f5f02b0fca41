"""A library of courses: every course in a courses directory (never read through a symlink)
as one site, with a listing of them, one row each with a short health. Every directory it will
write is checked first, so a refusal leaves everything as it was. Same courses, same bytes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from stay._words import course_hint, option_name
from stay.briefs import check_slug
from stay.errors import UsageError
from stay.view._env import STATIC_FILES, environment, static_text
from stay.view._load import CourseView, Ledger, LessonView, Validation
from stay.view._site import (
    check_out_dir,
    not_a_directory,
    only_sites,
    site_and_health,
    write_marker,
    write_site,
)

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
    """The lessons that have a page (the progress bar counts them; the continue link names them)."""
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
    kind = "ok" if health in FINE else ("bad" if _bad(course, ledger, validation) else "waiting")
    return Row(slug=course.slug, title=course.title, audience=audience,
               minutes=sum(lesson.minutes for lesson in course.lessons), budget=budget,
               modules=len(course.modules), pages=tuple(lesson for lesson in course.lessons if lesson.page),
               health=health, kind=kind, problem=course.manifest.problem)


def _damaged(course: CourseView) -> int:
    return sum(1 for loaded in course.all_files() if loaded.problem is not None and not loaded.missing)


def _bad(course: CourseView, ledger: Ledger, validation: Validation) -> bool:
    return bool(_damaged(course) or not validation.ran or validation.fails or (ledger.tracked and ledger.note))


def health_of(course: CourseView, ledger: Ledger, validation: Validation) -> str:
    """A course's health in a few words, from the ledger and the validator: "complete",
    "stopped at the design gate", "2 FAIL", "1 damaged, 3 FAIL", "valid (no ledger)"."""
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


__all__ = ["DEFAULT_OUT", "Library", "Row", "build_library", "find_courses", "health_of", "render_library",
           "write_library"]
