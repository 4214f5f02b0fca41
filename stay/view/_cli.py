"""``stay view SLUG`` and ``stay export SLUG``: each ``*_parser`` adds its subcommand to ``stay``'s parser,
each ``*_main`` runs it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

DESCRIPTION = ("render a course (or, with no slug, every course and a listing) as a static, read-only site "
               "(never writes into a course); "
               "--serve shows it on 127.0.0.1")


def view_parser(subparsers: Any, courses: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``courses``: the parent parser declaring ``--courses-dir``."""
    from stay.settings import JUDGED_HELP, registered_backends

    view: argparse.ArgumentParser = subparsers.add_parser("view", parents=[courses], help=DESCRIPTION,
                                                          description=DESCRIPTION)
    view.set_defaults(func=view_main)
    view.add_argument("slug", nargs="?",
                      help="the course's slug: a directory in --courses-dir (none: every course, as --all)")
    view.add_argument("--all", action="store_true",
                      help="render every course in --courses-dir as one site: a listing, then each course")
    view.add_argument("--out", metavar="DIR",
                      help="where to write the site (default: site/<slug> under the current directory, "
                           "site/ for every course); "
                           "must be outside the course, and new, empty or an earlier site")
    view.add_argument("--backend", choices=tuple(registered_backends()), help=JUDGED_HELP)
    view.add_argument("--learner", action="store_true",
                      help="only the learners' pages, for publishing: no status, outcomes map or review page, "
                           "and no link to one")
    view.add_argument("--serve", action="store_true", help="after rendering, serve the site on 127.0.0.1")
    view.add_argument("--port", type=int, metavar="P",
                      help="the port for --serve (default: 8000; 0 picks a free one)")
    return view


EXPORT = ("package a course for a learning management system: SCORM 1.2 (a zip, one SCO a lesson) "
          "or Common Cartridge 1.3 (an .imscc, each quiz a QTI assessment)")


def export_parser(subparsers: Any, courses: argparse.ArgumentParser) -> argparse.ArgumentParser:
    export: argparse.ArgumentParser = subparsers.add_parser("export", parents=[courses], help=EXPORT,
                                                            description=EXPORT)
    export.set_defaults(func=export_main)
    export.add_argument("slug", help="the course's slug: a directory in --courses-dir")
    export.add_argument("--format", choices=("scorm", "cc"), required=True,
                        help="scorm: SCORM 1.2; cc: IMS Common Cartridge 1.3")
    export.add_argument("--out", metavar="DIR",
                        help="where to write the package (default: exports/ under the current directory); "
                             "must be outside the course")
    export.add_argument("--allow-incomplete", action="store_true",
                        help="export a course that fails `stay validate --strict` or waits at a gate, with a banner "
                             "on every page saying so")
    return export


def export_main(ns: argparse.Namespace) -> int:
    """Write the package; one line naming it."""
    from stay.view._export import TITLES, export

    path = export(ns.slug, ns.format, out_dir=ns.out, courses_dir=ns.courses_dir,
                  allow_incomplete=ns.allow_incomplete)
    print(f"{ns.slug}: {TITLES[ns.format]} package in {path} ({path.stat().st_size} bytes)")
    return 0


def view_main(ns: argparse.Namespace) -> int:
    """Render (and maybe serve) the course ``ns.slug``, or every course; the exit code."""
    from stay.errors import UsageError
    from stay.view._serve import serve

    if ns.port is not None and not ns.serve:
        raise UsageError("--port needs --serve")
    if ns.port is not None and not 0 <= ns.port <= 65535:
        raise UsageError(f"--port {ns.port} is not a port; give 0 to 65535")
    if ns.all and ns.slug is not None:
        raise UsageError(f"give a slug ({ns.slug}) or --all, not both")
    out = _library(ns) if ns.slug is None else _one_course(ns)
    if ns.serve:
        try:
            serve(out, 8000 if ns.port is None else ns.port)
        except KeyboardInterrupt:
            _say("stopped serving")
    return 0


def _one_course(ns: argparse.Namespace) -> Path:
    from stay.briefs import course_dir
    from stay.view._site import default_out_dir, not_a_directory, render_course

    root = course_dir(ns.courses_dir, ns.slug)
    if not root.is_dir():
        from stay._words import no_course

        raise not_a_directory(root, f"{no_course(ns.slug, ns.courses_dir)}; check the slug and --courses-dir")
    out = render_course(root, ns.out or default_out_dir(ns.slug), backend=ns.backend, learner=ns.learner)
    pages = sum(1 for path in out.iterdir() if path.suffix == ".html")
    print(f"{ns.slug}: {pages} pages in {out} (open {out / 'index.html'})")
    return out


def _library(ns: argparse.Namespace) -> Path:
    """Every course in --courses-dir: a line per course (its health) and per skipped directory."""
    from stay.view._site import DEFAULT_OUT, LISTING, build_library, write_library

    library = build_library(ns.courses_dir, backend=ns.backend, learner=ns.learner)
    out = Path(ns.out) if ns.out else DEFAULT_OUT
    write_library(library, out, ns.courses_dir)
    for line in library.skipped:
        _say(line)
    for row in library.rows:
        print(f"{row.slug}: {row.health}")
    courses = "course" if len(library.rows) == 1 else "courses"
    print(f"{len(library.rows)} {courses} in {out} (open {out / LISTING})")
    return out


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
