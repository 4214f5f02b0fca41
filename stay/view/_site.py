"""A course as a static site: pages in memory first, then written whole.

``build_site`` is pure apart from reading the course (and the ledger and validator,
which only read): the same course gives the same bytes, with no clock in them.
``write_site`` writes into a directory that is outside the course, and is either
new, empty, or a site this function wrote before: it overwrites and removes only files
whose bytes it wrote (``.stay-site``, stay/view/_out.py), never a person's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from stay._words import command_name, no_course, option_name
from stay.artefacts import write_bytes_atomic
from stay.errors import CourseNotFound, CoursePathError, UsageError
from stay.settings import Settings
from stay.validate import data_files, default_data_dir, names_in
from stay.view._env import STATIC_FILES, environment, static_text
from stay.view._links import Links, outcomes_map
from stay.view._load import CourseView, LessonView, Loaded, load_course
from stay.view._markdown import Rendered, pygments_css, render_markdown
from stay.view._out import (
    MARKER,
    conflicts,
    digest,
    file_digest,
    owned_now,
    read_marker,
    settle_folder,
    sweep_temporaries,
    write_marker,
)
from stay.view._review import PAGE as REVIEW_PAGE
from stay.view._review import review_page, tracked
from stay.view._status import Ledger, Validation, read_ledger, run_validator

PAGES = (("index.html", "Course"), ("glossary.html", "Glossary"), ("capstone.html", "Capstone"))
"""The learners' pages besides the lessons: all a ``learner`` site has (``stay view --learner``)."""
AUTHOR_PAGES = (("status.html", "Status"), ("outcomes.html", "Outcomes map"))
"""The author's pages (and the review page, while something waits), linked under "For authors"."""


@dataclass(frozen=True)
class DataFile:
    """A data file the site offers for download, at its path in the course (``assets/orders.csv``):
    a lesson's own link to it then works from the pages, which sit beside ``assets/``."""

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
    """Every file of the site, by its name, for the course at ``course_dir``. ``library`` is
    the listing's address from the course's pages when the course is rendered in a library
    of courses (stay/view/_library.py): each page's header then links back to it.
    ``backend``: the statuses judge the files against its models (``stay status --backend``;
    None: $STAY_BACKEND, else what the course's ledger records it was built with).
    ``learner``: only the learners' pages (:data:`PAGES` and the lessons), for publishing: no
    author's page, and no link to one (``stay view --learner``)."""
    return site_and_health(course_dir, data_dir=data_dir, library=library, backend=backend, learner=learner)[0]


def not_a_directory(root: Path, message: str) -> CoursePathError:
    """The viewer's refusal of a course (or courses) path that is not a directory, naming it
    (``path``): a CourseNotFound, a FileNotFoundError too, when nothing is there at all."""
    return (CoursePathError if os.path.lexists(root) else CourseNotFound)(message, path=root)


def missing_course(root: Path) -> CoursePathError:
    """A course path given from Python that is not a course's directory, with the nearest course."""
    fix = "give the course's own directory, the one holding its course.yaml"
    if os.path.lexists(root):
        return not_a_directory(root, f"course directory '{root}' is not a directory; {fix}")
    return not_a_directory(root, f"{no_course(root.name, root.parent)}; {fix}")


def site_and_health(course_dir: str | os.PathLike[str], *, data_dir: str | os.PathLike[str] | None = None,
                    library: str | None = None, backend: str | None = None,
                    learner: bool = False) -> tuple[dict[str, bytes], CourseView, Ledger, Validation]:
    """``build_site``'s files, with the course, ledger and validation the pages were made
    from (a library's listing sums them up without reading the course twice)."""
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
    }
    lessons = [lesson for lesson in course.lessons if lesson.page is not None]
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
        assert view.lesson.page is not None
        site[view.lesson.page] = lesson_template.render(common, page=view.lesson.page, view=view)
    for name in STATIC_FILES:
        site[name] = static_text(name)
    site["pygments.css"] = pygments_css()
    # a file name that is not UTF-8 (shown in a defect) is shown as its escapes, never a crash
    encoded = {name: text.encode("utf-8", "backslashreplace") for name, text in site.items()}
    files = dict(sorted({**encoded, **data}.items()))  # the data files as they are, byte for byte
    return files, course, ledger, validation


def _named(offered: dict[str, DataFile], *sources: str | BaseModel | None) -> tuple[DataFile, ...]:
    """The offered data files that ``sources`` (a text, or a file's model, every string of
    it) name, in the order first named, by the validator's reading of a name (``names_in``)."""
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
    body = lesson.content.model.body if lesson.content.model is not None else None
    data = _named(offered, body, lesson.exercises.model, lesson.quiz.model)
    return LessonPage(lesson, rendered, anchors, previous, following, data)


def _budget(course: CourseView) -> dict[str, int | None]:
    lessons = sum(lesson.minutes for lesson in course.lessons)
    budget = course.audience.model.time_budget_minutes if course.audience.model else None
    return {"budget": budget, "lessons": lessons, "over": (lessons - budget) if budget is not None else None}


def file_state(loaded: Loaded[Any], ledger: Ledger, validation: Validation) -> dict[str, Any]:
    """What a page says about one file: its ledger status (if any), and whether it could
    be read, and its validator defects."""
    status = ledger.status_of(loaded.path)
    shown: list[tuple[str, str]] = []
    if status is not None:
        state, why = status
        shown.append((state, state + (f" (changed: {', '.join(why)})" if why else "")))
    elif loaded.missing:
        shown.append(("missing", "missing"))
    if loaded.problem is not None and not loaded.missing:
        shown.append(("damaged", "damaged"))
    return {"badges": shown, "problem": loaded.problem, "defects": validation.for_path(loaded.path)}


def file_kind(path: str) -> str:
    """What a course file is, for a label: plan, lesson, exercises, quiz, or its name."""
    for suffix, kind in ((".plan.yaml", "plan"), (".exercises.yaml", "exercises"), (".quiz.yaml", "quiz"),
                         (".md", "lesson")):
        if path.endswith(suffix):
            return kind
    return path


def default_out_dir(slug: str) -> Path:
    """``site/<slug>`` under the current directory: like mkdocs' ``site/``, beside the
    project, never inside a course."""
    return Path("site") / slug


def write_site(site: dict[str, bytes], out_dir: str | os.PathLike[str], course_dir: str | os.PathLike[str]) -> Path:
    """Write ``site`` into ``out_dir``, refusing any place inside the course, and any file
    there that this function did not write (stay/view/_out.py). Returns the directory."""
    out, owned = check_out_dir(site, out_dir, course_dir)
    new = {name: digest(data) for name, data in site.items()}
    sweep_temporaries(out, {MARKER, *site, *owned})
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
    """The refusals of ``write_site``, raised before anything is written (a library checks
    every directory it will write first): the resolved directory and the files in it that
    are the viewer's own (name -> sha256). ``among_sites``: a directory with no marker
    that holds only earlier sites (``only_sites``) counts as empty."""
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
    recorded = {} if among_sites and only_sites(out) else read_marker(out, out_dir)
    owned = owned_now(out, recorded)
    refused = conflicts(out, site, owned)
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise UsageError(f"{named} holds {refused[0]!r}{more}, which {command_name('view')} did not write "
                         "or which changed since; move it away or choose another directory")
    return out, owned


def only_sites(out: Path) -> bool:
    """Whether ``out`` has no marker and holds nothing but directories an earlier ``stay view``
    wrote (each with its own marker): ``site/`` after single-course renders into
    ``site/<slug>``, which a library of courses takes as its folder."""
    if not out.is_dir() or os.path.lexists(out / MARKER):
        return False
    with os.scandir(out) as entries:
        return all(entry.is_dir(follow_symlinks=False) and (Path(entry.path) / MARKER).is_file()
                   and not (Path(entry.path) / MARKER).is_symlink() for entry in entries)


def render_course(course_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None, *,
                  data_dir: str | os.PathLike[str] | None = None, backend: str | None = None,
                  learner: bool = False) -> Path:
    """Render the course at ``course_dir`` into ``out_dir`` (by default ``site/<slug>``, as
    ``stay view SLUG``, so a hint names the call by the course alone); returns the site directory.
    ``learner``: the learners' pages only, as ``build_site``."""
    out = default_out_dir(Path(course_dir).resolve().name) if out_dir is None else out_dir
    site = build_site(course_dir, data_dir=data_dir, backend=backend, learner=learner)
    return write_site(site, out, course_dir)


__all__ = ["build_site", "default_out_dir", "load_course", "render_course", "write_site"]
