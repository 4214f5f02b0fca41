"""The course viewer and the report pages: read-only static HTML, rendered offline.

    >>> from stay.view import render_course
    >>> render_course("courses/how-http-requests-travel", "site/how-http-requests-travel")

``build_site`` returns every file of a course's site in memory (same course, same
bytes); ``render_course`` writes them to a directory outside the course. The report
pages (``render_compare_html``, ``render_run_summary_html``) turn eval results into
one self-contained HTML page each. Nothing here writes into a course or fetches
anything from a network.
"""

from __future__ import annotations

from stay.view._reports import (
    CompareHeader,
    Interval,
    ItemDiffRow,
    ScorerRow,
    render_compare_html,
    render_run_summary_html,
)
from stay.view._site import build_site, default_out_dir, render_course, write_site

__all__ = [
    "CompareHeader", "Interval", "ItemDiffRow", "ScorerRow", "build_site", "default_out_dir",
    "render_compare_html", "render_course", "render_run_summary_html", "write_site",
]
